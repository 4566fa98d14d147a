"""Core edits (``str`` columns) as LSP text edits in the negotiated encoding."""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types as lsp

from memory_ls.core.fixes import Edit
from memory_ls.server.documents import MemoryDocument
from memory_ls.server.positions import to_client


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
