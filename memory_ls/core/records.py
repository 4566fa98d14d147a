"""Record classes for the read path, without importing :mod:`dataclasses`.

``memory-ls inject`` runs before every agent run. Importing :mod:`dataclasses`
(with :mod:`inspect`, :mod:`ast`, :mod:`dis` and :mod:`tokenize`) took ~9 ms of
its ~100 ms, and building each ``@dataclass`` ~0.5 ms more (its methods are
written as source and compiled by ``exec``): ~20 ms for the ~20 classes that
``inject`` and ``list`` load. :func:`record` makes the same kind of class from
the same declaration (annotated fields, defaults, :func:`field` for a default
factory or a field left out of comparisons) with generic methods that are
never compiled: a slotted class with ``__init__``, ``__repr__``, ``__eq__`` and,
when frozen, ``__hash__`` and no assignment. Type checkers read it as a
dataclass (:pep:`681`). Construction takes ~1-2 µs more than a dataclass's, so
a class built thousands of times per edit (``PlannedNote``) writes its own
``__init__``, which :func:`record` keeps.
"""

from __future__ import annotations

import operator

TYPE_CHECKING = False
if TYPE_CHECKING:  # `typing` itself is ~4 ms the read verbs do without
    from collections.abc import Callable
    from typing import Any, TypeVar
    from typing import overload as overload

    from typing_extensions import dataclass_transform

    T = TypeVar("T")
else:

    def dataclass_transform(**_: object) -> object:
        return lambda f: f

    def overload(func: object) -> object:
        """``typing.overload`` for type checkers; at run time the last definition stands."""
        return func


_MISSING = object()


class _Field:
    """What :func:`field` says of one field."""

    __slots__ = ("compare", "default", "factory")

    def __init__(self, default: object, factory: object, compare: bool) -> None:
        self.default = default
        self.factory = factory
        self.compare = compare


def field(
    *,
    default: Any = _MISSING,
    default_factory: Callable[[], Any] | None = None,
    compare: bool = True,
) -> Any:
    """A field's default, or the factory that makes it, and whether ``==`` compares it."""
    return _Field(default, default_factory, compare)


class FrozenRecordError(AttributeError):
    """A field of a frozen record was assigned (as :class:`dataclasses.FrozenInstanceError`)."""


def _frozen_setattr(self: object, name: str, value: object) -> None:
    raise FrozenRecordError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: object, name: str) -> None:
    raise FrozenRecordError(f"cannot delete field {name!r}")


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: type[T] | None = None, /, *, frozen: bool = True) -> Any:
    """Make ``cls`` a slotted record of its annotated fields (see the module's docstring).

    ``@record`` is frozen (no assignment, hashable); ``@record(frozen=False)`` is
    not (and, like a dataclass that compares, not hashable). A class that
    defines ``__init__`` keeps it (it must set every field).
    """

    def wrap(cls: type[T]) -> type[T]:
        return _build(cls, frozen)

    return wrap if cls is None else wrap(cls)


def _build(cls: type[T], frozen: bool) -> type[T]:
    # Not inspect.get_annotations: importing inspect is what this module avoids.
    names = tuple(cls.__dict__.get("__annotations__", {}))  # noqa: RUF063
    defaults: dict[str, object] = {}
    factories: dict[str, Callable[[], object]] = {}
    compared = []
    namespace = dict(cls.__dict__)
    for name in names:
        value = namespace.pop(name, _MISSING)
        compare = True
        if isinstance(value, _Field):
            compare = value.compare
            if value.factory is not None:
                factories[name] = value.factory  # type: ignore[assignment]
            elif value.default is not _MISSING:
                defaults[name] = value.default
        elif value is not _MISSING:
            defaults[name] = value
        if compare:
            compared.append(name)
    namespace.pop("__dict__", None)
    namespace.pop("__weakref__", None)
    namespace["__slots__"] = names
    namespace["__match_args__"] = names
    namespace["_fields"] = names
    compare_names = tuple(compared)
    setter = object.__setattr__

    def __init__(self: Any, *args: object, **kwargs: object) -> None:
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__}() takes {len(names)} arguments")
        for name, value in zip(names, args, strict=False):
            setter(self, name, value)
        for name in names[len(args) :]:
            if name in kwargs:
                setter(self, name, kwargs.pop(name))
            elif name in defaults:
                setter(self, name, defaults[name])
            elif name in factories:
                setter(self, name, factories[name]())
            else:
                raise TypeError(f"{type(self).__name__}() missing argument {name!r}")
        if kwargs:
            raise TypeError(f"{type(self).__name__}() got unexpected arguments {sorted(kwargs)}")

    def __repr__(self: Any) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__qualname__}({shown})"

    # The compared fields taken in C, as one tuple from two on (as dataclasses compare):
    # records are compared on every keystroke (the stores' stamps), and a generator of
    # getattr pairs was ~5x slower.
    key: Callable[[Any], object] = (
        operator.attrgetter(*compare_names) if compare_names else _no_fields
    )

    def __eq__(self: Any, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        mine, theirs = key(self), key(other)
        return mine is theirs or bool(mine == theirs)  # (a tuple's rule for one field too)

    def __getstate__(self: Any) -> list[object]:
        return [getattr(self, name) for name in names]

    def __setstate__(self: Any, state: list[object]) -> None:
        # copy and pickle set the fields back through here (a frozen record refuses setattr).
        for name, value in zip(names, state, strict=True):
            setter(self, name, value)

    namespace.setdefault("__getstate__", __getstate__)
    namespace.setdefault("__setstate__", __setstate__)
    namespace.setdefault("__init__", __init__)
    namespace.setdefault("__repr__", __repr__)
    namespace.setdefault("__eq__", __eq__)
    if frozen:

        def __hash__(self: Any) -> int:
            return hash(key(self))

        namespace.setdefault("__hash__", __hash__)
        namespace["__setattr__"] = _frozen_setattr
        namespace["__delattr__"] = _frozen_delattr
    else:
        namespace.setdefault("__hash__", None)
    meta: Any = type(cls)
    made: type[T] = meta(cls.__name__, cls.__bases__, namespace)
    return made


def _no_fields(record: object) -> tuple[()]:
    """What a record with no compared field compares by."""
    return ()


def replace(obj: T, /, **changes: object) -> T:
    """A copy of the record ``obj`` with ``changes`` (as :func:`dataclasses.replace`)."""
    values = {name: getattr(obj, name) for name in obj._fields}  # type: ignore[attr-defined]
    values.update(changes)
    return type(obj)(**values)


def asdict(obj: object) -> dict[str, object]:
    """The fields of the record ``obj`` by name (shallow, unlike :func:`dataclasses.asdict`)."""
    return {name: getattr(obj, name) for name in obj._fields}  # type: ignore[attr-defined]
