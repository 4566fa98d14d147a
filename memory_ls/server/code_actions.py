"""Code actions: quick fixes from diagnostics' ``data``, note actions, ``source.fixAll.memory``.

The edits come from :mod:`memory_ls.core.fixes`; this module only decides which
actions to offer, honours ``context.only``, and wraps the edits for the client.
Moving a note runs the ``memory.move`` command so its two writes stay ordered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from memory_ls.core import fixes
from memory_ls.core.fixes import Edit
from memory_ls.core.models import other_scope
from memory_ls.server.documents import MemoryDocument
from memory_ls.server.edits import text_edits
from memory_ls.server.positions import from_client

if TYPE_CHECKING:
    from memory_ls.server.server import MemoryServer

FIX_ALL = "source.fixAll.memory"
REWRITE = lsp.CodeActionKind.RefactorRewrite.value
MOVE = "refactor.move"
QUICKFIX = lsp.CodeActionKind.QuickFix.value
KINDS = [QUICKFIX, REWRITE, MOVE, FIX_ALL]


def register(ls: MemoryServer) -> None:
    """Offer code actions of every kind memory-ls produces."""
    ls.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=list(KINDS)),
    )(code_action)


def _wanted(kind: str, only: list[str] | None) -> bool:
    if not only:
        return True
    return any(kind == o or kind.startswith(o + ".") for o in only)


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quick_fixes(
    code: str, data: Mapping[str, Any], lines: list[str]
) -> list[tuple[str, list[Edit], bool]]:
    """``(title, edits, preferred)`` for one diagnostic, from its ``data`` alone."""
    line = data.get("line")
    note = data.get("note")
    if not isinstance(line, int) or not isinstance(note, str):
        return []
    out: list[tuple[str, list[Edit], bool]] = []
    if code in ("duplicate", "similar"):
        first, first_line = data.get("first"), data.get("firstLine")
        if not isinstance(first, str) or not isinstance(first_line, int):
            return []
        if code == "duplicate" and data.get("exact"):
            out.append(
                ("Remove the duplicate note", fixes.remove_duplicate(lines, line, note), True)
            )
            return out
        out.append((f"Keep “{_short(first)}”", fixes.remove_duplicate(lines, line, note), False))
        out.append(
            (
                f"Keep “{_short(note)}”",
                fixes.keep_later_wording(lines, line, note, first_line, first),
                False,
            )
        )
        out.append(
            (
                f"Merge into “{_short(fixes.merged_text(first, note))}”",
                fixes.merge_pair(lines, line, note, first_line, first),
                False,
            )
        )
    elif code == "cross-scope-duplicate":
        other = data.get("otherScope", "the other scope")
        out.append(
            (
                f"Forget here (it stays in {other} memory)",
                fixes.remove_duplicate(lines, line, note),
                False,
            )
        )
    elif code == "blank-note":
        out.append(("Remove the blank bullet", fixes.remove_blank(lines, line), True))
    elif code == "control-characters":
        out.append(("Normalise the note", fixes.normalise_line(lines, line), True))
    elif code == "hidden-unicode":
        out.append(("Remove the hidden characters", fixes.remove_hidden_line(lines, line), True))
    return [(title, edits, preferred) for title, edits, preferred in out if edits]


def code_action(ls: MemoryServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction] | None:
    """Every action that applies to the range, filtered by ``context.only``."""
    found = ls.document(params.text_document.uri)
    if found is None:
        return None
    doc = found.doc
    only = [str(k) for k in params.context.only] if params.context.only else None
    enc = ls.analysis.encoding
    lines = doc.lines
    actions: list[lsp.CodeAction] = []

    def edit_action(title: str, kind: str, edits: list[Edit], **extra: Any) -> lsp.CodeAction:
        return lsp.CodeAction(
            title=title,
            kind=kind,
            edit=ls.workspace_edit(doc, text_edits(doc, edits, enc)),
            **extra,
        )

    if _wanted(QUICKFIX, only):
        for diag in params.context.diagnostics:
            if diag.source not in ("memory", None) or diag.code is None:
                continue
            code = str(diag.code)
            data = diag.data if isinstance(diag.data, Mapping) else _data_for(ls, doc, diag)
            if data is None:
                continue
            for title, edits, preferred in quick_fixes(code, data, lines):
                actions.append(
                    edit_action(title, QUICKFIX, edits, diagnostics=[diag], is_preferred=preferred)
                )
    actions.extend(_note_actions(ls, doc, params.range, only))
    if _wanted(FIX_ALL, only):
        edits = fixes.fix_all(lines)
        if edits:
            actions.append(edit_action("Fix all safe memory problems", FIX_ALL, edits))
    return actions


def _data_for(ls: MemoryServer, doc: MemoryDocument, diag: lsp.Diagnostic) -> Any:
    """The ``data`` of a diagnostic the client sent back without it (clients that do
    not declare ``dataSupport`` may drop it): the current one with the same code and
    start line."""
    if ls.document(doc.uri) is None:
        return None
    line = diag.range.start.line
    for item in ls.analysis.items(doc):
        if item["code"] == diag.code and item["range"]["start"]["line"] == line:
            return item.get("data")
    return None


def _note_actions(
    ls: MemoryServer, doc: MemoryDocument, selection: lsp.Range, only: list[str] | None
) -> list[lsp.CodeAction]:
    enc = ls.analysis.encoding
    first = max(0, selection.start.line)
    last = min(len(doc.lines) - 1, selection.end.line)
    if last > first and from_client(doc.lines[last], selection.end.character, enc) == 0:
        last -= 1  # a selection of whole lines ends at the start of the next one
    notes = [b for i in range(first, last + 1) if (b := doc.bullet_at(i)) is not None and b.note]
    if not notes:
        return []
    out: list[lsp.CodeAction] = []
    found = ls.document(doc.uri)
    scope = found.state.info.scope if found else None
    if len(notes) == 1:
        b = notes[0]
        if _wanted(REWRITE, only):
            edit = fixes.remove_line(doc.lines, b.line)
            if edit is not None:
                out.append(
                    lsp.CodeAction(
                        title=f"Forget “{_short(b.note)}”",
                        kind=REWRITE,
                        edit=ls.workspace_edit(doc, text_edits(doc, [edit], enc)),
                    )
                )
        if scope is not None and _wanted(MOVE, only):
            target = other_scope(scope)
            argument: dict[str, Any] = {"text": b.note, "scope": scope, "uri": doc.uri}
            out.append(
                lsp.CodeAction(
                    title=f"Move to {target} memory",
                    kind=MOVE,
                    command=lsp.Command(
                        title=f"Move to {target} memory",
                        command="memory.move",
                        arguments=[argument],
                    ),
                )
            )
    elif _wanted(REWRITE, only):
        edits = fixes.merge_lines(doc.lines, [b.line for b in notes])
        if edits:
            out.append(
                lsp.CodeAction(
                    title=f"Merge the {len(notes)} selected notes",
                    kind=REWRITE,
                    edit=ls.workspace_edit(doc, text_edits(doc, edits, enc)),
                )
            )
    return out
