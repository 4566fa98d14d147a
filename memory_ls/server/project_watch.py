"""What the project tree and the instruction files hold, cached for the editor (SPEC §13).

``stale-path`` and ``stale-script`` judge a note against what is on disk, and
``instruction-duplicate`` against AGENTS.md, CLAUDE.md & co. Typing must never
walk the tree or read those files, so each project (and each agent dir, for the
global store) has one :class:`Judge`: a :class:`~memory_ls.core.stale.ProjectSnapshot`
and an :class:`~memory_ls.core.instruction_duplicates.InstructionIndex`, with what
was judged against them cached by note text and key. A keystroke asks the judge
about the edited notes only (:mod:`memory_ls.server.diagnostics`); a miss is a few
regular expressions and one fuzzy scan of the instruction lines, never I/O.

A judge is built in a daemon thread (the walk of a big tree must not block the
event loop), warmed there with the notes of every open store it serves, and then
installed on the loop, which re-publishes. It is built again:

- when a store is opened (so a client without file watchers still sees the tree
  as it was when the store was opened), and on save where the client cannot watch;
- on ``workspace/didChangeWatchedFiles`` for a file or folder created or deleted
  in the project, or a change of a build file or an instruction file: the watchers
  are registered dynamically (:func:`register_watchers`), and a burst of events
  (a ``git checkout``) coalesces into one rebuild after :data:`REBUILD_DELAY`.

Until a store's first judge is installed it has none of these three findings: an
unknown tree flags nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from memory_ls.core.checks import Finding
from memory_ls.core.instruction_duplicates import (
    GLOBAL_INSTRUCTION_FILES,
    PROJECT_INSTRUCTION_FILES,
    InstructionIndex,
    InstructionLine,
    instruction_duplicate_finding,
    instruction_index,
    repeated_line,
    repeated_lines,
)
from memory_ls.core.notes import Bullet
from memory_ls.core.stale import (
    JUSTFILE_NAMES,
    MAKEFILE_NAMES,
    PACKAGE_FILES,
    Mention,
    ProjectSnapshot,
    note_mentions,
    skipped_folder,
    stale_mentions,
    stale_note_findings,
)
from memory_ls.server.background import in_daemon_thread
from memory_ls.server.protocol import CLIENT_TIMEOUT
from memory_ls.server.uris import path_of_uri, uri_of_path
from memory_ls.store.paths import real_path
from memory_ls.store.project_files import (
    global_instruction_texts,
    project_instruction_texts,
    project_snapshot,
)
from memory_ls.store.switches import switches_shortened

if TYPE_CHECKING:
    from memory_ls.server.documents import MemoryDocument
    from memory_ls.server.server import MemoryServer
    from memory_ls.server.workspace import DocumentInfo

log = logging.getLogger("memory_ls.server")

STALE_CODES = ("stale-path", "stale-script", "instruction-duplicate")
"""The codes a :class:`Judge` finds."""
WATCH_ID = "memory-ls-project-files"
"""The registration id of the project-tree watchers (the stores' own are separate)."""
REBUILD_DELAY = 0.1
"""Seconds of quiet after a watched-file event before the project is looked at again."""
REBUILD_MAX_WAIT = 1.0
"""Seconds a look may be pushed back by events that keep coming (a watch-mode build
writing a file every few milliseconds): then the project is looked at anyway."""
EVENTS_SORTED_LIMIT = 256
"""Events in one notification that are placed one by one; a larger batch (an
``npm install``, a checkout, a hostile client's 10,000) looks at every project again
instead: placing each event (parsing its URI, resolving symlinks) would hold the loop."""
FIRST_LOOK_WAIT = 1.0
"""Seconds a pull that cannot be repeated waits for a store's first look (see
:func:`first_look`)."""
RECENT_LIMIT = 2000
"""Judgements of typed text kept per generation (two generations are kept)."""

WATCHED_NAMES = tuple(
    dict.fromkeys(
        (
            *PACKAGE_FILES,
            *MAKEFILE_NAMES,
            *JUSTFILE_NAMES,
            *(p.rsplit("/", 1)[-1] for p in PROJECT_INSTRUCTION_FILES),
        )
    )
)
"""Files whose *change* (not only their creation or deletion) changes a judgement."""
MEMORY_FILE_NAMES = frozenset({"memory.md", "bytefly.json", "trust.json", "memory.inbox.jsonl"})
"""What the stores' own watchers report: such an event rechecks everything (document_sync)."""

FactsKey = tuple[str, str]
"""``("project", <root>)`` or ``("global", <agent dir>)``."""


class _TextCache:
    """Answers by text: the warmed ones for good, typed ones in two generations."""

    def __init__(self) -> None:
        self.base: dict[str, Any] = {}
        self._recent: dict[str, Any] = {}
        self._older: dict[str, Any] = {}

    def get(self, text: str, default: Any = None) -> Any:
        for cache in (self.base, self._recent, self._older):
            if text in cache:
                return cache[text]
        return default

    def put(self, text: str, value: Any) -> None:
        if len(self._recent) >= RECENT_LIMIT:
            self._older, self._recent = self._recent, {}
        self._recent[text] = value


_MISSING: Any = object()


class Judge:
    """One state of a project's files, and the judgements made against it (by note text
    for stale mentions, by key for instruction repeats)."""

    def __init__(self, snapshot: ProjectSnapshot | None, index: InstructionIndex | None) -> None:
        self.snapshot = snapshot
        """``None`` for the global store: no tree to judge paths against."""
        self.index = index if index is not None and index.lines else None
        self.ready: set[str] = set()
        """The open documents it was warmed for: only those are judged by it."""
        self._mentions = _TextCache()
        self._stale = _TextCache()
        self._repeats = _TextCache()

    def mentions_of(self, text: str, warm: bool = False) -> tuple[Mention, ...]:
        """A note's path and script mentions (cached by text)."""
        got: tuple[Mention, ...] | None = self._mentions.get(text)
        if got is None:
            got = note_mentions(text)
            self._store(self._mentions, text, got, warm)
        return got

    def stale_of(self, text: str, warm: bool = False) -> tuple[tuple[Mention, str], ...]:
        """A note's stale mentions and their messages (cached by text)."""
        if self.snapshot is None:
            return ()
        got: tuple[tuple[Mention, str], ...] | None = self._stale.get(text)
        if got is None:
            mentions = self.mentions_of(text, warm)
            got = tuple(stale_mentions(text, mentions, self.snapshot)) if mentions else ()
            self._store(self._stale, text, got, warm)
        return got

    def repeat_of(self, key: str, warm: bool = False) -> tuple[InstructionLine, float] | None:
        """The instruction line a note's key repeats, and the score (cached by key)."""
        if self.index is None or not key:
            return None
        got = self._repeats.get(key, _MISSING)
        if got is _MISSING:
            got = repeated_line(key, self.index)
            self._store(self._repeats, key, got, warm)
        return got  # type: ignore[no-any-return]

    @staticmethod
    def _store(cache: _TextCache, text: str, value: Any, warm: bool) -> None:
        if warm:
            cache.base[text] = value
        else:
            cache.put(text, value)

    def warm(self, texts: Iterable[str], keys: Iterable[str], old: Judge | None) -> None:
        """Judge these notes ahead (in the build thread), reusing ``old``'s mentions."""
        if old is not None and self.snapshot is not None:
            for text in texts:
                if (mentions := old._mentions.get(text)) is not None:
                    self._mentions.base[text] = mentions
                self.stale_of(text, warm=True)
        elif self.snapshot is not None:
            for text in texts:
                self.stale_of(text, warm=True)
        if self.index is not None:
            # All at once: the keys of one length are scored against the lines of another
            # as one matrix (a note at a time: ~0.5 ms each against 6,400 lines).
            cold = [k for k in keys if k and self._repeats.get(k, _MISSING) is _MISSING]
            self._repeats.base.update(repeated_lines(cold, self.index))

    def findings(self, b: Bullet, line: str) -> list[Finding]:
        """The three codes' findings of one note (``line`` is the note's line).

        Called for every note when the judge is new: the warmed answers are looked up
        first, directly (most notes have nothing to report)."""
        out: list[Finding] = []
        if self.snapshot is not None:
            text = line[b.start : b.end]
            stale = self._stale.base.get(text)
            if stale is None:
                stale = self.stale_of(text)
            if stale:
                out.extend(stale_note_findings(b, stale, self.snapshot))
        if self.index is not None:
            hit = self._repeats.base.get(b.key, _MISSING)
            if hit is _MISSING:
                hit = self.repeat_of(b.key)
            if hit is not None:
                out.append(instruction_duplicate_finding(b, *hit))
        return out


def build_judge(
    key: FactsKey, texts: Sequence[str], keys: Sequence[str], old: Judge | None
) -> Judge:
    """Look at the project's files (or the agent dir's) and judge ``texts``/``keys`` ahead.

    Blocking I/O: run it in a thread. Never raises for a hostile tree (the store layer
    reads nothing through a symlink or from a FIFO, and stops a walk that is too long).
    """
    scope, where = key
    if scope == "project":
        root = Path(where)
        snapshot: ProjectSnapshot | None = project_snapshot(root)
        texts_by_path = project_instruction_texts(root)
    else:
        snapshot = None
        texts_by_path = global_instruction_texts(Path(where))
    judge = Judge(snapshot, instruction_index(texts_by_path) if texts_by_path else None)
    judge.warm(texts, keys, old)
    return judge


@dataclass(slots=True)
class _Entry:
    judge: Judge | None = None
    building: bool = False
    pending: bool = False
    """A build is scheduled (:func:`build_soon`) and has not started."""
    again: bool = False
    """Asked for again while a build ran: build once more when it ends."""
    due: float | None = None
    """The loop time by which the scheduled build starts, however many events follow."""
    watched_root: bool = False
    """A watcher was registered for this project's root (it lies outside every folder)."""
    waiters: list[asyncio.Future[None]] = field(default_factory=list)
    """Pulls waiting for the first judge (:func:`first_look`)."""

    def wake(self) -> None:
        """A look ended (or will not happen): the waiting pulls go on."""
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


@dataclass(slots=True)
class ProjectFiles:
    """Every project's (and agent dir's) :class:`Judge`, for the open stores."""

    entries: dict[FactsKey, _Entry] = field(default_factory=dict)
    registering: asyncio.Lock | None = None
    """Held while the tree watchers are (un)registered: folder changes in quick
    succession must not interleave, or the client is left with several registrations
    of one id (each reporting every event)."""
    request: Callable[[FactsKey], None] | None = None
    """Asks for a look at files no judge covers yet (set by the server: a build in the
    background), so a store whose project or agent dir changed (settings, folders) is
    judged without being opened again."""

    @staticmethod
    def key_of(info: DocumentInfo) -> FactsKey | None:
        """Which files judge a store's notes: its project's, or the agent dir's."""
        scope = info.scope
        if scope is None or info.runtime.store_refusal(scope) is not None:
            return None
        if scope == "project":
            return ("project", str(info.runtime.project_root))
        return ("global", str(info.runtime.agent_dir))

    def judge_for(self, uri: str, info: DocumentInfo) -> Judge | None:
        """The judge of an open store, once it was warmed for it (else ``None``: nothing
        is judged yet). A dictionary look-up: no I/O."""
        key = self.key_of(info)
        if key is None:
            return None
        entry = self.entries.get(key)
        if entry is None and self.request is not None:
            self.entries[key] = _Entry()
            self.request(key)
        judge = entry.judge if entry is not None else None
        return judge if judge is not None and uri in judge.ready else None


# -- wiring -----------------------------------------------------------------------------


def register(ls: MemoryServer) -> None:
    """Build a judge wherever a store needs one and none is there (see ``request``)."""
    ls.analysis.files.request = lambda key: build_soon(ls, key, 0.0)


def _files(ls: MemoryServer) -> ProjectFiles:
    return ls.analysis.files


def _docs_of(ls: MemoryServer, key: FactsKey) -> list[MemoryDocument]:
    files = _files(ls)
    return [doc for doc, state in ls.open_documents() if files.key_of(state.info) == key]


def opened(ls: MemoryServer, doc: MemoryDocument, info: DocumentInfo) -> None:
    """A store was opened: look at its project's files again (in the background)."""
    key = _files(ls).key_of(info)
    if key is None:
        return
    _files(ls).entries.setdefault(key, _Entry())
    build_soon(ls, key, 0.0)
    _watch_outside_folders(ls, key)


def saved(ls: MemoryServer, doc: MemoryDocument) -> None:
    """A store was saved: without file watchers, that is when the tree is looked at again."""
    if _can_watch(ls):
        return
    found = ls.document(doc.uri)
    key = _files(ls).key_of(found.state.info) if found is not None else None
    if key is not None and key in _files(ls).entries:
        build_soon(ls, key)


def closed(ls: MemoryServer, uri: str) -> None:
    """A store was closed: its judge no longer serves it; an unused one is dropped."""
    files = _files(ls)
    for key, entry in list(files.entries.items()):
        if entry.judge is not None:
            entry.judge.ready.discard(uri)
        if not entry.building and not _docs_of(ls, key):
            entry.wake()
            del files.entries[key]


def build_soon(ls: MemoryServer, key: FactsKey, delay: float = REBUILD_DELAY) -> None:
    """Build the key's judge again after ``delay`` (a pending build is pushed back)."""
    entry = _files(ls).entries.get(key)
    if entry is not None:
        entry.pending = True
        now = asyncio.get_running_loop().time()
        if entry.due is None:
            entry.due = now + REBUILD_MAX_WAIT
        delay = max(0.0, min(delay, entry.due - now))
    ls.timers.later("project-files", "\0".join(key), delay, lambda: _build(ls, key))


def _build(ls: MemoryServer, key: FactsKey) -> None:
    entry = _files(ls).entries.get(key)
    if entry is None:
        return
    entry.pending = False
    entry.due = None
    if entry.building:
        entry.again = True
        return
    docs = _docs_of(ls, key)
    if not docs:
        entry.wake()
        return
    entry.building = True
    texts: list[str] = []
    keys: list[str] = []
    for doc in docs:
        lines = doc.lines
        texts.extend(lines[b.line][b.start : b.end] for b in doc.bullets if b and not b.blank)
        keys.extend(doc.key_lines)
    uris = {doc.uri for doc in docs}
    old = entry.judge
    loop = asyncio.get_running_loop()

    def done(judge: Judge | None) -> None:
        entry.building = False
        entry.wake()
        if _files(ls).entries.get(key) is not entry:
            return  # dropped meanwhile (every store of it closed)
        if not _docs_of(ls, key):
            # Every store of it closed while it was looked at (`closed` cannot drop an
            # entry that is building): its snapshot of the tree would be kept for good.
            del _files(ls).entries[key]
            return
        if judge is not None:
            judge.ready = {uri for uri in uris if uri in ls.projects.documents}
            entry.judge = judge
            from memory_ls.server import publishing

            publishing.refresh_all(ls)
        if entry.again:
            entry.again = False
            build_soon(ls, key, 0.0)

    def work() -> None:
        try:
            # A big tree or build file keeps this thread in Python for a while: the loop
            # gets the GIL back after each of its system calls within the short interval.
            with switches_shortened():
                judge: Judge | None = build_judge(key, texts, keys, old)
        except Exception as exc:  # never expected: the store layer does not raise
            log.warning("project files of %s: %r", key[1], exc)
            judge = None
        with contextlib.suppress(RuntimeError):  # the loop is gone: exiting
            loop.call_soon_threadsafe(done, judge)

    in_daemon_thread(work, "memory-ls-project-files")


async def first_look(ls: MemoryServer, uri: str, limit: float = FIRST_LOOK_WAIT) -> None:
    """Wait (at most ``limit`` seconds, never blocking the loop) until the open store at
    ``uri`` has its first judge, when one is on its way. For a pull client that cannot
    be asked to pull again: its answer then holds the §13 findings from the start."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while (left := deadline - loop.time()) > 0:
        found = ls.document(uri)
        if found is None:
            return
        files = _files(ls)
        key = files.key_of(found.state.info)
        entry = files.entries.get(key) if key is not None else None
        if entry is None or (entry.judge is not None and uri in entry.judge.ready):
            return
        if not (entry.building or entry.pending or entry.again):
            return  # no look on its way (the last one failed): answer now
        waiter: asyncio.Future[None] = loop.create_future()
        entry.waiters.append(waiter)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(waiter, left)


# -- watched files ------------------------------------------------------------------------


def is_memory_file(uri: str) -> bool:
    """Whether a watched-file event is about a store, its settings, trust or inbox (the
    stores' own watchers), rather than about the project tree only."""
    if uri.startswith("file:") and "%" not in uri and not any(n in uri for n in _MEMORY_HINTS):
        return False  # no name of a memory file in it, even unquoted: no parse needed
    path = path_of_uri(uri) if uri.startswith("file:") else ""
    if not path:
        return True  # not a file this module can place: let the full recheck decide
    parts = Path(path).parts
    return parts[-1] in MEMORY_FILE_NAMES or ".pi" in parts


_MEMORY_HINTS = (*MEMORY_FILE_NAMES, ".pi")


def any_memory_file(changes: Sequence[lsp.FileEvent]) -> bool:
    """Whether any event may be about a memory file (:func:`is_memory_file`). In a batch
    larger than :data:`EVENTS_SORTED_LIMIT` a URI is not parsed: one that names a memory
    file anywhere (unquoted), or is not a ``file:`` one, counts as one. At worst one
    recheck too many, never a held loop."""
    if len(changes) <= EVENTS_SORTED_LIMIT:
        return any(is_memory_file(c.uri) for c in changes)
    for c in changes:
        uri = urllib.parse.unquote(c.uri) if "%" in c.uri else c.uri
        if not uri.startswith("file:") or any(n in uri for n in _MEMORY_HINTS):
            return True
    return False


def _under(key: FactsKey, path: str) -> bool:
    """Whether ``path`` (as written) lies in the key's project (always false for an agent
    dir's key: its files are named one by one)."""
    scope, where = key
    return scope == "project" and (path == where or path.startswith(where.rstrip(os.sep) + os.sep))


def _relevant(key: FactsKey, path: str, kind: lsp.FileChangeType) -> bool:
    """Whether an event about ``path`` can change the key's judgements."""
    scope, where = key
    if scope == "global":
        home = Path.home()
        watched = {str(home / p.removeprefix("~/")) for p in GLOBAL_INSTRUCTION_FILES}
        watched.add(str(Path(where) / "AGENTS.md"))
        return path in watched
    if not _under(key, path):
        return False
    rel = Path(os.path.relpath(path, where)).parts
    if not rel or rel == (".",):
        return False
    if "/".join(rel) in PROJECT_INSTRUCTION_FILES:
        return True  # .claude/CLAUDE.md is read, though the search skips .claude
    if rel[:2] != ("node_modules", ".bin") and any(skipped_folder(p) for p in rel[:-1]):
        return False  # the search never looks in there
    if kind != lsp.FileChangeType.Changed:
        return True  # a path mention can name any file or folder
    name = rel[-1]
    if name == "package.json":
        return True  # the root's or a workspace package's
    return len(rel) == 1 and name in WATCHED_NAMES


def _real(path: str) -> str | None:
    """``path`` with symlinks resolved, or ``None`` for one no file can have (a NUL byte
    from a client's URI): one bad event must not cost the others in its notification."""
    try:
        return real_path(path)
    except (OSError, ValueError):
        return None


def files_changed(ls: MemoryServer, changes: Sequence[lsp.FileEvent]) -> None:
    """Watched files changed: look again at each project (or agent dir) they concern."""
    entries = _files(ls).entries
    if not entries:
        return
    touched: set[FactsKey] = set()
    if len(changes) > EVENTS_SORTED_LIMIT:
        touched.update(entries)  # a burst: every project is looked at again, in a thread
    for change in changes:
        if len(touched) == len(entries):
            break  # a burst (`npm install`, `git checkout`): every project is looked at anyway
        path = path_of_uri(change.uri) if change.uri.startswith("file:") else ""
        if not path:
            continue
        for key in entries:
            if key in touched:
                continue
            if _relevant(key, path, change.type):
                touched.add(key)
            elif key[0] == "project" and not _under(key, path):
                # Another spelling of the path (a symlinked folder): as the server knows it.
                real = _real(path)
                if real is not None and real != path and _relevant(key, real, change.type):
                    touched.add(key)
    for key in touched:
        build_soon(ls, key)


def _can_watch(ls: MemoryServer) -> bool:
    return bool(ls.capability("workspace.did_change_watched_files.dynamic_registration"))


ALL_KINDS = lsp.WatchKind.Create | lsp.WatchKind.Change | lsp.WatchKind.Delete
TREE_KINDS = lsp.WatchKind.Create | lsp.WatchKind.Delete


def watchers_for(ls: MemoryServer, folders: Sequence[Path]) -> list[lsp.FileSystemWatcher]:
    """The project-tree watchers for ``folders``, and the global instruction files'.

    Every file or folder created or deleted (a path mention may name any), and
    changes of the build and instruction files; relative to each folder where the
    client supports relative patterns, else as plain globs (the client's own roots).
    """
    names = "{" + ",".join(WATCHED_NAMES) + "}"
    relative = bool(ls.capability("workspace.did_change_watched_files.relative_pattern_support"))
    out: list[lsp.FileSystemWatcher] = []
    if relative:
        for folder in folders:
            base = uri_of_path(folder)
            out.append(
                lsp.FileSystemWatcher(
                    glob_pattern=lsp.RelativePattern(base_uri=base, pattern="**/*"),
                    kind=TREE_KINDS,
                )
            )
            out.append(
                lsp.FileSystemWatcher(
                    glob_pattern=lsp.RelativePattern(base_uri=base, pattern=f"**/{names}"),
                    kind=lsp.WatchKind.Change,
                )
            )
    else:
        out.append(lsp.FileSystemWatcher(glob_pattern="**/*", kind=TREE_KINDS))
        out.append(lsp.FileSystemWatcher(glob_pattern=f"**/{names}", kind=lsp.WatchKind.Change))
    home = Path.home()
    agent = ls.projects.default_runtime().agent_dir
    globals_ = [home / p.removeprefix("~/") for p in GLOBAL_INSTRUCTION_FILES]
    globals_.append(agent / "AGENTS.md")
    for path in globals_:
        if relative:
            pattern: Any = lsp.RelativePattern(base_uri=uri_of_path(path.parent), pattern=path.name)
        else:
            pattern = str(path)
        out.append(lsp.FileSystemWatcher(glob_pattern=pattern, kind=ALL_KINDS))
    return out


async def _register(ls: MemoryServer, reg_id: str, watchers: list[lsp.FileSystemWatcher]) -> None:
    params = lsp.RegistrationParams(
        registrations=[
            lsp.Registration(
                id=reg_id,
                method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=lsp.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
            )
        ]
    )
    try:
        await asyncio.wait_for(ls.client_register_capability_async(params), CLIENT_TIMEOUT)
    except Exception as exc:  # refused or unanswered: the tree is looked at on open/save
        ls.log(f"memory-ls: could not watch the project tree: {exc!r}", lsp.MessageType.Warning)


async def register_watchers(ls: MemoryServer) -> None:
    """Watch the project tree where the client allows dynamic registration (else the tree
    is looked at again when a store is opened or saved: docs/lsp.md)."""
    if not _can_watch(ls):
        return
    async with _registering(ls):
        await _register(ls, WATCH_ID, watchers_for(ls, ls.projects.folders or [Path.cwd()]))


def _registering(ls: MemoryServer) -> asyncio.Lock:
    files = _files(ls)
    if files.registering is None:
        files.registering = asyncio.Lock()
    return files.registering


def folders_changed(ls: MemoryServer) -> None:
    """Workspace folders were added or removed: watch the new set instead."""
    if not _can_watch(ls):
        return

    async def again() -> None:
        gone = lsp.UnregistrationParams(
            unregisterations=[
                lsp.Unregistration(id=WATCH_ID, method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
            ]
        )
        async with _registering(ls):  # one unregister-register pair at a time
            try:
                await asyncio.wait_for(ls.client_unregister_capability_async(gone), CLIENT_TIMEOUT)
            except Exception as exc:  # the old watchers stay: more events, never fewer
                log.info("could not unregister the project watchers: %r", exc)
            await _register(ls, WATCH_ID, watchers_for(ls, ls.projects.folders or [Path.cwd()]))

    asyncio.get_running_loop().create_task(again())


def _watch_outside_folders(ls: MemoryServer, key: FactsKey) -> None:
    """A store of a project outside every workspace folder: watch that project too."""
    scope, where = key
    entry = _files(ls).entries[key]
    if scope != "project" or entry.watched_root or not _can_watch(ls):
        return
    root = Path(where)
    for folder in ls.projects.folders:
        real = Path(real_path(folder))
        if root == real or real in root.parents:
            return  # the folder's watchers see the whole project
    if not ls.capability("workspace.did_change_watched_files.relative_pattern_support"):
        return  # plain globs already match wherever the client watches
    entry.watched_root = True
    tree = watchers_for(ls, [root])[:2]
    asyncio.get_running_loop().create_task(_register(ls, f"{WATCH_ID}:{where}", tree))
