"""The CLI's ``--json`` text: ``json.dumps(value, indent=2, ensure_ascii=False)``, faster.

``memory-ls list --json`` on the 4,500-note store prints 276 kB of indented JSON.
The standard encoder leaves its C implementation as soon as it is asked to indent
and walks every value through Python generators (~2.3 ms there), and importing
:mod:`json` compiles its regular expressions (~1.5-2 ms) before anything is
printed. :func:`dumps` builds the same text by construction: each container is
its items joined by the indented separator, and a list of strings (a store's
notes) is one ``join`` over the C string encoder's outputs (~1.2 ms, no
:mod:`json` import). The text is the standard encoder's, byte for byte
(``tests/unit/test_json_text.py``, under hypothesis); a value it does not know
(a non-string key, an object the standard encoder would refuse, a cycle) is
handed to :func:`json.dumps`, so even its errors are the standard ones.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing`'s: the read verbs do without importing it (~3.5 ms)
if TYPE_CHECKING:
    from collections.abc import Callable

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
    try:
        return _text(value, "\n")
    except (_Unknown, RecursionError):
        import json

        return json.dumps(value, indent=2, ensure_ascii=False)


def _float(value: float) -> str:
    """A float as the standard encoder writes it (``allow_nan``: ``NaN``, ``Infinity``)."""
    if value != value:
        return "NaN"
    if value == float("inf"):
        return "Infinity"
    if value == -float("inf"):
        return "-Infinity"
    return float.__repr__(value)


def _text(value: object, newline: str) -> str:
    """``value``'s JSON, its nested lines indented one step past ``newline``.

    The tests in the standard encoder's order: a ``str`` subclass is a string,
    ``True`` is not an ``int``, a tuple is a list.
    """
    if isinstance(value, str):
        return _encode(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    inner = newline + INDENT
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        try:  # a list of strings (a store's notes), all in C
            items = list(map(_encode, value))
        except TypeError:  # something other than a string among them
            items = [_text(item, inner) for item in value]
        return "[" + inner + ("," + inner).join(items) + newline + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        parts = []
        for key, item in value.items():
            if not isinstance(key, str):  # the standard encoder's key rules: left to it
                raise _Unknown
            parts.append(_encode(key) + ": " + _text(item, inner))
        return "{" + inner + ("," + inner).join(parts) + newline + "}"
    raise _Unknown
