"""Core edits (``str`` columns) as LSP text edits in the negotiated encoding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from memory_ls.core.text import split_text
from memory_ls.server.documents import MemoryDocument
from memory_ls.server.positions import to_client

if TYPE_CHECKING:
    from memory_ls.core.fixes import Edit


def range_json(r: lsp.Range) -> dict[str, dict[str, int]]:
    """``r`` as LSP JSON (what lsprotocol's converter would unstructure it to).

    Written out rather than taken from a converter of our own: building one
    (``lsprotocol.converters.get_converter``) was ~20-40 ms of the server's start-up.
    """
    return {
        "start": {"line": r.start.line, "character": r.start.character},
        "end": {"line": r.end.line, "character": r.end.character},
    }


def range_from_json(value: object) -> lsp.Range | None:
    """The LSP ``Range`` that ``value`` (JSON from a client) spells, or ``None`` when it
    spells none: each end an object whose ``line`` and ``character`` are integers in
    LSP's ``uinteger`` range (``lsp.Position`` checks the range; no string, float or
    boolean is taken for a number)."""
    if not isinstance(value, dict):
        return None
    ends: list[lsp.Position] = []
    for name in ("start", "end"):
        end = value.get(name)
        if not isinstance(end, dict):
            return None
        line, character = end.get("line"), end.get("character")
        if type(line) is not int or type(character) is not int:
            return None
        try:
            ends.append(lsp.Position(line=line, character=character))
        except ValueError:  # out of the uinteger range
            return None
    return lsp.Range(start=ends[0], end=ends[1])


def position(doc: MemoryDocument, line: int, col: int, encoding: str) -> lsp.Position:
    """A ``str``-index position on ``doc`` in client units."""
    text = doc.lines[line] if 0 <= line < len(doc.lines) else ""
    return lsp.Position(line=line, character=to_client(text, col, encoding))


def text_range(
    doc: MemoryDocument, line: int, start: int, end_line: int, end: int, encoding: str
) -> lsp.Range:
    """A ``str``-index range on ``doc`` in client units."""
    return lsp.Range(
        start=position(doc, line, start, encoding), end=position(doc, end_line, end, encoding)
    )


def text_edits(doc: MemoryDocument, edits: Sequence[Edit], encoding: str) -> list[lsp.TextEdit]:
    """Core edits as LSP text edits."""
    return [
        lsp.TextEdit(
            range=text_range(doc, e.line, e.start, e.end_line, e.end, encoding),
            new_text=e.new_text,
        )
        for e in edits
    ]


def replacing_edit(
    old_lines: Sequence[str], new: str, eol: str, encoding: str
) -> lsp.TextEdit | None:
    """One text edit turning the text of ``old_lines`` into ``new`` (``None``: no change).

    ``old_lines`` are a text's lines without their endings, as :func:`split_text`
    cuts them (the last is ``""`` when the text ends with a line ending); the
    edit writes line endings as ``eol`` and replaces only the lines between the
    ones both texts begin and end with. A BOM in front of ``new`` is ignored:
    positions never count it.
    """
    old = list(old_lines) or [""]
    lines = split_text(new).lines
    limit = min(len(old), len(lines))
    p = 0
    while p < limit and old[p] == lines[p]:
        p += 1
    if p == len(old) == len(lines):
        return None
    s = 0
    while s < limit - p and old[-1 - s] == lines[-1 - s]:
        s += 1
    if s > 0:
        # Both end with the same lines: replace the whole lines in between.
        start = lsp.Position(line=p, character=0)
        end = lsp.Position(line=len(old) - s, character=0)
        text = "".join(line + eol for line in lines[p : len(lines) - s])
    elif p == 0:
        start = lsp.Position(line=0, character=0)
        end = _end_of(old, len(old) - 1, encoding)
        text = eol.join(lines)
    else:
        # The last lines differ: replace from the end of the last common line, so
        # that a shorter text (a prefix of the old one) drops the line break too.
        start = _end_of(old, p - 1, encoding)
        end = _end_of(old, len(old) - 1, encoding)
        text = "".join(eol + line for line in lines[p:])
    return lsp.TextEdit(range=lsp.Range(start=start, end=end), new_text=text)


def _end_of(lines: Sequence[str], line: int, encoding: str) -> lsp.Position:
    return lsp.Position(line=line, character=to_client(lines[line], len(lines[line]), encoding))
