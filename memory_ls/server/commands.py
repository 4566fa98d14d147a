"""The ``memory.*`` commands (SPEC §7 Commands) and the open-buffer rule.

Each command takes one JSON object. Field values are validated by the runtime
and refused as a ``MemoryResult`` with ``error``; only an argument that is not
an object is a protocol error (``InvalidParams``). When a command changes a
store that is open in the editor, the buffer is brought up to date with a
``workspace/applyEdit``: a buffer that matched the file takes the file's new
text, and a buffer with unsaved edits gets the command's change applied to
*its* text, so neither the user's edits nor the command's change are lost.

Commands that change the same store take turns, and each waits for the client
to apply its edit before the next computes one, so any number of commands in
flight see the buffer as the one before left it. A buffer the client will not
update is marked ``buffer-behind-file`` until it holds the change.
"""

from __future__ import annotations

import _thread
import asyncio
import contextlib
import contextvars
import functools
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar
from weakref import WeakSet

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams

from memory_ls.core.actions import Change, check_scope, clear_moved, read_request
from memory_ls.core.bridges import (
    CHECK_MESSAGE,
    PROPOSE_MESSAGE,
    TO_MESSAGE,
    check_files,
    check_format,
    check_message,
    plan_import,
)
from memory_ls.core.inbox import check_by
from memory_ls.core.merge import merge_notes
from memory_ls.core.models import ExportResult, ImportResult, MemoryResult, Scope, SyncResult
from memory_ls.core.render import sync_summary
from memory_ls.core.text import display_path
from memory_ls.server import publishing
from memory_ls.server.background import WorkProgress
from memory_ls.server.documents import MemoryDocument
from memory_ls.server.edits import replacing_edit
from memory_ls.server.repointed import (
    Repointed,
    encoded,
    file_holds_buffer,
    read_for,
    repointed_mark,
)
from memory_ls.server.uris import path_of_uri
from memory_ls.store.paths import canonical_path
from memory_ls.store.runtime import MemoryRuntime

if TYPE_CHECKING:
    from memory_ls.server.server import MemoryServer

log = logging.getLogger(__name__)

_P = ParamSpec("_P")
_T = TypeVar("_T")

_COMMITTED: WeakSet[asyncio.Task[Any]] = WeakSet()
"""The commands' tasks that started work a cancel cannot stop (see :func:`in_thread`)."""

_FINISHING: WeakSet[asyncio.Task[Any]] = WeakSet()
"""Requests' tasks of commands cancelled after they began: each still answers its result."""


def finishing() -> list[asyncio.Task[Any]]:
    """The cancelled commands still running to their end (``shutdown`` waits for them:
    the cancel took them off pygls' requests in flight)."""
    return [task for task in _FINISHING if not task.done()]


async def in_thread(fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """``fn`` in a worker thread, from which point the running command is committed.

    A thread cannot be stopped: a ``$/cancelRequest`` that arrives once it runs would
    answer "canceled" for a write that still happens, and skip showing it in the open
    buffers (whose next save would then drop it). So the command runs to its end and
    answers what it did (LSP lets a server answer a cancelled request with its result).
    When no worker thread can be started, ``fn`` runs here, on the loop, and still once.
    """
    task = asyncio.current_task()
    if task is not None:
        _COMMITTED.add(task)
    loop = asyncio.get_running_loop()
    # In a list emptied once answered: the future of an error holds its traceback, which
    # holds this frame; a local of the future would keep both, and `fn`'s arguments, alive
    # till a full collection (asyncio.to_thread leaves no such cycle).
    answer: list[asyncio.Future[_T]] = [loop.create_future()]
    claim = _thread.allocate_lock()  # taken by whoever runs `fn`: once, in a worker or here
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)

    def give(result: _T) -> None:
        if answer and not answer[0].done():  # (not cancelled meanwhile)
            answer[0].set_result(result)

    def fail(exc: BaseException) -> None:
        if answer and not answer[0].done():
            answer[0].set_exception(exc)

    def hand(outcome: Callable[[Any], None], value: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone: exiting
            loop.call_soon_threadsafe(outcome, value)

    def once() -> None:
        if not claim.acquire(blocking=False):
            return  # run here already: its worker could not be started
        try:
            result = call()
        except BaseException as exc:
            hand(fail, exc)
        else:
            hand(give, result)

    try:
        loop.run_in_executor(None, once)
    except RuntimeError:
        # No worker could be started ("can't start new thread": a process or memory
        # limit). The executor keeps the call all the same, and a later command's worker
        # would run it: this command answered as failed, its write done unseen (never
        # shown in a buffer). It runs here instead, unless a worker took it meanwhile.
        if claim.acquire(blocking=False):
            log.warning("no worker thread for a command: it runs on the event loop")
            return call()
    try:
        return await answer[0]
    finally:
        answer.clear()


COMMANDS = (
    "memory.add",
    "memory.update",
    "memory.forget",
    "memory.list",
    "memory.merge",
    "memory.move",
    "memory.clear",
    "memory.path",
    "memory.reload",
    "memory.doctor",
    "memory.inject",
    "memory.sync",
    "memory.import",
    "memory.export",
    "memory.propose",
    "memory.inbox",
    "memory.accept",
    "memory.reject",
    "memory.reveal",
)
APPLY_TIMEOUT = 5.0
"""Seconds to wait for the client's answer to ``workspace/applyEdit``."""
CHANGE_TIMEOUT = 3.0
"""Seconds to wait, once the client applied an edit, for the ``didChange`` showing it."""
REFUSED_SETTLE = 0.5
"""Seconds to wait, after a refusal, for the ``didChange`` that may explain it."""
BEHIND_MESSAGE = (
    "this buffer lacks a change that memory.{command} wrote to the file; saving it "
    "would undo that change — revert the buffer to reload it"
)
CONFIRM_TIMEOUT = 600.0
CLEAR_CANNOT_ASK = (
    "memory.clear needs a client that can ask for confirmation "
    "(window/showMessageRequest); nothing was changed."
)
CLEAR_DECLINED = "memory.clear was not confirmed; nothing was changed."
URI_MESSAGE = "uri must be a string: a workspace folder or a file in it (a file URI or a path)."


def argument(command: str, args: tuple[Any, ...]) -> dict[str, Any]:
    """The command's one JSON object argument (none at all counts as ``{}``)."""
    if not args:
        return {}
    first = args[0]
    if not isinstance(first, Mapping):
        raise JsonRpcInvalidParams(
            f"{command} takes one JSON object argument, not {type(first).__name__}."
        )
    return dict(first)


def runtime_for(
    ls: MemoryServer, command: str, arg: Mapping[str, Any]
) -> MemoryRuntime | MemoryResult:
    """The project a command's ``uri`` picks (default: the first workspace folder).

    A ``uri`` naming a path that does not exist outside every workspace folder
    picks nothing: the answer is then the command's ``MemoryResult`` error, so
    no project is ever created from a typo (SPEC §1). The store of a project
    whose ``.pi`` leads out of it is judged first: it names that project, and
    gets its exact refusal, even when the link dangles. A ``uri`` that is not a string
    (``null`` is no ``uri``) is refused, not ignored: the command must not run on the
    default project instead of the one its caller meant.
    """
    uri = arg.get("uri")
    if uri is not None and not isinstance(uri, str):
        return _refused(ls, command, arg, URI_MESSAGE)
    path: Path | None = None
    if uri:
        fs = path_of_uri(uri) if "://" in uri else uri
        path = Path(fs) if fs else None
    found = ls.projects.runtime_for_command(path)
    return _refused(ls, command, arg, found) if isinstance(found, str) else found


def _refused(ls: MemoryServer, command: str, arg: Mapping[str, Any], error: str) -> MemoryResult:
    """The ``MemoryResult`` error of a command whose ``uri`` picks no project."""
    scope, _ = check_scope(arg.get("scope"))
    result = ls.projects.default_runtime().result(command.removeprefix("memory."), scope)
    result["project"] = []  # the default project's notes are not this uri's
    result["error"] = error
    return result


async def execute(ls: MemoryServer, command: str, args: tuple[Any, ...]) -> Any:
    """Run one ``memory.*`` command and return its result."""
    arg = argument(command, args)
    if command == "memory.reveal":  # the editor's own: no project, no store
        from memory_ls.server import code_actions

        return await code_actions.reveal(ls, arg)
    _follow_paths(ls)  # a buffer's path may lead elsewhere now: judged before it is picked
    runtime = runtime_for(ls, command, arg)
    name = command.removeprefix("memory.")
    if not isinstance(runtime, MemoryRuntime):  # the uri names no project
        error = runtime.get("error", "")
        if name == "import":
            return {"added": [], "skipped": [], "refused": [], "error": error}
        if name == "export":
            return {
                "path": "",
                "status": "current",
                "changed": False,
                "message": error,
                "error": error,
            }
        return runtime
    if name == "list":
        # Validated as every other entry point does (SPEC §3): `scope` echoed, a bad one refused.
        return runtime.run("list", arg)
    if name == "path":
        return runtime.path_info()
    if name == "inject":
        return runtime.inject()
    if name == "doctor":
        return runtime.doctor_result()
    if name in ("propose", "inbox", "accept", "reject"):
        from memory_ls.server import review  # it builds on this module

        return await review.execute(ls, runtime, name, arg)
    if name == "reload":
        reloaded = runtime.reload_result()
        ls.projects.invalidate()
        publishing.refresh_all(ls)
        return reloaded
    if name == "sync":
        return await _sync(ls, runtime, arg)
    if name == "import":
        return await _import(ls, runtime, arg)
    if name == "export":
        return await _export(ls, runtime, arg)
    return await _mutate(ls, runtime, name, arg)


async def _sync(ls: MemoryServer, runtime: MemoryRuntime, arg: dict[str, Any]) -> SyncResult:
    """``memory.sync``: the store's git sync (SPEC §14), off the event loop, with progress.

    The global store unless ``scope`` says ``project``. It holds the store's
    turn, so commands on that store wait; an open buffer of it is brought up to
    date like after any command (a buffer with unsaved edits gets the sync's
    change merged into its own text, note by note).
    """
    # Here, not at the top: a server that never syncs does not start up with git's module
    # (issue 11's cold start).
    from memory_ls.store.git import failed_sync
    from memory_ls.store.git import sync as git_sync

    scope, error = check_scope(arg.get("scope", "global"))
    refusal = error or runtime.refusal(scope)
    if refusal is not None:
        result = failed_sync(scope, refusal)
    else:
        path = runtime.paths[scope]
        folder = runtime.agent_dir if scope == "global" else runtime.project_root
        shows = bool(ls.capability("window.work_done_progress"))
        progress = WorkProgress(ls, f"Syncing the {scope} memory with git" if shows else None)
        try:
            async with ls.open_buffers.turn([path]):
                before = runtime.view(scope).file.content
                result = await in_thread(
                    git_sync,
                    scope,
                    folder,
                    path,
                    lambda real: runtime.store_refusal(scope, real),
                )
                ls.projects.invalidate()
                after = runtime.view(scope).file.content
                change = BufferChange(
                    "sync",
                    before,
                    after,
                    functools.partial(_merged_into, before, after),
                    functools.partial(_file_text, runtime, scope),
                )
                await sync_buffers(ls, runtime, scope, change)
        finally:
            progress.finish()
        publishing.refresh_all(ls)
    kind = lsp.MessageType.Error if "error" in result else lsp.MessageType.Info
    with contextlib.suppress(Exception):  # no transport: the result still says it
        ls.window_show_message(
            lsp.ShowMessageParams(type=kind, message=f"Memory: {sync_summary(result)}")
        )
    return result


def _merged_into(before: str, after: str, buffer: str) -> Change:
    """What a sync did to the file (``before`` -> ``after``), merged into a buffer's own text."""
    merged = merge_notes(before, buffer, after)
    if not merged.clean or merged.text is None:
        return Change(buffer, False, error=merged.reason)
    return Change(merged.text, merged.text != buffer)


def _path_field(runtime: MemoryRuntime, value: str) -> Path:
    """A path or ``file:`` URI from a command's field; a relative path is taken from the
    project root (a server has no current directory of its own)."""
    fs = path_of_uri(value) if "://" in value else os.path.expanduser(value)
    path = Path(fs or value)
    return path if path.is_absolute() else runtime.project_root / path


async def _import(ls: MemoryServer, runtime: MemoryRuntime, arg: dict[str, Any]) -> ImportResult:
    """``memory.import`` (SPEC §15): read every file, then one write, shown in an open buffer."""
    from memory_ls.store.bridges import read_import_files  # (at first use: the cold start)

    names, error = check_files(arg.get("files", arg.get("file")))
    fmt, format_error = check_format(arg.get("format"))
    scope, scope_error = check_scope(arg.get("scope"))
    propose = arg.get("propose", False)
    propose_error = None if isinstance(propose, bool) else PROPOSE_MESSAGE
    error = error or format_error or scope_error or propose_error or check_by(arg.get("by"))
    if error is None:
        files = read_import_files([_path_field(runtime, n) for n in names], fmt)
        error = files.error
    if error is not None:
        return {"added": [], "skipped": [], "refused": [], "error": error}
    candidates = files.candidates
    if propose:
        return await _import_proposals(ls, runtime, candidates, scope, arg.get("by"))

    def replay(text: str) -> Change:  # the same import, on a buffer with unsaved edits
        plan = plan_import(text, candidates)
        return Change(plan.content, plan.changed and not plan.over_cap)

    async with ls.open_buffers.turn([runtime.paths[scope]]):
        before = runtime.view(scope).file.content
        # In a worker thread, as every write: waiting for another process's lock must
        # not stop this server from answering meanwhile.
        result = await in_thread(runtime.import_notes, candidates, scope)
        ls.projects.invalidate()
        after = runtime.view(scope).file.content
        change = BufferChange(
            "import", before, after, replay, functools.partial(_file_text, runtime, scope)
        )
        await sync_buffers(ls, runtime, scope, change)
    publishing.refresh_all(ls)
    return result


async def _import_proposals(
    ls: MemoryServer, runtime: MemoryRuntime, candidates: list[str], scope: Scope, by: object
) -> ImportResult:
    """``memory.import`` with ``propose``: one inbox write, the store untouched (SPEC §12)."""
    from memory_ls.core.inbox import clean_by
    from memory_ls.server import review  # it builds on this module
    from memory_ls.store.review import Review

    # In a worker thread: the inbox write may wait for another process's lock.
    review_of = Review(runtime)
    proposed = await in_thread(
        review_of.import_proposals, candidates, scope, clean_by(by, ls.client_name)
    )
    result = proposed[0]
    if result["added"]:
        review.inbox_changed(ls)  # lenses, diagnostics and the memory/inbox counts
    return result


async def _export(ls: MemoryServer, runtime: MemoryRuntime, arg: dict[str, Any]) -> ExportResult:
    """``memory.export`` (SPEC §15): the block of ``to`` (default: the project's AGENTS.md)."""
    to, check = arg.get("to"), arg.get("check", False)
    error = None
    if to is not None and (not isinstance(to, str) or not to.strip()):
        error = TO_MESSAGE
    elif not isinstance(check, bool):
        error = CHECK_MESSAGE
    target = runtime.project_root / "AGENTS.md" if not to else _path_field(runtime, str(to))
    if error is not None:
        return {
            "path": str(target),
            "status": "current",
            "changed": False,
            "message": error,
            "error": error,
        }
    # As named: the runtime follows its symlinks (CLAUDE.md -> AGENTS.md stays a link)
    # and refuses one that leads into a store or out of the project.
    # In a worker thread: the write waits for the target folder's lock.
    result = await in_thread(runtime.export_to, target, check=check)
    if check and "error" not in result:
        result["message"] = check_message(result["status"], str(target))
    publishing.refresh_all(ls)
    return result


async def _mutate(
    ls: MemoryServer, runtime: MemoryRuntime, action: str, arg: dict[str, Any]
) -> MemoryResult:
    request, error = read_request(action, arg)
    scope = request.scope
    # Ask only when the clear could happen: a bad scope, read-only or untrusted is refused as is.
    # Asked before taking the store's turn: the user may take minutes to answer.
    if action == "clear" and error is None and runtime.refusal(scope) is None:
        asked_about = runtime.canonical(scope)
        refusal = await _confirm_clear(ls, runtime, scope)
        if refusal is None and (now := runtime.canonical(scope)) != asked_about:
            # A folder link on the way pointed elsewhere while the user read the question:
            # "Clear" was said to the notes of the file asked about, not to this one's.
            refusal = clear_moved(
                "memory.clear",
                display_path(asked_about),
                display_path(runtime.paths[scope]),
                display_path(now),
            )
        if refusal:
            return runtime.result("clear", scope, error=refusal)
    stores = request.stores()
    async with ls.open_buffers.turn(runtime.paths[s] for s in stores):
        before = {s: runtime.view(s).file.content for s in stores}
        # In a worker thread: waiting for another process's lock (up to its timeout)
        # must not stop this server from answering hovers and diagnostics meanwhile.
        result = await in_thread(runtime.run, action, arg)
        ls.projects.invalidate()
        if "error" not in result:
            for s in stores:
                change = BufferChange(
                    action,
                    before[s],
                    runtime.view(s).file.content,
                    request.change(s),  # replayed on a buffer with unsaved edits
                    functools.partial(_file_text, runtime, s),
                )
                await sync_buffers(ls, runtime, s, change)
    publishing.refresh_all(ls)
    return result


def _file_text(runtime: MemoryRuntime, scope: Scope) -> str:
    return runtime.view(scope).file.content


@dataclass(frozen=True, slots=True)
class BufferChange:
    """What one command wrote to one store, to be shown in that store's open buffer."""

    action: str
    before: str
    """The file's text before the command."""
    after: str
    """The file's text the command wrote."""
    transform: Callable[[str], Change]
    """The command's change applied to any text (a buffer with unsaved edits)."""
    file_text: Callable[[], str]
    """The file's text now."""

    @property
    def behind_message(self) -> str:
        """The ``buffer-behind-file`` message for a buffer that lacks this change."""
        return BEHIND_MESSAGE.format(command=self.action)

    def target(self, buffer: str) -> str | None:
        """``buffer`` with the change, or ``None`` when it holds the change already.

        A buffer that matched the file takes the file's new text; one with unsaved
        edits gets the change applied to its own text. A change that no longer
        applies there (e.g. the user deleted that note) counts as held, and so does
        any change to a buffer equal to the file as it is now: saving it would undo
        nothing (another command wrote since, or a save, maybe of the same file open
        under another URI, put the old text back).
        """
        if buffer == self.after or buffer == self.file_text():
            return None
        if buffer == self.before:
            return self.after
        change = self.transform(buffer)
        if change.error or not change.changed or change.content == buffer:
            return None
        return change.content

    def held_by(self, buffer: str) -> bool:
        """Whether ``buffer`` holds the change (saving it would not undo it)."""
        return self.target(buffer) is None


class OpenBuffers:
    """The order of commands per store, and what each open buffer lacks (SPEC §7).

    Commands that change the same store take turns (one store lock each), so each
    computes its buffer edit against the buffer as the previous command left it.
    """

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._changed: dict[str, asyncio.Event] = {}
        self.missing: dict[str, list[BufferChange]] = {}
        """Per document uri: changes written to its file that the buffer lacks."""
        self.repointed: dict[str, Repointed] = {}
        """Per document uri: its path leads to another file than the one its text came
        from (a symlinked folder pointed elsewhere), and the buffer is not that file's
        text (:func:`follow_file`)."""

    @contextlib.asynccontextmanager
    async def turn(self, paths: Iterable[Path]) -> AsyncIterator[None]:
        """Wait for the turn of every store in ``paths``, and hold it.

        The locks are taken in one fixed order (by path), so a ``move``, which
        holds two, cannot deadlock with a command holding the other one.
        """
        async with contextlib.AsyncExitStack() as stack:
            for key in sorted({canonical_path(p) for p in paths}):
                await stack.enter_async_context(self._locks.setdefault(key, asyncio.Lock()))
            yield

    def changed(self, uri: str) -> None:
        """The buffer changed (or closed): wake whoever waits on it."""
        event = self._changed.pop(uri, None)
        if event is not None:
            event.set()

    async def wait(self, uri: str, done: Callable[[], bool], timeout: float) -> bool:
        """Wait (at most ``timeout`` s) until ``done()``, checked on each change of the buffer."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not done():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            event = self._changed.setdefault(uri, asyncio.Event())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), remaining)
        return True


def buffer_changed(ls: MemoryServer, doc: MemoryDocument) -> None:
    """After a ``didChange``: wake waiting commands; drop the changes the buffer now holds.

    A buffer marked as opened from another file than its path leads to now keeps its
    mark until its text is that file's (reverted): it is then that file's buffer.
    """
    ls.open_buffers.changed(doc.uri)
    moved = ls.open_buffers.repointed.get(doc.uri)
    if moved is not None:
        if file_holds_buffer(moved.leads_to, doc.text()):
            _adopt(ls, doc)
            publishing.publish(ls, doc)
        return
    missing = ls.open_buffers.missing.get(doc.uri)
    if not missing:
        return
    text = doc.text()
    still = [c for c in missing if not c.held_by(text)]
    if len(still) != len(missing):
        _set_missing(ls, doc, still)


def buffer_closed(ls: MemoryServer, uri: str) -> None:
    """After a ``didClose``: a reopened buffer is read from the file again."""
    ls.open_buffers.changed(uri)
    ls.open_buffers.missing.pop(uri, None)
    ls.open_buffers.repointed.pop(uri, None)


def _set_missing(ls: MemoryServer, doc: MemoryDocument, changes: list[BufferChange]) -> None:
    if changes:
        ls.open_buffers.missing[doc.uri] = changes
    else:
        ls.open_buffers.missing.pop(doc.uri, None)
    _show_marks(ls, doc)


def _show_marks(ls: MemoryServer, doc: MemoryDocument) -> None:
    """The document's ``buffer-behind-file`` messages, from what its buffer lacks.

    A buffer whose path leads to another file than its text came from has that one
    mark: the changes it lacks were written to the file it came from, which a save
    no longer reaches (they show again if its path leads back there).
    """
    found = ls.document(doc.uri)
    if found is None:
        return
    moved = ls.open_buffers.repointed.get(doc.uri)
    if moved is not None:
        found.state.behind = [moved.message]
    else:
        changes = ls.open_buffers.missing.get(doc.uri, [])
        found.state.behind = list(dict.fromkeys(c.behind_message for c in changes))


def _adopt(ls: MemoryServer, doc: MemoryDocument) -> None:
    """The buffer is the buffer of the file its path leads to now (its text is that
    file's, or it was saved there): the marks of the file it came from are dropped."""
    ls.open_buffers.repointed.pop(doc.uri, None)
    ls.open_buffers.missing.pop(doc.uri, None)
    _show_marks(ls, doc)


def follow_file(
    ls: MemoryServer, doc: MemoryDocument, moved: tuple[str, str] | None, saved: bool = False
) -> None:
    """Judge an open buffer whose path leads to another file than before (``moved``:
    ``(before, now)``), or that is marked as opened from another file.

    Its path leads back to the file its text came from: the mark goes (the changes it
    lacks from that file show again). Its text is the new file's: it is that file's
    buffer, unmarked. Otherwise it is marked ``buffer-behind-file`` (saving it would
    overwrite that file), with one warning per file it is found leading to; commands
    leave it unedited (:func:`sync_buffers`). ``saved``: the editor has just written it
    to its path, so the file now holds it (a warning says so when that is where the
    move was first seen).
    """
    buffers = ls.open_buffers
    was = buffers.repointed.get(doc.uri)
    now = ls.projects.file_of(doc.uri)
    if now is None:
        return
    origin = was.opened_from if was is not None else moved[0] if moved is not None else now
    warning = None
    if origin == now:
        buffers.repointed.pop(doc.uri, None)
        _show_marks(ls, doc)
    elif saved:
        _adopt(ls, doc)
        if was is None or was.leads_to != now:
            warning = Repointed(origin, now).saved_message
    else:
        text = encoded(doc.text())
        mark = repointed_mark(origin, now, text, read_for(now, text))
        if mark is None:
            _adopt(ls, doc)
        else:
            buffers.repointed[doc.uri] = mark
            _show_marks(ls, doc)
            if was is None or was.leads_to != now:
                warning = mark.message
    publishing.publish(ls, doc)
    if warning is not None:
        _warn(ls, f"{doc.path}: {warning}")


def _warn(ls: MemoryServer, message: str) -> None:
    try:
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=message))
    except Exception:  # no transport: the diagnostic still says it
        log.warning("%s", message)


def _follow_paths(ls: MemoryServer) -> None:
    """Where each open buffer's path leads, looked at again (``document_sync.follow_paths``)."""
    from memory_ls.server import document_sync  # it builds on this module

    document_sync.follow_paths(ls)


async def sync_buffers(
    ls: MemoryServer, runtime: MemoryRuntime, scope: Scope, change: BufferChange
) -> None:
    """Show a command's change to a store in every open buffer of it (:func:`sync_buffer`).

    The file may be open under more than one URI (through a symlinked folder and by its
    real path): each buffer is brought up to date on its own terms (its text, unsaved
    edits and version), one after another in the order they were opened, each edit
    computed once the one before was answered and shown (a client that shares one
    text between the two then finds the second holding the change already). A buffer
    that refuses is marked ``buffer-behind-file`` alone; the others still get the edit.

    Where each buffer's path leads is looked at first: a buffer opened from another file
    (its path runs through a symlinked folder pointed here since) holds that file's
    text, not this one's, and is left marked, never edited (the edit would mix two
    files' notes in it); one opened from this file whose path leads elsewhere now is
    not this store's buffer any more.
    """
    if change.after == change.before:
        return
    _follow_paths(ls)
    for doc in ls.projects.open_stores(runtime, scope):
        if doc.uri in ls.open_buffers.repointed:
            continue
        await sync_buffer(ls, doc, change)


async def sync_buffer(ls: MemoryServer, doc: MemoryDocument, change: BufferChange) -> None:
    """Show a command's change in an open buffer without losing unsaved edits.

    The edit is computed against the buffer's latest text and carries its
    version (where the client has versioned edits); the command waits for the
    client's answer and the ``didChange`` that shows the change. A refused edit
    is tried once more against the buffer's text then; a buffer that still
    lacks the change gets ``buffer-behind-file`` and a warning.
    """

    def closed() -> bool:
        return not ls.is_open(doc)

    def held() -> bool:
        return closed() or change.held_by(doc.text())

    enc = ls.analysis.encoding
    for attempt in (1, 2):
        if held():
            return
        if not ls.can_apply_edit():
            break
        new = change.target(doc.text())
        edit = None if new is None else replacing_edit(doc.lines, new, doc.eol, enc)
        if edit is None:
            return
        version = doc.version
        answer = await _apply(ls, doc, edit, change.action)
        if answer == "applied":
            # Wait for the didChange that shows it; a late one still clears the diagnostic.
            if await ls.open_buffers.wait(doc.uri, held, CHANGE_TIMEOUT):
                return
            break
        if answer == "no answer" or attempt == 2:
            break
        # A refusal is most often a buffer that moved on: let its didChange arrive.
        await ls.open_buffers.wait(
            doc.uri, functools.partial(_moved_on, doc, version), REFUSED_SETTLE
        )
    # Closed while its edit was out: no buffer lacks the change (one opened again is read
    # again), and a mark kept under its uri would land on the next buffer of that uri.
    if closed():
        return
    _behind(ls, doc, change)


def _moved_on(doc: MemoryDocument, version: int | None) -> bool:
    return doc.version != version


async def _apply(ls: MemoryServer, doc: MemoryDocument, edit: lsp.TextEdit, action: str) -> str:
    """Send one edit: ``applied``, ``refused`` or ``no answer``."""
    params = lsp.ApplyWorkspaceEditParams(
        edit=ls.workspace_edit(doc, [edit]), label=f"memory.{action}"
    )
    try:
        answer = await asyncio.wait_for(ls.workspace_apply_edit_async(params), APPLY_TIMEOUT)
    except TimeoutError:
        ls.log(f"memory.{action}: no answer to the edit of {doc.path}", lsp.MessageType.Warning)
        return "no answer"
    except asyncio.CancelledError:
        # The edit request was cancelled, not this command (``shutdown`` cancels the
        # server's own requests too): the write is done, so the command goes on to
        # answer what it wrote, with the buffer marked behind, instead of "canceled".
        task = asyncio.current_task()
        if task is None or task.cancelling():
            raise
        ls.log(f"memory.{action}: the edit of {doc.path} was cancelled", lsp.MessageType.Warning)
        return "no answer"
    except Exception as exc:  # an error response is a refusal too
        ls.log(f"memory.{action}: the edit of {doc.path} failed: {exc!r}", lsp.MessageType.Warning)
        return "refused"
    if answer is None or not answer.applied:
        reason = getattr(answer, "failure_reason", None) or "no reason given"
        ls.log(f"memory.{action}: the client refused the edit of {doc.path} ({reason})")
        return "refused"
    return "applied"


def _behind(ls: MemoryServer, doc: MemoryDocument, change: BufferChange) -> None:
    """The buffer lacks the change: say so on the document and in a warning."""
    _set_missing(ls, doc, [*ls.open_buffers.missing.get(doc.uri, []), change])
    publishing.publish(ls, doc)
    _warn(ls, f"{doc.path}: {change.behind_message}")


async def _confirm_clear(ls: MemoryServer, runtime: MemoryRuntime, scope: Scope) -> str | None:
    """Ask the user; the reason to refuse, or ``None`` when they confirmed."""
    caps = ls.client_capabilities.window
    if caps is None or caps.show_message is None:
        return CLEAR_CANNOT_ASK
    count = len(runtime.view(scope).parsed.bullets)
    params = lsp.ShowMessageRequestParams(
        type=lsp.MessageType.Warning,
        message=(
            f"Clear all {count} {scope} memory note(s) in {runtime.paths[scope]}? "
            "This cannot be undone."
        ),
        actions=[lsp.MessageActionItem(title="Clear"), lsp.MessageActionItem(title="Cancel")],
    )
    try:
        answer = await asyncio.wait_for(
            ls.window_show_message_request_async(params), CONFIRM_TIMEOUT
        )
    except Exception as exc:
        ls.log(f"memory.clear: no confirmation ({exc!r})", lsp.MessageType.Warning)
        return CLEAR_DECLINED
    if answer is None or answer.title != "Clear":
        return CLEAR_DECLINED
    return None


# -- registration ------------------------------------------------------------------


def register(ls: MemoryServer) -> None:
    """Every ``memory.*`` command."""
    for name in COMMANDS:
        ls.command(name)(_handler(name))


def _handler(name: str) -> Callable[..., Any]:
    """The handler of one command: anything unexpected is an ``InternalError`` naming it."""

    # pygls reads a command handler's annotations at run time (typing.get_type_hints), and
    # MemoryServer is only imported for type checking here: ``ls`` is known by its name.
    async def handler(ls: Any, *args: Any) -> Any:
        # The work is its own task, so that a cancel (pygls cancels this handler's task)
        # stops it only until it commits (in_thread); after that it is waited for.
        work = asyncio.ensure_future(execute(ls, name, args))
        try:
            try:
                return await asyncio.shield(work)
            except asyncio.CancelledError:
                if work.done() or work in _COMMITTED:
                    if (task := asyncio.current_task()) is not None:
                        _FINISHING.add(task)
                    return await work
                work.cancel()
                raise
        except JsonRpcException:
            raise
        except Exception as exc:
            log.exception("command %s failed", name)
            raise JsonRpcInternalError(f"{name} failed: {exc}") from None

    handler.__name__ = name.replace(".", "_")
    return handler
