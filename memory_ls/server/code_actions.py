"""Code actions: quick fixes from diagnostics' ``data``, note actions, ``source.fixAll.memory``.

The fixes and their edits come from :mod:`memory_ls.core.fixes`; this module
only decides which actions a range gets, honours ``context.only``, and converts
the core's fixes to LSP code actions. Moving a note runs the ``memory.move``
command so its two writes stay ordered.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import attrs
from lsprotocol import types as lsp

from memory_ls.core.config import without_infinities
from memory_ls.core.models import RevealResult, other_scope
from memory_ls.core.text import MAX_STORE_BYTES, utf8_length
from memory_ls.server import instructions
from memory_ls.server.documents import MemoryDocument
from memory_ls.server.edits import range_from_json, range_json, text_edits, text_range
from memory_ls.server.positions import from_client, to_client
from memory_ls.server.protocol import CLIENT_TIMEOUT

if TYPE_CHECKING:
    from memory_ls.core.fixes import Fix
    from memory_ls.server.server import MemoryServer

FIX_ALL = "source.fixAll.memory"
REWRITE = lsp.CodeActionKind.RefactorRewrite.value
MOVE = "refactor.move"
QUICKFIX = lsp.CodeActionKind.QuickFix.value
KINDS = [QUICKFIX, REWRITE, MOVE, FIX_ALL]
REVEAL = "memory.reveal"
"""The command a fix that selects (rather than edits) runs: ``window/showDocument``."""


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


def code_action(ls: MemoryServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction] | None:
    """Every action that applies to the range, filtered by ``context.only``."""
    from memory_ls.core import fixes  # (at first use: issue 11's cold start)

    found = ls.document(params.text_document.uri)
    doc = found.doc if found is not None else ls.instructions.get(params.text_document.uri)
    if doc is None:
        return None
    only = [str(k) for k in params.context.only] if params.context.only else None
    actions: list[lsp.CodeAction] = []
    if _wanted(QUICKFIX, only):
        for diag in params.context.diagnostics:
            if diag.source not in ("memory", None) or diag.code is None:
                continue
            code = str(diag.code)
            # The action names this diagnostic: it must go back as JSON.
            if (data := without_infinities(diag.data)) is not diag.data:
                diag = attrs.evolve(diag, data=data)
            quick = fixes.quick_fixes(doc.lines, code, diag.data)
            if quick is None:  # no data the fix can read: use the diagnostic as it is now
                quick = fixes.quick_fixes(doc.lines, code, _data_for(ls, doc, diag)) or []
            # A fix that selects needs window/showDocument: without it, it would do nothing.
            shows = bool(ls.capability("window.show_document.support"))
            for fix in quick:
                if fix.select is not None and not shows:
                    continue
                if found is not None:
                    fix = _within_cap(doc, fix)
                if (action := _offered(ls, doc, fix, QUICKFIX, diag)) is not None:
                    actions.append(action)
    if found is None:
        return actions  # an instruction file: its export-stale fix, nothing else
    actions.extend(_note_actions(ls, doc, params.range, only))
    if _wanted(FIX_ALL, only) and (fix_all := fixes.fix_all_fix(doc.lines)) is not None:
        actions.append(_edit_action(ls, doc, fix_all, FIX_ALL))
    return actions


def _offered(
    ls: MemoryServer,
    doc: MemoryDocument,
    fix: Fix,
    kind: str,
    diagnostic: lsp.Diagnostic | None = None,
) -> lsp.CodeAction | None:
    """The action for ``fix``; a refused fix is shown greyed out with why (a merge that
    would make too long a note) where the client shows disabled actions, else left out."""
    if fix.refused is None:
        return _edit_action(ls, doc, fix, kind, diagnostic)
    if not ls.capability("text_document.code_action.disabled_support"):
        return None
    return lsp.CodeAction(
        title=fix.title,
        kind=kind,
        diagnostics=None if diagnostic is None else [diagnostic],
        disabled=lsp.CodeActionDisabled(reason=fix.refused),
    )


def _within_cap(doc: MemoryDocument, fix: Fix) -> Fix:
    """``fix``, or the same refused when it would take the store over its cap (SPEC §2:
    the store would then be refused for reading and writing). Only a fix that writes
    text can grow the store; the text after it is measured with the buffer's own line
    ends and byte-order mark."""
    from memory_ls.core import fixes  # (at first use: issue 11's cold start)

    if not fix.edits or not any(e.new_text for e in fix.edits) or doc.size > MAX_STORE_BYTES:
        return fix
    after = utf8_length(fixes.apply_edits(doc.lines, fix.edits, doc.eol)) + (3 if doc.bom else 0)
    if after <= MAX_STORE_BYTES:
        return fix
    reason = (
        f"This would take the store to {after:,} bytes, over its {MAX_STORE_BYTES:,}-byte "
        "cap: forget a note instead."
    )
    return fixes.Fix(fix.title, [], refused=reason)


def _edit_action(
    ls: MemoryServer,
    doc: MemoryDocument,
    fix: Fix,
    kind: str,
    diagnostic: lsp.Diagnostic | None = None,
) -> lsp.CodeAction:
    """A core fix as an LSP code action (a quick fix names its diagnostic)."""
    if fix.select is not None:
        sel = fix.select
        where = text_range(doc, sel.line, sel.start, sel.line, sel.end, ls.analysis.encoding)
        shown = {"uri": doc.uri, "range": range_json(where)}
        return lsp.CodeAction(
            title=fix.title,
            kind=kind,
            diagnostics=None if diagnostic is None else [diagnostic],
            command=lsp.Command(title=fix.title, command=REVEAL, arguments=[shown]),
        )
    if fix.command is not None:
        # A change to another store: the server's command writes it (SPEC §3), not an edit.
        argument: dict[str, Any] = {**fix.command.argument, "uri": doc.uri}
        return lsp.CodeAction(
            title=fix.title,
            kind=kind,
            diagnostics=None if diagnostic is None else [diagnostic],
            is_preferred=None if diagnostic is None else fix.preferred,
            command=lsp.Command(title=fix.title, command=fix.command.command, arguments=[argument]),
        )
    edits = text_edits(doc, fix.edits, ls.analysis.encoding)
    return lsp.CodeAction(
        title=fix.title,
        kind=kind,
        diagnostics=None if diagnostic is None else [diagnostic],
        is_preferred=None if diagnostic is None else fix.preferred,
        edit=ls.workspace_edit(doc, edits),
    )


def _data_for(ls: MemoryServer, doc: MemoryDocument, diag: lsp.Diagnostic) -> Any:
    """The full ``data`` of the current diagnostic with the code, range and message of
    ``diag`` (its line and note instead of the whole range, when ``data`` names the
    note). A store's diagnostics are published
    without the other note's text their fixes need
    (:func:`~memory_ls.core.checks.lean_wire_data`), and a client that does not declare
    ``dataSupport`` may drop ``data`` altogether: either way the fix is built from the
    server's own finding (a note in several ``conflict`` pairs has one diagnostic per
    other note on its line: the fix must be about the other note that diagnostic names).

    A diagnostic of an older version (the note it named deleted, another moved onto its
    line) matches nothing, so it cannot lend that other note's data: "Forget this note"
    never forgets a note the user did not point at.
    """
    where = range_json(diag.range)
    if ls.document(doc.uri) is not None:
        note = diag.data.get("noteHash") if isinstance(diag.data, dict) else None
        if not isinstance(note, str):
            note = None  # mangled or dropped: the whole range must match then
        return ls.analysis.data_of(doc, str(diag.code), where, diag.message, note)
    if ls.instructions.get(doc.uri) is not doc:
        return None
    for item in instructions.items(ls, doc):
        if item["code"] == diag.code and item["range"] == where and item["message"] == diag.message:
            return item.get("data")
    return None


def _note_actions(
    ls: MemoryServer, doc: MemoryDocument, selection: lsp.Range, only: list[str] | None
) -> list[lsp.CodeAction]:
    from memory_ls.core import fixes  # (at first use: issue 11's cold start)

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
        if _wanted(REWRITE, only) and (forget := fixes.forget_fix(doc.lines, b.line)) is not None:
            out.append(_edit_action(ls, doc, forget, REWRITE))
        if scope is not None and _wanted(MOVE, only):
            # A command, not an edit: the server orders its two writes (SPEC §3).
            title = f"Move to {other_scope(scope)} memory"
            argument: dict[str, Any] = {"text": b.note, "scope": scope, "uri": doc.uri}
            command = lsp.Command(title=title, command="memory.move", arguments=[argument])
            out.append(lsp.CodeAction(title=title, kind=MOVE, command=command))
    elif _wanted(REWRITE, only):
        merge = fixes.merge_fix(doc.lines, [b.line for b in notes])
        if merge is not None and (action := _offered(ls, doc, merge, REWRITE)) is not None:
            out.append(action)
    return out


def _inside_document(doc: MemoryDocument, selection: lsp.Range, encoding: str) -> bool:
    """Whether ``selection`` is a range of ``doc`` as it is now (start before end, each
    position on a line of it, no column past the line's end in the client's units)."""
    lines = doc.lines
    start, end = selection.start, selection.end
    if (start.line, start.character) > (end.line, end.character):
        return False
    for pos in (start, end):
        if not 0 <= pos.line < len(lines):
            return False
        if not 0 <= pos.character <= to_client(lines[pos.line], len(lines[pos.line]), encoding):
            return False
    return True


async def reveal(ls: MemoryServer, arg: dict[str, Any]) -> RevealResult:
    """``memory.reveal`` (``uri``, ``range``): show an open memory document with ``range``
    selected (``window/showDocument``), so the user edits the stale mention; ``{shown}``,
    and ``error`` when the client cannot show documents, the document is not an open
    store, or the range is not one (the argument that is not an object at all is
    ``InvalidParams``, as for every command: :func:`memory_ls.server.commands.argument`)."""
    uri = arg.get("uri")
    selection = range_from_json(arg.get("range"))
    if not isinstance(uri, str) or selection is None:
        return {"shown": False, "error": "memory.reveal needs a uri and a range"}
    found = ls.document(uri)
    if found is None:  # it shows open stores only, nothing a caller names
        return {"shown": False, "error": f"not an open memory document: {uri}"}
    if not _inside_document(found.doc, selection, ls.analysis.encoding):
        # A forged or stale range: the client would select nonsense, or fail.
        return {"shown": False, "error": "memory.reveal: the range is not in the document"}
    if not ls.capability("window.show_document.support"):
        return {"shown": False, "error": "this client cannot show a document (window/showDocument)"}
    params = lsp.ShowDocumentParams(uri=uri, take_focus=True, selection=selection)
    try:
        result = await asyncio.wait_for(ls.window_show_document_async(params), CLIENT_TIMEOUT)
    except Exception as exc:
        return {"shown": False, "error": f"the client did not show the document: {exc}"}
    return {"shown": bool(result is not None and result.success)}
