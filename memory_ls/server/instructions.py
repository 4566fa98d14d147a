"""Open instruction files (``AGENTS.md``, ``CLAUDE.md``, ``GEMINI.md``) and ``export-stale`` (SPEC §15).

These are the only documents the server tracks that are not memory stores,
and they get exactly one diagnostic: ``export-stale``, when the file holds a
memory-ls export block that differs from the recall body of its project (the
one ``memory-ls export`` would write, from the stores on disk). Whether the
block is stale and how it should read is :func:`memory_ls.core.bridges.export_stale_finding`'s
answer; its quick fix is the core's (:data:`memory_ls.core.fixes.QUICK_FIXES`).
This module keeps the buffers and publishes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from memory_ls.core.bridges import INSTRUCTION_FILES, export_stale_finding
from memory_ls.server import publishing
from memory_ls.server.diagnostics import SEVERITY_NUMBER
from memory_ls.server.documents import MemoryDocument, Span

if TYPE_CHECKING:
    from memory_ls.server.server import MemoryServer

Json = dict[str, Any]
CODE = "export-stale"


def is_instruction_file(path: Path) -> bool:
    """Whether the server checks ``path`` for a stale export block (by its name)."""
    return path.name in INSTRUCTION_FILES


class InstructionFiles:
    """The open instruction files and the diagnostics last sent for each."""

    def __init__(self) -> None:
        self.docs: dict[str, MemoryDocument] = {}
        self.sent: dict[str, list[Json]] = {}

    def get(self, uri: str) -> MemoryDocument | None:
        """The open instruction file at ``uri``, if there is one."""
        return self.docs.get(uri)


def items(ls: MemoryServer, doc: MemoryDocument) -> list[Json]:
    """The document's diagnostics: ``export-stale`` or nothing."""
    override = ls.projects.settings.severity.get(CODE)
    if override == "off":
        return []
    runtime = ls.projects.runtime_for_uri_path(doc.path)
    finding = export_stale_finding(doc.lines, doc.eol, runtime.plan().body)
    if finding is None:
        return []
    # As for memory documents: the finding's own default, the user's level over it.
    level = override or finding.severity
    return [ls.analysis.diagnostic(doc, finding, SEVERITY_NUMBER[level])]


def publish(ls: MemoryServer, doc: MemoryDocument, always: bool = False) -> None:
    """Push the document's diagnostics (a pull client is asked to pull instead)."""
    if ls.pull:
        publishing.request_refresh(ls)
        return
    found = items(ls, doc)
    if not always and ls.instructions.sent.get(doc.uri) == found:
        return
    ls.instructions.sent[doc.uri] = found
    publishing.push(ls, doc.uri, doc.version, found)


def refresh(ls: MemoryServer) -> None:
    """Recheck every open instruction file (a store, trust or the settings changed)."""
    for doc in list(ls.instructions.docs.values()):
        try:
            publish(ls, doc)
        except Exception as exc:
            ls.log(f"memory-ls: could not check {doc.uri}: {exc!r}", lsp.MessageType.Error)


def did_open(ls: MemoryServer, item: lsp.TextDocumentItem, path: Path) -> bool:
    """Track an instruction file; ``False`` for any other document."""
    if not is_instruction_file(path):
        return False
    doc = MemoryDocument(item.uri, path, item.text, item.version)
    ls.instructions.docs[item.uri] = doc
    publish(ls, doc, always=True)
    return True


def did_change(ls: MemoryServer, params: lsp.DidChangeTextDocumentParams) -> bool:
    """Apply an edit to a tracked instruction file; ``False`` when it is not one."""
    doc = ls.instructions.get(params.text_document.uri)
    if doc is None:
        return False
    for change in params.content_changes:
        if isinstance(change, lsp.TextDocumentContentChangePartial):
            r = change.range
            span = Span(r.start.line, r.start.character, r.end.line, r.end.character)
            doc.apply_change(span, change.text, ls.analysis.encoding)
        else:
            doc.apply_change(None, change.text, ls.analysis.encoding)
    doc.version = params.text_document.version
    publish(ls, doc, always=True)
    return True


def did_close(ls: MemoryServer, uri: str) -> bool:
    """Forget a closed instruction file and clear its diagnostics."""
    if ls.instructions.docs.pop(uri, None) is None:
        return False
    ls.instructions.sent.pop(uri, None)
    publishing.clear(ls, uri)
    return True


def pull(ls: MemoryServer, uri: str) -> Json:
    """``textDocument/diagnostic`` for an instruction file (or an empty report)."""
    doc = ls.instructions.get(uri)
    return {"kind": "full", "items": [] if doc is None else items(ls, doc)}
