"""The code lens on a store's first line: notes, recall budget, notes left out; runs the doctor."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from memory_ls.core.recall import scope_recall
from memory_ls.core.scopes import other_scope

if TYPE_CHECKING:
    from memory_ls.core.scopes import Scope
    from memory_ls.server.server import MemoryServer
    from memory_ls.store.runtime import MemoryRuntime


REFUSED_TITLE = "project memory refused: never read, recalled or written"
"""The lens of a project store whose ``.pi`` leads out of the project (SPEC §1)."""
SHARED_PREFIX = "refused as project memory · as global memory: "
"""Before the counts of the global store that is also the project's store file."""


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
    runtime = state.info.runtime
    if scope == "project" and runtime.store_refusal("project") is not None:
        # Its `.pi` leads out of the project: not one of its notes is read or recalled
        # (the `outside-project` error says why; the lens runs the doctor).
        return REFUSED_TITLE
    # The global store that is also the project's store file (the agent dir is its
    # `.pi`): refused as project memory, its notes recalled as global memory.
    shared = SHARED_PREFIX if runtime.shared_store_refusal(scope) is not None else ""
    count = len(doc.notes())
    plan, _ = ls.projects.plan(runtime)
    trusted = runtime.trust().trusted
    verdict = scope_recall(plan, scope, trusted=trusted)
    unread = _unread(runtime, scope)
    if verdict.state == "untrusted":
        return f"{shared}{count} notes · not recalled: {runtime.trust().summary}{unread}"
    if verdict.state == "recall-off":
        return f"{shared}{count} notes · recall off{unread}"
    budget = f"{plan.used}/{plan.max_bytes} bytes in recall"
    return f"{shared}{count} notes · {budget} · {verdict.left_out} left out{unread}"


def _unread(runtime: MemoryRuntime, scope: Scope) -> str:
    """`` · global memory cannot be read`` when the other store cannot be (an agent dir that
    loops or links to nothing, a store over the cap…): its notes are missing from the
    recall for a reason the lens's doctor names. Nothing for a refused project store
    (its own file says so) or one simply not there."""
    other = other_scope(scope)
    if runtime.view(other).readable or runtime.store_refusal(other) is not None:
        return ""
    return f" · {other} memory cannot be read"


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
