"""Formatting: each note normalised and written ``- <note>``; prose and blank bullets kept."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from memory_ls.server.documents import MemoryDocument
from memory_ls.server.edits import text_edits

if TYPE_CHECKING:
    from memory_ls.core.fixes import Edit
    from memory_ls.server.server import MemoryServer


def register(ls: MemoryServer) -> None:
    """Document formatting."""
    ls.feature(lsp.TEXT_DOCUMENT_FORMATTING)(format_document)


def format_edits(doc: MemoryDocument) -> list[Edit]:
    """One edit per note line whose text or marker is not in canonical form."""
    from memory_ls.core.fixes import Edit  # (at first use: issue 11's cold start)

    out = []
    for b in doc.bullets:
        if b is None or not b.note:
            continue
        line = doc.lines[b.line]
        wanted = f"{b.indent}- {b.note}"
        if line != wanted:
            out.append(Edit(b.line, 0, b.line, len(line), wanted))
    return out


def format_document(
    ls: MemoryServer, params: lsp.DocumentFormattingParams
) -> list[lsp.TextEdit] | None:
    """Normalise every note and its bullet marker."""
    found = ls.document(params.text_document.uri)
    if found is None:
        return None
    return text_edits(found.doc, format_edits(found.doc), ls.analysis.encoding)
