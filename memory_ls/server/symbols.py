"""Document symbols (one per note) and workspace symbols (notes of both stores)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from memory_ls.core.models import SCOPES
from memory_ls.core.notes import Bullet
from memory_ls.core.text import escape_unseen
from memory_ls.server.documents import MemoryDocument
from memory_ls.server.edits import text_range
from memory_ls.server.uris import uri_of_path

if TYPE_CHECKING:
    from memory_ls.server.server import MemoryServer

MAX_WORKSPACE_SYMBOLS = 500


def register(ls: MemoryServer) -> None:
    """Outline and note search."""
    ls.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)(document_symbol)
    ls.feature(lsp.WORKSPACE_SYMBOL)(workspace_symbol)


def document_symbol(
    ls: MemoryServer, params: lsp.DocumentSymbolParams
) -> list[lsp.DocumentSymbol] | list[lsp.SymbolInformation] | None:
    """One symbol per note, for the outline and a picker."""
    found = ls.document(params.text_document.uri)
    if found is None:
        return None
    doc, state = found
    scope = state.info.scope or "memory"
    enc = ls.analysis.encoding
    notes = [b for b in doc.bullets if b is not None and b.note]
    if ls.capability("text_document.document_symbol.hierarchical_document_symbol_support"):
        return [
            lsp.DocumentSymbol(
                name=escape_unseen(b.note),  # a person reads it: nothing hidden
                detail=scope,
                kind=lsp.SymbolKind.String,
                range=text_range(doc, b.line, 0, b.line, len(doc.lines[b.line]), enc),
                selection_range=text_range(doc, b.line, b.start, b.line, b.end, enc),
            )
            for b in notes
        ]
    return [_information(doc, b, scope, enc) for b in notes]


def _information(doc: MemoryDocument, b: Bullet, scope: str, enc: str) -> lsp.SymbolInformation:
    return lsp.SymbolInformation(
        name=escape_unseen(b.note),
        kind=lsp.SymbolKind.String,
        location=lsp.Location(
            uri=doc.uri, range=text_range(doc, b.line, b.start, b.line, b.end, enc)
        ),
        container_name=f"{scope} memory",
    )


def _matches(note: str, words: list[str]) -> bool:
    low = note.lower()
    return all(w in low for w in words)


def workspace_symbol(
    ls: MemoryServer, params: lsp.WorkspaceSymbolParams
) -> list[lsp.SymbolInformation]:
    """Notes of both stores of every project whose text holds every word of the query.

    An untrusted (or refused) project's notes are left out even when its store is
    open: a workspace search is not the file the person has open, and its answer
    may reach a model (SPEC §4). The open file's own outline stays.
    """
    words = params.query.lower().split()
    out: list[lsp.SymbolInformation] = []
    seen: set[str] = set()
    runtimes = [ls.projects.runtime_for_path(f) for f in ls.projects.folders] or [
        ls.projects.default_runtime()
    ]
    enc = ls.analysis.encoding
    for runtime in runtimes:
        readable = ls.projects.project_readable(runtime)
        for scope in SCOPES:
            path = runtime.paths[scope]
            if str(path) in seen:
                continue
            seen.add(str(path))
            if scope == "project" and not readable:
                continue
            doc = ls.projects.open_store(runtime, scope)
            if doc is None:
                view = runtime.view(scope)
                if not view.readable:
                    continue
                doc = MemoryDocument(uri_of_path(path), path, view.file.content, None)
            for b in doc.bullets:
                if b is not None and b.note and _matches(b.note, words):
                    out.append(_information(doc, b, scope, enc))
                    if len(out) >= MAX_WORKSPACE_SYMBOLS:
                        return out
    return out
