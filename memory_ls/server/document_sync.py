"""Open memory documents kept in step with the editor and the disk (SPEC §7 Documents).

``didOpen``, ``didChange``, ``didClose`` and ``didSave`` track the buffers;
watched files and workspace folders track the files and projects behind them.
Each handler updates the state, publishes what the user is looking at at once,
and leaves the rest (``similar`` hints, the other store) to
:mod:`memory_ls.server.background`. Anything unexpected is logged to the
client's log (``window/logMessage``), never shown as a pop-up, and the server
carries on.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from lsprotocol import types as lsp

from memory_ls.server import background, commands, instructions, project_watch, publishing, review
from memory_ls.server.diagnostics import DocState, disk_facts
from memory_ls.server.documents import MemoryDocument, Span
from memory_ls.server.protocol import CLIENT_TIMEOUT
from memory_ls.server.uris import path_of_uri, uri_of_path
from memory_ls.store.paths import STORE_FILE_NAME

if TYPE_CHECKING:
    from memory_ls.server.server import MemoryServer
    from memory_ls.server.workspace import DocumentInfo

log = logging.getLogger("memory_ls.server")
F = TypeVar("F", bound=Callable[..., Any])

OTHERS_DELAY = 0.03
"""Seconds after an edit before the other store's diagnostics are refreshed."""


def register(ls: MemoryServer) -> None:
    """Document and workspace synchronisation."""
    ls.feature(lsp.TEXT_DOCUMENT_DID_OPEN)(did_open)
    ls.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)(did_change)
    ls.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)(did_close)
    ls.feature(lsp.TEXT_DOCUMENT_DID_SAVE, lsp.SaveOptions(include_text=False))(did_save)
    ls.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)(did_change_watched_files)
    ls.feature(lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(did_change_folders)


def guarded(fn: F) -> F:
    """Log (never raise) whatever goes wrong in a notification handler."""

    @functools.wraps(fn)
    def wrapper(ls: MemoryServer, *args: Any) -> Any:
        try:
            return fn(ls, *args)
        except Exception as exc:
            log.exception("handler %s failed", fn.__name__)
            ls.log(f"memory-ls: {fn.__name__} failed: {exc!r}", lsp.MessageType.Error)
            return None

    return wrapper  # type: ignore[return-value]


def folders_from(params: lsp.InitializeParams) -> list[Path]:
    """The workspace folders (or the root) as paths."""
    uris = [f.uri for f in params.workspace_folders or []]
    if not uris and params.root_uri:
        uris = [params.root_uri]
    paths = [path_of_uri(u) for u in uris]
    if not uris and params.root_path:
        paths = [params.root_path]
    return [Path(p) for p in paths if p]


async def register_watchers(ls: MemoryServer) -> None:
    """Watch the stores, ``bytefly.json`` and ``trust.json`` where the client allows it."""
    if not ls.capability("workspace.did_change_watched_files.dynamic_registration"):
        return
    agent = ls.projects.default_runtime().agent_dir
    watchers: list[lsp.FileSystemWatcher] = [
        lsp.FileSystemWatcher(glob_pattern="**/.pi/memory.md"),
        lsp.FileSystemWatcher(glob_pattern="**/.pi/bytefly.json"),
        lsp.FileSystemWatcher(glob_pattern="**/.pi/memory.inbox.jsonl"),
    ]
    if ls.capability("workspace.did_change_watched_files.relative_pattern_support"):
        watchers.append(
            lsp.FileSystemWatcher(
                glob_pattern=lsp.RelativePattern(
                    base_uri=uri_of_path(agent),
                    pattern="{memory.md,bytefly.json,trust.json,memory.inbox.jsonl}",
                )
            )
        )
    else:
        watchers.extend(
            lsp.FileSystemWatcher(glob_pattern=str(agent / name))
            for name in ("memory.md", "bytefly.json", "trust.json", "memory.inbox.jsonl")
        )
    params = lsp.RegistrationParams(
        registrations=[
            lsp.Registration(
                id="memory-ls-watched-files",
                method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=lsp.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
            )
        ]
    )
    await asyncio.wait_for(ls.client_register_capability_async(params), CLIENT_TIMEOUT)


def _path_of(uri: str) -> Path | None:
    if not uri.startswith("file:"):
        return None
    fs = path_of_uri(uri)
    return Path(fs) if fs else None


def _refresh_others_soon(ls: MemoryServer, doc: MemoryDocument) -> None:
    """Recheck the other open documents once edits pause (their duplicates and recall)."""
    ls.timers.later(
        "others", "", OTHERS_DELAY, lambda: publishing.refresh_all(ls, except_uri=doc.uri)
    )


@guarded
def did_open(ls: MemoryServer, params: lsp.DidOpenTextDocumentParams) -> None:
    """Track a memory document and check it; an instruction file gets ``export-stale``
    only, and other documents nothing."""
    item = params.text_document
    path = _path_of(item.uri)
    if path is None:
        return
    info = ls.projects.describe(path)
    if info is None:
        instructions.did_open(ls, item, path)  # AGENTS.md & co. get export-stale only
        if path.name == STORE_FILE_NAME:
            ls.unjudged[item.uri] = MemoryDocument(item.uri, path, item.text, item.version)
        return
    # Opened again without a close: its text is what its path leads to now.
    ls.open_buffers.repointed.pop(item.uri, None)
    with _collector_paused() as resume:
        _start(ls, MemoryDocument(item.uri, path, item.text, item.version), info, resume)


@contextlib.contextmanager
def _collector_paused() -> Iterator[Callable[[], None]]:
    """The cyclic garbage collector paused until the block ends or calls what it yields.

    An opened store's document and first diagnostics allocate a few objects a line
    (4,500 lines: ~20 young collections, ~2 ms, issue 11's open target), and nothing of
    it is a cycle to collect: paused, those collections come after the first publish
    is written instead of before it. Nothing else changes: objects are freed by their
    counts as ever, and the collector sees them at its next run.
    """
    paused = gc.isenabled()
    gc.disable()

    def resume() -> None:
        if paused:
            gc.enable()

    try:
        yield resume
    finally:
        resume()


def _start(
    ls: MemoryServer,
    doc: MemoryDocument,
    info: DocumentInfo,
    published: Callable[[], None] | None = None,
) -> None:
    """Track a store that was opened (or became a store while open) and check it;
    ``published`` is called once its first diagnostics are written (or failed)."""
    ls.track(doc, DocState(info, disk_facts(doc, info)))
    claims = background.prepare_conflicts(ls, doc)  # a large store's: read in a thread first
    try:
        publishing.publish(ls, doc, always=True)
    finally:
        if published is not None:
            published()
        # Every thread only now: one started before the first publish is written takes
        # the GIL from it (the claims thread cost that publish 6-14 ms on 4,500 notes).
        if claims is not None:
            claims()
    background.start_similar(ls, doc)
    project_watch.opened(ls, doc, info)  # SPEC §13: the project's files, in the background
    _refresh_others_soon(ls, doc)


def _stop(ls: MemoryServer, uri: str) -> MemoryDocument | None:
    """Stop tracking a store (closed, or no store any more) and clear its diagnostics."""
    doc = ls.untrack(uri)
    if doc is None:
        return None
    commands.buffer_closed(ls, doc.uri)
    project_watch.closed(ls, doc.uri)
    publishing.clear(ls, doc.uri)
    ls.projects.invalidate()
    return doc


def follow_paths(ls: MemoryServer, saved: str | None = None) -> None:
    """Where each open store's path leads, looked at again: a folder on the way may be a
    symlink pointed at another project since it was opened.

    A document that moved follows its path: it is the store of the file it leads to now
    (described again, its disk looked at, its project's files judged), so diagnostics,
    hover and commands agree; its buffer is judged against that file
    (:func:`commands.follow_file`: marked ``buffer-behind-file`` when its text came from
    the other one). A buffer marked so is judged again too (the file may hold its text
    now). ``saved``: the uri the editor has just saved. Run at the moments the server
    looks anyway: a re-check (:func:`redescribe`), a save, and each command.
    """
    followed = False
    for doc, state in ls.open_documents():
        try:
            followed |= _follow_path(ls, doc, state, saved=doc.uri == saved)
        except Exception as exc:  # one odd path must not fail a command or a save
            log.exception("following %s failed", doc.uri)
            ls.log(f"memory-ls: following {doc.path} failed: {exc!r}", lsp.MessageType.Error)
    if followed:
        publishing.refresh_all(ls)


def _follow_path(ls: MemoryServer, doc: MemoryDocument, state: DocState, saved: bool) -> bool:
    """:func:`follow_paths` for one document; whether it moved."""
    moved = ls.projects.follow(doc.uri)
    if moved is not None:
        info = ls.projects.describe(doc.path)
        if info is not None:  # (else it is no store now: redescribe lets it go)
            state.info = info
        state.disk = disk_facts(doc, state.info)
        ls.projects.invalidate()
        project_watch.opened(ls, doc, state.info)
    elif doc.uri not in ls.open_buffers.repointed:
        return False
    commands.follow_file(ls, doc, moved, saved=saved)
    return moved is not None


def redescribe(ls: MemoryServer) -> None:
    """What each open file is may have changed (``agentDir``, the workspace folders, a
    file on disk, a symlinked folder on its path): a store that is no store any more is
    let go (its diagnostics cleared), an open ``memory.md`` that has become one is
    checked, then every store is checked again."""
    follow_paths(ls)
    for doc, state in ls.open_documents():
        info = ls.projects.describe(doc.path)
        if info is None:
            if _stop(ls, doc.uri) is not None and doc.path.name == STORE_FILE_NAME:
                ls.unjudged[doc.uri] = doc
        else:
            state.info = info
    for uri, doc in list(ls.unjudged.items()):
        info = ls.projects.describe(doc.path)
        if info is not None:
            del ls.unjudged[uri]
            _start(ls, doc, info)
    publishing.refresh_all(ls)


@guarded
def did_change(ls: MemoryServer, params: lsp.DidChangeTextDocumentParams) -> None:
    """Apply the edit to the per-line state, then re-check what it touched."""
    found = ls.document(params.text_document.uri)
    if found is None:
        instructions.did_change(ls, params)
        if (waiting := ls.unjudged.get(params.text_document.uri)) is not None:
            _apply(waiting, params, ls.analysis.encoding)
        return
    doc = found.doc
    notes_before = doc.notes_version
    _apply(doc, params, ls.analysis.encoding)
    commands.buffer_changed(ls, doc)
    publishing.publish(ls, doc, always=True)
    if doc.notes_version != notes_before:
        background.similar_after_edit(ls, doc)
        _refresh_others_soon(ls, doc)


def _apply(doc: MemoryDocument, params: lsp.DidChangeTextDocumentParams, encoding: str) -> None:
    for change in params.content_changes:
        if isinstance(change, lsp.TextDocumentContentChangePartial):
            r = change.range
            span = Span(r.start.line, r.start.character, r.end.line, r.end.character)
            doc.apply_change(span, change.text, encoding)
        else:
            doc.apply_change(None, change.text, encoding)
    doc.version = params.text_document.version


@guarded
def did_close(ls: MemoryServer, params: lsp.DidCloseTextDocumentParams) -> None:
    """Forget the document and clear its diagnostics."""
    ls.unjudged.pop(params.text_document.uri, None)
    if _stop(ls, params.text_document.uri) is None:
        instructions.did_close(ls, params.text_document.uri)
        return
    publishing.refresh_all(ls)


@guarded
def did_save(ls: MemoryServer, params: lsp.DidSaveTextDocumentParams) -> None:
    """The file on disk changed: re-read what depends on it."""
    follow_paths(ls, saved=params.text_document.uri)  # the save went where the path leads
    found = ls.document(params.text_document.uri)
    if found is not None:
        # Saved: the buffer is the file now, and the file's other buffers (open under
        # another URI) are judged against the file as it is now too.
        for doc in ls.projects.same_file(found.doc):
            if (other := ls.document(doc.uri)) is not None:
                other.state.disk = disk_facts(doc, other.state.info)
            commands.buffer_changed(ls, doc)
        project_watch.saved(ls, found.doc)
    ls.projects.invalidate()
    publishing.refresh_all(ls)


@guarded
def did_change_watched_files(ls: MemoryServer, params: lsp.DidChangeWatchedFilesParams) -> None:
    """A store, ``bytefly.json`` or ``trust.json`` changed on disk: recheck everything,
    once per burst.

    An event about the project tree only (a file created or deleted, a package.json
    edited) goes to :mod:`memory_ls.server.project_watch`, which looks at that project
    again in the background: it rechecks nothing else.

    The caches of what the disk held are dropped at once (cheap, and nothing answered
    after the event is taken from a look taken before it); the recheck itself (each open
    store's file, what each open file is, every diagnostic, the inboxes: ~3 ms on a
    4,500-note store that did not change, more when one did) runs :data:`RECHECK_DELAY`
    after the last such event, so a burst of notifications (a ``git checkout``, a
    writer's temporary files in ``.pi/``) is one recheck instead of one per notification.
    """
    project_watch.files_changed(ls, params.changes)
    if params.changes and not project_watch.any_memory_file(params.changes):
        return
    ls.projects.invalidate()
    ls.timers.coalesce("recheck", "", RECHECK_DELAY, RECHECK_MAX_WAIT, lambda: _recheck(ls))


RECHECK_DELAY = 0.03
"""Seconds of quiet after a watched-file event about a memory file before every open
document is rechecked (:func:`did_change_watched_files`)."""
RECHECK_MAX_WAIT = 0.25
"""Seconds that events which keep coming may push that recheck back: then it runs anyway
(and again after the next quiet)."""


def _recheck(ls: MemoryServer) -> None:
    """What a watched-file event about a memory file asks: every open store's file looked
    at again, every open file described again, everything rechecked, the inboxes read."""
    for doc, state in ls.open_documents():
        state.disk = disk_facts(doc, state.info)
    ls.projects.invalidate()
    redescribe(ls)
    review.check_inboxes(ls)  # a proposal from another process (SPEC §12)


@guarded
def did_change_folders(ls: MemoryServer, params: lsp.DidChangeWorkspaceFoldersParams) -> None:
    """Each workspace folder is its own project."""
    removed = {path_of_uri(f.uri) for f in params.event.removed}
    folders = [f for f in ls.projects.folders if str(f) not in removed]
    folders += [Path(p) for f in params.event.added if (p := path_of_uri(f.uri))]
    ls.projects.configure(ls.projects.settings, folders)
    project_watch.folders_changed(ls)
    redescribe(ls)
