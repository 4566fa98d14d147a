"""``core/records.record`` makes the classes ``@dataclass`` made, without importing it.

Each record here is declared twice, as a record and as the dataclass the read path
used before, and the two must behave alike: construction, defaults, ``==``, hash,
``repr``, frozenness, ``replace``, ``copy`` and ``pickle``.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from memory_ls.core.records import asdict, field, record, replace


@record
class Point:
    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)
    note: str = field(default="", compare=False)


@dataclasses.dataclass(frozen=True, slots=True)
class PointDC:
    x: int
    y: int = 0
    tags: list[str] = dataclasses.field(default_factory=list)
    note: str = dataclasses.field(default="", compare=False)


@record(frozen=False)
class Counter:
    n: int = 0


def test_construction_and_defaults_as_a_dataclass() -> None:
    for cls in (Point, PointDC):
        a = cls(1)
        assert (a.x, a.y, a.tags, a.note) == (1, 0, [], "")
        assert cls(1).tags is not cls(1).tags  # a fresh list each time
        assert cls(1, 2, ["t"], "n") == cls(x=1, y=2, tags=["t"], note="other")  # note not compared
        assert cls(1) != cls(2)
    assert repr(Point(1, 2)) == repr(PointDC(1, 2)).replace("PointDC", "Point")
    assert asdict(Point(1, 2, ["a"])) == dataclasses.asdict(PointDC(1, 2, ["a"]))


def test_wrong_arguments_are_refused() -> None:
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Point(1, 2, [], "", 5)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Point(1, z=3)  # type: ignore[call-arg]


def test_frozen_hashable_and_slotted() -> None:
    p = Point(1, 2, note="a")
    with pytest.raises(AttributeError):
        p.x = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del p.x  # type: ignore[misc]
    assert not hasattr(p, "__dict__")
    q = Point(3, 4, ())  # type: ignore[arg-type]
    assert hash(q) == hash(Point(3, 4, (), note="b"))  # type: ignore[arg-type]
    c = Counter()
    c.n += 1
    assert c == Counter(1)
    with pytest.raises(TypeError):
        hash(c)


def test_replace_copy_and_pickle() -> None:
    p = Point(1, 2, ["t"], "n")
    r = replace(p, y=5)
    assert (r.x, r.y, r.tags, r.note) == (1, 5, ["t"], "n")
    for made in (copy.copy(p), copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert made == p and made.note == "n"


@record(frozen=True)
class One:
    value: float
    why: str = field(default="", compare=False)


@dataclasses.dataclass(frozen=True, slots=True)
class OneDC:
    value: float
    why: str = dataclasses.field(default="", compare=False)


@record(frozen=True)
class Nothing:
    why: str = field(default="", compare=False)


@dataclasses.dataclass(frozen=True, slots=True)
class NothingDC:
    why: str = dataclasses.field(default="", compare=False)


def test_equality_and_hash_of_one_or_no_compared_field_as_a_dataclass() -> None:
    nan = float("nan")
    for one, nothing, point in ((One, Nothing, Point), (OneDC, NothingDC, PointDC)):
        assert one(1.0, "a") == one(1.0, "b") and hash(one(1.0, "a")) == hash(one(1.0, "b"))
        assert one(1.0) != one(2.0)
        assert one(nan) == one(nan) and one(float("nan")) != one(float("nan"))
        assert nothing("a") == nothing("b") and hash(nothing("a")) == hash(nothing("b"))
        # Two or more fields compare as tuples do: the same object is equal to itself.
        assert point(nan, 0) == point(nan, 0)  # type: ignore[arg-type]
        assert point(float("nan"), 0) != point(float("nan"), 0)  # type: ignore[arg-type]
        assert (one(1.0) == 1.0) is False and (point(1) == (1, 0, [])) is False
