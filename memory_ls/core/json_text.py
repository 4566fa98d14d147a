"""The CLI's ``--json`` text: ``json.dumps(value, indent=2, ensure_ascii=False)``, faster.

``memory-ls list --json`` on the 4,500-note store prints 276 kB of indented JSON.
The standard encoder leaves its C implementation as soon as it is asked to indent
and walks every value through Python generators, and importing :mod:`json`
compiles its regular expressions before anything is printed. :func:`dumps` builds
the same text by construction, without importing :mod:`json`: the pieces of every
container appended to one list, a list of strings (a store's notes) as one
``join`` over the C string encoder's outputs, and the whole joined once. For
``list --json`` on 4,500 notes: 162.8 -> 154.1 million instructions in all
(callgrind), of which ~5 are the import. The text is the standard encoder's, byte
for byte (``tests/unit/test_json_text.py``, under hypothesis); a value it does not
know (a non-string key, an object the standard encoder would refuse, a cycle) is
handed to :func:`json.dumps`, so even its errors are the standard ones.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing`'s: the read verbs do without importing it (~3.5 ms)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    _encode: Callable[[str], str]

try:  # the C function json.encoder uses for ensure_ascii=False
    from _json import encode_basestring as _encode
except ImportError:  # pragma: no cover - an interpreter without the accelerator
    from json.encoder import py_encode_basestring as _encode

INDENT = "  "


class _Unknown(Exception):
    """A value this encoder leaves to :func:`json.dumps`."""


def dumps(value: object) -> str:
    """``json.dumps(value, indent=2, ensure_ascii=False)``: the same text."""
    parts: list[str] = []
    try:
        _write(value, "\n", parts, False)
    except (_Unknown, RecursionError):
        import json

        return json.dumps(value, indent=2, ensure_ascii=False)
    # One join of all the pieces: the output is made once.
    return "".join(parts)


def dumps_utf8(value: object) -> bytes:
    """:func:`dumps` as UTF-8, each lone surrogate as U+FFFD: the bytes the CLI prints
    (:func:`~memory_ls.core.text.without_lone_surrogates`).

    Made as bytes from the start: a list of strings is joined from its items' UTF-8,
    so no text of the whole output is made. One emoji among 4,500 notes made that
    text a megabyte of code points (four bytes a character), then encoded again.
    """
    parts: list[str | bytes] = []
    try:
        _write(value, "\n", parts, True)
        return b"".join(p if isinstance(p, bytes) else p.encode() for p in parts)
    except (_Unknown, RecursionError, UnicodeEncodeError):  # UTF-8 refuses a lone surrogate
        from memory_ls.core.text import without_lone_surrogates

        return without_lone_surrogates(dumps(value)).encode()


def _float(value: float) -> str:
    """A float as the standard encoder writes it (``allow_nan``: ``NaN``, ``Infinity``)."""
    if value != value:
        return "NaN"
    if value == float("inf"):
        return "Infinity"
    if value == -float("inf"):
        return "-Infinity"
    return float.__repr__(value)


def _write(value: object, newline: str, out: list[Any], utf8: bool) -> None:
    """Append ``value``'s JSON to ``out``, its nested lines indented one step past ``newline``
    (``utf8``: a list of strings as the UTF-8 of its JSON).

    The tests in the standard encoder's order: a ``str`` subclass is a string,
    ``True`` is not an ``int``, a tuple is a list.
    """
    if isinstance(value, str):
        out.append(_encode(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_float(value))
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = newline + INDENT
        separator = "," + inner
        try:  # a list of strings (a store's notes): each item's text in C
            items = list(map(_encode, value))
        except TypeError:  # something other than a string among them
            items = None
        out.append("[" + inner)
        if items is None:
            for index, item in enumerate(value):
                if index:
                    out.append(separator)
                _write(item, inner, out, utf8)
        elif utf8:
            out.append(separator.encode().join(map(str.encode, items)))
        else:
            out.append(separator.join(items))
        out.append(newline + "]")
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = newline + INDENT
        separator = "," + inner
        out.append("{")
        for index, (key, item) in enumerate(value.items()):
            if not isinstance(key, str):  # the standard encoder's key rules: left to it
                raise _Unknown
            out.append((separator if index else inner) + _encode(key) + ": ")
            _write(item, inner, out, utf8)
        out.append(newline + "}")
    else:
        raise _Unknown
