"""The code lens on a store's first line: notes, recall budget, notes left out; runs the doctor."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from memory_ls.core.recall import scope_recall

if TYPE_CHECKING:
    from memory_ls.server.server import MemoryServer


def register(ls: MemoryServer) -> None:
    """The budget lens."""
    ls.feature(lsp.TEXT_DOCUMENT_CODE_LENS, lsp.CodeLensOptions(resolve_provider=False))(code_lens)


def lens_title(ls: MemoryServer, uri: str) -> str | None:
    """``N notes · used/cap bytes in recall · M left out`` for an open store."""
    found = ls.document(uri)
    if found is None:
        return None
    doc, state = found
    scope = state.info.scope
    if scope is None:
        return None
    count = len(doc.notes())
    plan, _ = ls.projects.plan(state.info.runtime)
    trusted = state.info.runtime.trust().trusted
    verdict = scope_recall(plan, scope, trusted=trusted)
    if verdict.state == "untrusted":
        return f"{count} notes · not recalled: {state.info.runtime.trust().summary}"
    if verdict.state == "recall-off":
        return f"{count} notes · recall off"
    budget = f"{plan.used}/{plan.max_bytes} bytes in recall"
    return f"{count} notes · {budget} · {verdict.left_out} left out"


def code_lens(ls: MemoryServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens] | None:
    """One lens on line 0 that runs ``memory.doctor``."""
    title = lens_title(ls, params.text_document.uri)
    found = ls.document(params.text_document.uri)
    if title is None or found is None:
        return None
    argument: dict[str, Any] = {}
    if found.state.info.scope == "project":
        argument["uri"] = params.text_document.uri
    from memory_ls.server.review import lenses  # the review inbox's (SPEC §12)

    scope = found.state.info.scope
    assert scope is not None  # lens_title gave a title
    budget = lsp.CodeLens(
        range=lsp.Range(start=lsp.Position(0, 0), end=lsp.Position(0, 0)),
        command=lsp.Command(title=title, command="memory.doctor", arguments=[argument]),
    )
    return [budget, *lenses(found.doc, found.state.info.runtime, scope, argument)]
