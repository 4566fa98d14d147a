"""Hover on a note: its scope, its cost, whether recall takes it, and its duplicates."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from memory_ls.core.recall import note_cost, note_recall
from memory_ls.core.text import escape_unseen
from memory_ls.server.edits import text_range

if TYPE_CHECKING:
    from memory_ls.server.server import MemoryServer


def register(ls: MemoryServer) -> None:
    """Hover on notes."""
    ls.feature(lsp.TEXT_DOCUMENT_HOVER)(hover)


def hover(ls: MemoryServer, params: lsp.HoverParams) -> lsp.Hover | None:
    """What the agent does with the note under the cursor."""
    found = ls.document(params.text_document.uri)
    if found is None:
        return None
    doc, state = found
    b = doc.bullet_at(params.position.line)
    if b is None or not b.note:
        return None
    scope = state.info.scope
    if scope is None:
        cost = note_cost(b.note)
        parts = [f"**not a memory** note · {cost} bytes in the recall body"]
    else:
        trust = state.info.runtime.trust()
        plan, _ = ls.projects.plan(state.info.runtime)
        index = sum(1 for x in doc.bullets[: b.line] if x is not None and x.note)
        verdict = note_recall(plan, scope, index, b.note, trusted=trust.trusted)
        parts = [f"**{scope} memory** note · {verdict.bytes} bytes in the recall body"]
        if verdict.state == "recall-off":
            parts.append("Recall is off (`inject: false`): not sent to the model.")
        elif verdict.state == "untrusted":
            parts.append(f"Not recalled: the project is {trust.summary}.")
        elif verdict.state == "in":
            parts.append(f"In recall ({plan.used}/{plan.max_bytes} bytes used).")
        elif verdict.state == "budget":
            parts.append(
                f"**Left out of recall**: the body uses {plan.used} of {plan.max_bytes} bytes "
                "(maxInjectBytes)."
            )
        other = ls.projects.other_keys(state.info.runtime, scope)
        if b.key in other:
            parts.append(f"Also in the other scope: {escape_unseen(other[b.key])}")
    same = [i + 1 for i in doc.key_lines.get(b.key, []) if i != b.line]
    if same:
        parts.append("Same note (near-duplicate) on line " + ", ".join(map(str, same)) + ".")
    enc = ls.analysis.encoding
    return lsp.Hover(
        contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value="\n\n".join(parts)),
        range=text_range(doc, b.line, b.start, b.line, b.end, enc),
    )
