"""The review inbox in the editor (SPEC §12): commands, code lenses, and the inbox watch.

``memory.propose``, ``memory.inbox``, ``memory.accept`` and ``memory.reject`` run
through :class:`memory_ls.store.review.Review`; accepting into an open store
follows the open-buffer rule of :mod:`memory_ls.server.commands` (the same
turns, the same :class:`~memory_ls.server.commands.BufferChange`). The inbox
files are watched twice over: by the client's file watcher where it has one,
and by a cheap stamp check every :data:`POLL_INTERVAL` seconds, so a proposal
made by another process shows up in any editor without a reload. When an
inbox changes, open stores are rechecked (the ``proposal`` diagnostic), code
lenses are refreshed and ``memory/inbox`` tells the client the counts.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from memory_ls.core.actions import SCOPE_MESSAGE, Change, Request, check_scope, read_request
from memory_ls.core.checks import Finding, proposal_findings
from memory_ls.core.inbox import check_by, clean_by, parse_inbox
from memory_ls.core.models import (
    SCOPES,
    InboxCounts,
    MemoryResult,
    Proposal,
    ReviewResult,
    Scope,
)
from memory_ls.core.render import result_text
from memory_ls.core.text import escape_unseen, key_of_normalised
from memory_ls.server import publishing
from memory_ls.server.commands import BufferChange, in_thread, sync_buffers
from memory_ls.server.documents import MemoryDocument
from memory_ls.server.protocol import send_json
from memory_ls.store.files import Stamp, StoreFile, read_store, stamp_of, unchanged
from memory_ls.store.paths import inbox_path
from memory_ls.store.review import Review
from memory_ls.store.runtime import MemoryRuntime

if TYPE_CHECKING:
    from memory_ls.server.server import MemoryServer

log = logging.getLogger("memory_ls.server")

COMMANDS = ("memory.propose", "memory.inbox", "memory.accept", "memory.reject")
NOTIFICATION = "memory/inbox"
POLL_INTERVAL = 1.0
"""Seconds between checks of the inbox files' stamps (for clients without a file watcher)."""
SELECTOR_MESSAGE = "Give id (a string), ids (a list of strings) or all (true)."
LENS_TEXT = 60
"""A lens shows at most this many characters of a proposal's text."""


# -- reading the inboxes (cached by stamp) -------------------------------------------

_cache: dict[str, tuple[Stamp | None, list[Proposal], StoreFile | None]] = {}
"""Each inbox's stamp, proposals, and the read they were parsed from."""


@functools.lru_cache(maxsize=256)
def _inbox_of(store: Path) -> tuple[Path, str]:
    """The inbox beside ``store``, and its path as a string (asked at every keystroke)."""
    path = inbox_path(store)
    return path, str(path)


def waiting(runtime: MemoryRuntime, scope: Scope) -> list[Proposal]:
    """The proposals waiting in ``scope``'s inbox, re-read only when its stamp changed.

    Nothing for a project whose store is refused (outside the project); an
    untrusted project's are read (for the count) but never shown.
    """
    if runtime.store_refusal(scope) is not None:
        return []
    path, key = _inbox_of(runtime.paths[scope])
    stamp = stamp_of(path)
    cached = _cache.get(key)
    if cached is not None and unchanged(cached[0], stamp):  # (a racy stamp: read again)
        return cached[1]
    known = cached[2] if cached is not None else None
    file = read_store(path, known=known) if stamp is not None else None
    readable = file is not None and file.error is None and file.data is not None
    if cached is not None and known is not None and file is not None and file.data is known.data:
        # A racy stamp read again (an inbox just written, or its mtime in the future,
        # racy until the clock passes it): the same bytes (read_store kept `known`'s)
        # are the same proposals, not decoded and parsed again at every keystroke's pass.
        _cache[key] = (stamp, cached[1], file)
        return cached[1]
    text = file.content if file is not None and file.error is None else ""
    proposals = parse_inbox(text).proposals
    _cache[key] = (stamp, proposals, file if readable else None)
    return proposals


def shown(runtime: MemoryRuntime, scope: Scope) -> list[Proposal]:
    """The proposals whose text may be shown in ``scope`` (none of an untrusted project)."""
    if scope == "project" and not runtime.trust().trusted:
        return []
    return waiting(runtime, scope)


def findings(doc: MemoryDocument, runtime: MemoryRuntime, scope: Scope) -> list[Finding]:
    """The ``proposal`` diagnostics of an open store: on each note a waiting update or forget targets."""
    targeted = [p for p in shown(runtime, scope) if p["action"] != "add"]
    if not targeted:
        return []
    keys = {key_of_normalised(p["text"]) for p in targeted}
    return proposal_findings(doc.bullets_for(keys), targeted)


def counts(ls: MemoryServer) -> InboxCounts:
    """The ``memory/inbox`` counts of the default project (and the global inbox)."""
    runtime = ls.projects.default_runtime()
    return {"project": len(waiting(runtime, "project")), "global": len(waiting(runtime, "global"))}


# -- code lenses --------------------------------------------------------------------------


def _short(text: str) -> str:
    """At most :data:`LENS_TEXT` characters, hidden characters shown escaped (for the reviewer)."""
    shown = escape_unseen(text)
    return shown if len(shown) <= LENS_TEXT else shown[: LENS_TEXT - 1] + "…"


def accept_title(proposal: Proposal) -> str:
    """The Accept lens of one proposal: ``✓ Accept …``."""
    action, by = proposal["action"], proposal["by"]
    if action == "add":
        what = f"add: {_short(proposal['text'])}"
    elif action == "update":
        what = f"update → {_short(proposal.get('to', ''))}"
    else:
        what = "forget"
    return f"✓ Accept {what} ({by})"


def lenses(
    doc: MemoryDocument, runtime: MemoryRuntime, scope: Scope, uri_arg: Mapping[str, Any]
) -> list[lsp.CodeLens]:
    """``N proposals waiting`` on line 0, then ``✓ Accept …`` / ``✗ Reject`` per proposal.

    An add's pair sits at the end of the notes (the last note's line); an update's
    or a forget's on the note it targets (at the end when the buffer no longer holds it).
    An untrusted project's proposals are counted only.
    """
    pending = waiting(runtime, scope)
    if not pending:
        return []
    first = lsp.Range(start=lsp.Position(0, 0), end=lsp.Position(0, 0))
    count = len(pending)
    noun = "proposal" if count == 1 else "proposals"
    out = [
        lsp.CodeLens(
            range=first,
            command=lsp.Command(
                title=f"{count} {noun} waiting",
                command="memory.inbox",
                arguments=[{**uri_arg, "scope": scope}],
            ),
        )
    ]
    if scope == "project" and not runtime.trust().trusted:
        return out
    bullets = doc.note_bullets()
    end_line = bullets[-1].line if bullets else max(len(doc.lines) - 1, 0)
    for proposal in pending:
        line = end_line
        if proposal["action"] != "add":
            target = next((b for b in bullets if b.note == proposal["text"]), None)
            if target is not None:
                line = target.line
        at = lsp.Range(start=lsp.Position(line, 0), end=lsp.Position(line, 0))
        arg = {**uri_arg, "id": proposal["id"], "scope": scope}
        out.append(
            lsp.CodeLens(
                range=at,
                command=lsp.Command(
                    title=accept_title(proposal), command="memory.accept", arguments=[arg]
                ),
            )
        )
        out.append(
            lsp.CodeLens(
                range=at,
                command=lsp.Command(title="✗ Reject", command="memory.reject", arguments=[arg]),
            )
        )
    return out


# -- commands -------------------------------------------------------------------------------


def _selector(arg: Mapping[str, Any]) -> tuple[list[str] | None, str | None]:
    """``id``, ``ids`` or ``all``: the ids (``None`` for all), or why the selector is bad."""
    if arg.get("all") is True and "id" not in arg and "ids" not in arg:
        return None, None
    if "id" in arg and "ids" not in arg and arg.get("all") is None:
        value = arg["id"]
        return ([value], None) if isinstance(value, str) and value else ([], SELECTOR_MESSAGE)
    if "ids" in arg and "id" not in arg and arg.get("all") is None:
        values = arg["ids"]
        if isinstance(values, list) and values and all(isinstance(v, str) and v for v in values):
            return list(values), None
    return [], SELECTOR_MESSAGE


def _optional_text(arg: Mapping[str, Any], name: str) -> tuple[str | None, str | None]:
    value = arg.get(name)
    if value is None:
        return None, None
    if not isinstance(value, str):
        return None, f"{name} is required."
    return value, None


def _refused(runtime: MemoryRuntime, verb: str, scope: Scope, error: str) -> ReviewResult:
    result = runtime.result(verb, scope, error=error)
    return {
        "action": "accept" if verb == "accept" else "reject",
        "changed": False,
        "results": [result],
        "waiting": Review(runtime).counts(),
        "text": result_text(result),
        "error": error,
    }


async def execute(ls: MemoryServer, runtime: MemoryRuntime, name: str, arg: dict[str, Any]) -> Any:
    """Run one review command (the argument object is already checked to be one)."""
    review = Review(runtime)
    if name == "inbox":
        return review.listing()[0]
    if name == "propose":
        if (by_error := check_by(arg.get("by"))) is not None:
            request, error = read_request(arg.get("action"), arg)
            return runtime.result(request.action, request.scope, error=error or by_error)
        by = clean_by(arg.get("by"), ls.client_name)
        fields = {k: v for k, v in arg.items() if k not in ("action", "by", "uri")}
        # In a worker thread, as every write: waiting for another process's lock must
        # not stop this server from answering hovers and diagnostics meanwhile.
        proposed = await in_thread(review.propose, arg.get("action"), fields, by)
        result: MemoryResult = proposed[0]
        if "proposal" in result:
            inbox_changed(ls)
        return result
    verb = name
    scope: Scope | None = None
    if arg.get("scope") is not None:
        checked, error = check_scope(arg.get("scope"))
        if error:
            return _refused(runtime, verb, "project", SCOPE_MESSAGE)
        scope = checked
    ids, error = _selector(arg)
    text, text_error = _optional_text(arg, "text")
    to, to_error = _optional_text(arg, "to")
    error = error or text_error or to_error
    if error:
        return _refused(runtime, verb, scope or "project", error)
    if verb == "reject":
        out = await in_thread(review.reject, ids, scope)
    else:
        out = await _accept(ls, runtime, review, ids, scope, text, to)
    inbox_changed(ls)
    return out


async def _accept(
    ls: MemoryServer,
    runtime: MemoryRuntime,
    review: Review,
    ids: Sequence[str] | None,
    scope: Scope | None,
    text: str | None,
    to: str | None,
) -> ReviewResult:
    """Accept, taking the stores' turns, and show each change in its open buffer."""
    scopes = (scope,) if scope is not None else SCOPES
    async with ls.open_buffers.turn(runtime.paths[s] for s in scopes):
        before = {s: runtime.view(s).file.content for s in scopes}
        out = await in_thread(review.accept, ids, scope, text, to)
        ls.projects.invalidate()
        for s in scopes:
            requests = [
                Request(r["action"], s, r.get("entry", ""), r.get("to", ""))
                for r in out["results"]
                if r["scope"] == s and r["changed"] and "error" not in r
            ]
            change = BufferChange(
                "accept",
                before[s],
                runtime.view(s).file.content,
                functools.partial(_replay, requests, s),
                functools.partial(_file_text, runtime, s),
            )
            await sync_buffers(ls, runtime, s, change)
    publishing.refresh_all(ls)
    return out


def _replay(requests: list[Request], scope: Scope, content: str) -> Change:
    """The accepted actions applied in turn to a buffer's text."""
    current, changed = content, False
    for request in requests:
        change = request.change(scope)(current)
        if change.changed and change.error is None:
            current, changed = change.content, True
    return Change(current, changed)


def _file_text(runtime: MemoryRuntime, scope: Scope) -> str:
    return runtime.view(scope).file.content


# -- watching the inboxes -------------------------------------------------------------------


def _stamps(
    ls: MemoryServer, seen: dict[str, tuple[Stamp | None, object]] | None = None
) -> dict[str, tuple[Stamp | None, object]]:
    """Each inbox file's stamp, and for a racy one (``RACY_MARGIN_NS``), or one ``seen``
    racy last time, what it holds: an equal racy stamp does not prove the inbox unchanged,
    its bytes do (an mtime in the future stays racy for as long as it is ahead, and must
    not be a change every poll; nor is an inbox a change as its stamp settles)."""
    out: dict[str, tuple[Stamp | None, object]] = {}
    for runtime in list(ls.projects.runtimes.values()) or [ls.projects.default_runtime()]:
        for scope in SCOPES:
            path = inbox_path(runtime.paths[scope])
            stamp = stamp_of(path)
            held: object = None
            last = (seen or {}).get(str(path), (None, None))[0]
            if stamp is not None and (stamp.racy or (last is not None and last.racy)):
                file = read_store(path)
                held = file.data if file.error is None else file.error
            out[str(path)] = (stamp, held)
    return out


def _same_inbox(seen: tuple[Stamp | None, object], now: tuple[Stamp | None, object] | None) -> bool:
    if now is None:
        return False
    if unchanged(seen[0], now[0]):
        return True
    # A racy stamp seen again: unchanged when the bytes are (read at both looks).
    return seen[0] == now[0] and seen[1] is not None and seen[1] == now[1]


def inbox_changed(ls: MemoryServer) -> None:
    """An inbox changed: recheck open stores, refresh lenses, send the counts."""
    ls.inbox_stamps = _stamps(ls)
    publishing.refresh_all(ls)
    if ls.capability("workspace.code_lens.refresh_support"):
        try:
            ls.workspace_code_lens_refresh(None)
        except Exception as exc:
            log.warning("code lens refresh failed: %r", exc)
    send_json(
        ls.protocol,
        {"jsonrpc": "2.0", "method": NOTIFICATION, "params": dict(counts(ls))},
    )


def check_inboxes(ls: MemoryServer) -> None:
    """Compare the inbox files' stamps with the last seen; report a change."""
    stamps = _stamps(ls, ls.inbox_stamps)
    # A racy stamp last seen (RACY_MARGIN_NS) does not prove the inbox unchanged: its
    # bytes, read at both looks, decide (`_stamps`).
    if any(not _same_inbox(seen, stamps.get(path)) for path, seen in ls.inbox_stamps.items()) or (
        stamps.keys() != ls.inbox_stamps.keys()
    ):
        inbox_changed(ls)
    else:
        ls.inbox_stamps = stamps  # (a settled stamp: its bytes need not be read again)


async def poll(ls: MemoryServer) -> None:
    """Check the inboxes every :data:`POLL_INTERVAL` seconds, for as long as the server runs."""
    ls.inbox_stamps = _stamps(ls)
    while True:
        await asyncio.sleep(POLL_INTERVAL)
        try:
            check_inboxes(ls)
        except Exception as exc:  # never stop watching
            log.warning("inbox check failed: %r", exc)


def start(ls: MemoryServer) -> None:
    """Start watching the inboxes (from ``initialized``), and send the first counts."""
    ls.inbox_task = asyncio.get_running_loop().create_task(poll(ls))
    if any(counts(ls).values()):
        send_json(
            ls.protocol,
            {"jsonrpc": "2.0", "method": NOTIFICATION, "params": dict(counts(ls))},
        )
