"""The one object that owns both stores: paths, trust, config, cache and every write.

The CLI, the language server and the MCP server all call :class:`MemoryRuntime`;
none of them touches a store file on its own. Each public method returns plain
data (a :data:`MemoryResult` and friends), never raises for a refused action.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import stat
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from memory_ls.core.notes import ParsedFile, parse, parse_after
from memory_ls.core.recall import RecallPlan, recall_body, recall_plan
from memory_ls.core.records import field, record
from memory_ls.core.text import display_path
from memory_ls.store.config import load_config
from memory_ls.store.facts import file_type_at
from memory_ls.store.files import (
    LockedFolder,
    LockRequest,
    Stamp,
    StoreFile,
    StoreRefused,
    oversize_message,
    read_store,
    rewrite_store,
    stamp_from,
    stamp_of,
    store_lock,
    store_locks,
    unchanged,
    unreachable_store,
    write_failed_message,
    write_refusal,
    write_store,
)
from memory_ls.store.paths import (
    agent_dir_for,
    canonical_path,
    global_store_path,
    no_project_message,
    project_folder,
    project_folder_refusal,
    project_root_for,
    project_store_path,
    shared_file_refusal,
)
from memory_ls.store.trust import Stamps, decide_trust

RACY_DECISION_STANDS = 0.25
"""Seconds a trust and configuration decision stands while a stamp in its key is racy
(:data:`~memory_ls.store.files.RACY_MARGIN_NS`) and every stamp is as it was: a path
that changed in any way that shows is decided again at once, a same-size rewrite within
its timestamp tick at the first question after this. Deciding at every question instead
made each of a request's several questions a decision of dozens of system calls, and
beside a thread holding the interpreter (the project look reading a big Makefile) each
call waits its switch interval: a hover took 0.3 s for the first seconds of a project
whose folders had just been made. The editor reuses its looks for as long
(``publishing.DISK_LOOK_REUSE``)."""


TYPE_CHECKING = False  # not `typing`'s: the read verbs do without importing it (~3.5 ms)
if TYPE_CHECKING:
    # Types only. The actions, the bridges and the checks are imported where a write,
    # an import or a check needs them: `inject` and `list` read, and pay for reading only.
    from memory_ls.core.actions import Change, Request
    from memory_ls.core.bridges import ImportPlan
    from memory_ls.core.checks import Finding
    from memory_ls.core.config import EffectiveConfig
    from memory_ls.core.models import (
        DoctorReport,
        DoctorResult,
        ExportResult,
        ImportResult,
        InjectResult,
        MemoryResult,
        PathInfo,
        ReloadResult,
        Scope,
    )
    from memory_ls.core.trust import TrustDecision


def same_file_message(path: Path) -> str:
    """Refusal to move a note between two scopes that are one file."""
    return (
        "The project and global memory are the same file, so a note cannot move: "
        f"{display_path(path)}"
    )


def _followed_stamp(path: str) -> Stamp | None:
    """The stamp of what ``path`` leads to (symlinks followed); ``None`` when nothing."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return stamp_from(st)


def _held_names(path: str) -> tuple[int, int, int, int, frozenset[str]] | Stamp | None:
    """What the folder ``path`` leads to holds: its identity and its entries' names.

    For the folders the stores live in (``.pi`` and the agent dir), in the settings'
    key instead of their stamp, which each write of a store changes (a temporary
    created, then renamed over the store). What trust and configuration read there is
    which names exist (a trust-requiring resource, ``bytefly.json``) and, keyed apart by
    their own stamps, those files' texts: an entry that comes or goes changes the
    names; a folder swapped for another, or for a symlink (even to the same folder,
    moved out of the project), changes the identity of what the path names or leads to.
    Anything that cannot be listed is keyed by its stamp, as before.
    """
    try:
        named = os.lstat(path)
        st = os.stat(path)
        names = frozenset(os.listdir(path))
    except (OSError, ValueError):
        return _followed_stamp(path)
    return (named.st_ino, stat.S_IFMT(named.st_mode), st.st_dev, st.st_ino, names)


@record(frozen=False)
class StoreView:
    """The cached read of one store, and the last good notes it had."""

    file: StoreFile
    parsed: ParsedFile
    last_good: list[str] = field(default_factory=list)

    @property
    def readable(self) -> bool:
        """True when the store may be read (it may still refuse writes)."""
        return self.file.error is None


@record
class StoreChange:
    """How a store's notes differ between two reads."""

    added: list[str]
    removed: list[str]


class MemoryRuntime:
    """Both stores of one project, as the rules of SPEC §1-§6 see them."""

    def __init__(
        self,
        start: Path,
        *,
        agent_dir: str | None = None,
        trusted: bool | None = None,
        read_only: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.agent_dir = agent_dir_for(agent_dir, env)
        self.project_root = project_root_for(start)
        self.paths: dict[Scope, Path] = {
            "project": project_store_path(self.project_root),
            "global": global_store_path(self.agent_dir),
        }
        self.explicit_trust = trusted
        self.read_only = read_only
        self._views: dict[Scope, StoreView] = {}
        self._settings_cache: (
            tuple[tuple[object, ...], TrustDecision, EffectiveConfig, float | None] | None
        ) = None
        """The settings' key, trust, configuration, and when they were decided if a stamp in
        the key is racy (``time.monotonic()``; ``None``: none is)."""
        pi = project_folder(self.project_root)
        self._config_paths = (
            str(self.agent_dir),
            str(self.agent_dir / "bytefly.json"),
            str(pi),
            str(pi / "bytefly.json"),
        )
        """Both ``bytefly.json`` files and their folders, in the settings' key."""
        self._store_folders = frozenset(str(p.parent) for p in self.paths.values())
        """The folders a store's write changes, keyed by what they hold (:func:`_held_names`)."""
        # `threading.RLock()` and `threading.local()` are these; `threading` itself (~1 ms of
        # `inject`) is not imported by the read verbs.
        self._lock = _thread.RLock()
        self._moment = _thread._local()
        self._looked_epoch = 0
        """Bumped by :meth:`forget_settings`: what a thread looked at before is not reused."""
        """Each thread's answers while it holds :meth:`steady` (``memo``), else none."""

    @contextlib.contextmanager
    def steady(self, reuse_for: float = 0.0) -> Iterator[None]:
        """Within this block, this thread looks at the disk once for trust, the
        configuration, the project folder's refusal and the stores' canonical paths.

        One keystroke's analysis asks for them a dozen times, and each asking stat'ed
        ~10 paths and resolved a folder: a third of a keystroke's work on a big
        store. A change on disk during the block is seen by the next one, as if it
        had come just after. Other threads, and code outside any block, look each time.

        ``reuse_for``: for that many seconds after this thread last looked, its answers
        stand for this block too (the editor's analysis, a keystroke apart: even once
        a keystroke, the look cost ~0.2-0.3 ms of the ~0.7 ms a keystroke takes on
        4,500 notes). A change on disk is then seen within that time, or at once after
        :meth:`forget_settings` (a watcher's event, a reload, any write a command makes
        through the editor).
        """
        moment = self._moment
        if getattr(moment, "memo", None) is not None:
            yield  # already held further up this thread's stack
            return
        epoch = self._looked_epoch  # (a bump during the block: its answers are not kept)
        recent = getattr(moment, "recent", None) if reuse_for > 0 else None
        now = time.monotonic() if reuse_for > 0 else 0.0
        # A look stands only while both stores are as they were then: notes that came in
        # (a `git pull`, another process) may have come with what makes the project
        # untrusted or refused (an `.agents/skills`, a `.pi` swapped), and must not be
        # read on the old decision even once. Two lstat()s, against the look's ~10.
        stores = tuple(stamp_of(p) for p in self.paths.values()) if reuse_for > 0 else ()
        if (
            recent is not None
            and recent[0] == epoch
            and recent[3] == stores
            and 0 <= now - recent[1] < reuse_for
        ):
            looked_at, moment.memo = recent[1], dict(recent[2])
        else:
            looked_at, moment.memo = now, {}
        # The stores' stamps just taken are the block's own (:meth:`view`): asking the
        # disk again a moment later in the same block is the same look (the editor's pass
        # asked for the other store's view twice, a lstat each).
        moment.stamps = dict(zip(self.paths, stores, strict=True)) if stores else None
        try:
            yield
        finally:
            if reuse_for > 0:
                moment.recent = (epoch, looked_at, moment.memo, stores)
            moment.memo = moment.stamps = None

    def look_again(self) -> bool:
        """Look at the disk afresh for what this thread's last reused :meth:`steady` look
        held, and say whether anything differs; that look is not reused again either way.

        The editor calls it once typing pauses: a change that came while a look was
        reused, with no event after it, is then not shown stale for long.
        """
        recent = getattr(self._moment, "recent", None)
        self._moment.recent = None
        if recent is None or recent[0] != self._looked_epoch:
            return False
        looked: dict[object, object] = recent[2]
        with self.steady():
            for key in looked:
                if key == "settings":
                    self._settings()
                elif key == "refusal":
                    self.store_refusal("project")
                elif isinstance(key, tuple) and key[0] == "canonical":
                    self.canonical(key[1])
            fresh = dict(self._memo() or {})
            for key in looked:
                if isinstance(key, tuple) and key[0] == "read":
                    # A racy store read in that look: what it holds now (read again,
                    # this look not having read it), compared by its bytes and stamp.
                    fresh[key] = self.view(key[1]).file
        return any(fresh.get(key) != value for key, value in looked.items())

    def _memo(self) -> dict[object, object] | None:
        memo: dict[object, object] | None = getattr(self._moment, "memo", None)
        return memo

    def canonical(self, scope: Scope) -> str:
        """:func:`canonical_path` of ``scope``'s store (once per :meth:`steady` block)."""
        memo = self._memo()
        if memo is None:
            return canonical_path(self.paths[scope])
        key = ("canonical", scope)
        found = memo.get(key)
        if found is None:
            found = memo[key] = canonical_path(self.paths[scope])
        return str(found)

    # -- settings -----------------------------------------------------------

    def _settings(self) -> tuple[TrustDecision, EffectiveConfig]:
        """Trust and configuration, read again only when a path they depend on changed.

        The key is the stamp, symlinks followed, of every path the trust decision
        consulted (and the folders they would appear in), and of both
        ``bytefly.json`` files and their folders: an edit behind a symlinked
        ``trust.json`` or ``.pi``, or a ``.agents/skills`` appearing in a parent
        folder, is seen by a server that has been running for days. The folders
        the stores live in are keyed by the names they hold (:func:`_held_names`), so
        this runtime's own writes there do not make trust be decided again.
        """
        memo = self._memo()
        if memo is not None and (held := memo.get("settings")) is not None:
            return held  # type: ignore[return-value]
        cached = self._settings_cache
        # A racy stamp in the key (a path changed within RACY_MARGIN_NS of its stamp, e.g.
        # `trust.json` just rewritten, or a parent folder) does not prove the path
        # unchanged: decide again, once RACY_DECISION_STANDS has passed.
        if (
            cached is not None
            and (cached[3] is None or time.monotonic() - cached[3] < RACY_DECISION_STANDS)
            and cached[0] == self._settings_key(cached[1])
        ):
            answer = cached[1], cached[2]
        else:
            # The key is taken before what it keys is read: taken after, a file changed in
            # between (`trust.json` rewritten to revoke trust as the server starts) was
            # keyed by its new stamp with the answer its old text gave, and that answer
            # stood until the file changed again. Each path the decision consults is
            # stamped as it is consulted, before it is read (`Stamps`), and the
            # configuration's paths before it is read: one decision, keyed by exactly
            # the paths it consulted.
            stamps = Stamps(self._stamp)
            trust = decide_trust(
                self.project_root, self.agent_dir, self.explicit_trust, stamps=stamps
            )
            for path in self._config_paths:
                stamps.take(path)
            config = load_config(self.agent_dir, self.project_root, trust.trusted)
            key = self._settings_key(trust, stamps.taken)
            racy = any(isinstance(stamp, Stamp) and stamp.racy for stamp in key)
            self._settings_cache = (key, trust, config, time.monotonic() if racy else None)
            answer = trust, config
        if memo is not None:
            memo["settings"] = answer
        return answer

    def _settings_key(
        self, trust: TrustDecision, taken: dict[str, object] | None = None
    ) -> tuple[object, ...]:
        """What the settings depend on: each path ``trust`` consulted and the configuration's,
        stamped now, or as ``taken`` holds them (stamped as the decision consulted them)."""
        paths = dict.fromkeys((*trust.consulted, *self._config_paths))
        if taken is None:
            return (self.explicit_trust, *(self._stamp(p) for p in paths))
        return (self.explicit_trust, *(taken[p] if p in taken else self._stamp(p) for p in paths))

    def _stamp(self, path: str) -> object:
        """A settings path's stamp: the stores' folders by the names they hold
        (:func:`_held_names`), every other path by what it leads to."""
        return _held_names(path) if path in self._store_folders else _followed_stamp(path)

    def forget_settings(self) -> None:
        """Decide trust and read the configuration afresh on next use (a watcher saw a change),
        and look at the disk again in the next :meth:`steady` block of every thread."""
        self._settings_cache = None
        self._looked_epoch += 1

    def trust(self) -> TrustDecision:
        """Who decides whether the project's notes may be read and written (SPEC §4)."""
        return self._settings()[0]

    def config(self) -> EffectiveConfig:
        """The effective ``memory`` configuration (SPEC §5)."""
        return self._settings()[1]

    # -- reading ------------------------------------------------------------

    def store_refusal(self, scope: Scope, real: str | None = None) -> str | None:
        """Why ``scope``'s store may not be used at all: its folder leads out of the
        project, or it is the global store's file.

        Only the project store can be refused this way (SPEC §1); the agent dir
        may be a symlink, as the user's own choice, and the global store it names
        stays usable when the project store is refused for being the same file.
        ``real`` is the folder's real path when the caller resolved it (the write
        path, under the lock).
        """
        if scope != "project":
            return None
        memo = self._memo() if real is None else None
        if memo is None:
            return project_folder_refusal(self.project_root, real, self.paths["global"])
        if "refusal" not in memo:
            memo["refusal"] = project_folder_refusal(
                self.project_root, global_store=self.paths["global"]
            )
        refusal = memo["refusal"]
        return refusal if isinstance(refusal, str) else None

    def shared_store_refusal(self, scope: Scope | None) -> str | None:
        """For the global store when it is also the project store's file (an agent dir
        set to the project's ``.pi``, also one that leads out): why the project scope is
        refused (:func:`shared_file_refusal`). The global store itself works; its open
        document and ``check`` show why project memory does not."""
        if scope != "global":
            return None
        # Not by comparing the two paths alone: one folder can have two (a bind mount, a
        # case-insensitive disk), which project_folder_refusal's decision sees.
        return shared_file_refusal(
            self.project_root, self.paths["global"], self.store_refusal("project")
        )

    def view(self, scope: Scope) -> StoreView:
        """The store as it is on disk now, re-read only when its stamp changed.

        A project store whose folder leads out of the project is not read at all:
        its view is empty, with the refusal as its error, and has no last good notes.
        """
        path = self.paths[scope]
        with self._lock:
            cached = self._views.get(scope)
            if (
                cached is not None
                and cached.readable
                # Before the stamp: a refused folder is not even looked into.
                and self.store_refusal(scope) is None
            ):
                stamps: dict[Scope, Stamp | None] | None = getattr(self._moment, "stamps", None)
                stamp = stamps[scope] if stamps is not None else stamp_of(path)
                if unchanged(cached.file.stamp, stamp) or self._read_in_look(scope, cached, stamp):
                    return cached
            view = self._reread(scope)
            memo = self._memo()
            if memo is not None:
                memo[("read", scope)] = view.file
            stamps = getattr(self._moment, "stamps", None)
            if stamps is not None:
                # The file was read after the block's stamp (which may be older than the
                # read): the block's later questions stamp the path themselves, as before.
                self._moment.stamps = None
            return view

    def _read_in_look(self, scope: Scope, cached: StoreView, stamp: Stamp | None) -> bool:
        """Whether ``cached``, its stamp racy (``RACY_MARGIN_NS``), was read in this thread's
        :meth:`steady` look and the stamp is still the one that read took: one read per
        look, not one per question a pass asks (an mtime in the future, racy until the
        clock passes it, would otherwise cost the editor two reads of the other store a
        keystroke). :meth:`look_again` reads it afresh once the analysis rests."""
        memo = self._memo()
        return (
            memo is not None
            and memo.get(("read", scope)) is cached.file
            and cached.file.stamp == stamp
        )

    def _reread(self, scope: Scope) -> StoreView:
        refusal = self.store_refusal(scope)
        if refusal is not None:
            # Not read, and nothing kept from earlier reads: recall leaves it out.
            file = StoreFile(self.paths[scope], False, "", None, error=refusal)
            self._views[scope] = StoreView(file, parse(""), [])
            return self._views[scope]
        previous = self._views.get(scope)
        file = read_store(self.paths[scope], known=previous.file if previous else None)
        if (
            previous is not None
            and previous.readable
            and file.error is None
            and file.data is not None
            and file.data is previous.file.data  # (read_store keeps `known`'s bytes when equal)
            and file.stamp == previous.file.stamp
        ):
            # A read again of a racy stamp (RACY_MARGIN_NS) that found the same bytes: the
            # view stands as it was, only its stamp is the new one (racy while still recent).
            previous.file = file
            return previous
        parsed = parse(file.content)
        if file.error is None:
            last_good = parsed.notes
        else:
            last_good = previous.last_good if previous else []
        view = StoreView(file, parsed, last_good)
        self._views[scope] = view
        return view

    def _adopt(self, scope: Scope, file: StoreFile) -> None:
        """Cache what this process just wrote (:func:`rewrite_store`'s file), so it is not
        read back.

        Parsed from the view it replaces: a write changes a few lines (an add, one
        at the end), and only the lines from the first one that differs are parsed.
        """
        content = file.content
        previous = self._views.get(scope)
        parsed = (
            parse(content)
            if previous is None
            else parse_after(previous.parsed, previous.file.content, content)
        )
        self._views[scope] = StoreView(file, parsed, parsed.notes)

    def notes(self, scope: Scope) -> list[str]:
        """The notes of ``scope`` ([] for an untrusted project or an unreadable store)."""
        if scope == "project" and not self.trust().trusted:
            return []
        view = self.view(scope)
        return list(view.parsed.notes) if view.readable else []

    def recall_notes(self, scope: Scope) -> list[str]:
        """The notes recall uses: an unreadable store keeps its last good view."""
        if scope == "project" and not self.trust().trusted:
            return []
        view = self.view(scope)
        return list(view.parsed.notes if view.readable else view.last_good)

    def reload(self) -> dict[Scope, StoreChange]:
        """Re-read both stores regardless of stamps; say what changed in each.

        An untrusted project's store is re-read too (recall needs it fresh once
        trusted), but its change is reported as none: what arrived in it is
        repository text, which no front end may show (SPEC §4).
        """
        changes: dict[Scope, StoreChange] = {}
        self.forget_settings()
        with self._lock:
            for scope in ("project", "global"):
                before = self._views[scope].parsed.notes if scope in self._views else None
                view = self._reread(scope)
                after = view.parsed.notes
                if before is None:
                    before = after
                old, new = set(before), set(after)  # a list lookup per note was O(n²)
                changes[scope] = StoreChange(
                    added=[n for n in after if n not in old],
                    removed=[n for n in before if n not in new],
                )
        if not self.trust().trusted:
            changes["project"] = StoreChange(added=[], removed=[])
        return changes

    def reload_result(self) -> ReloadResult:
        """Re-read both stores: the ``memory.reload`` result (both scopes' notes, and what changed).

        ``changed`` says whether anything it may show changed: an untrusted
        project's store changing on disk is not reported, not even as a flag.
        """
        changes = self.reload()
        changed = any(c.added or c.removed for c in changes.values())
        return {
            **self.result("reload", "project", changed),
            "reloaded": {
                "project": {
                    "added": changes["project"].added,
                    "removed": changes["project"].removed,
                },
                "global": {"added": changes["global"].added, "removed": changes["global"].removed},
            },
        }

    # -- results ------------------------------------------------------------

    def result(
        self, action: str, scope: Scope, changed: bool = False, **extra: str | None
    ) -> MemoryResult:
        """A :data:`MemoryResult` carrying both scopes' notes as they are now."""
        out: MemoryResult = {
            "action": action,
            "scope": scope,
            "project": self.notes("project"),
            "global": self.notes("global"),
            "changed": changed,
        }
        for key in ("entry", "to", "existing", "error"):
            value = extra.get(key)
            if value is not None:
                out[key] = value  # type: ignore[literal-required,unused-ignore]
        return out

    def list(self, scope: Scope = "project") -> MemoryResult:
        """Both stores; an unreadable one is listed empty with ``error`` set."""
        out = self.result("list", scope)
        trust = self.trust()
        # An untrusted project's read errors stay private, but a folder leading out of
        # the project is reported whatever the trust: it names no note.
        errors = [
            v.file.error
            for s in ("project", "global")
            if (s == "global" or trust.trusted or self.store_refusal(s))
            and (v := self.view(s)).file.error
        ]
        if errors:
            out["error"] = "; ".join(e for e in errors if e)
        return out

    def plan(self) -> RecallPlan:
        """The recall plan (SPEC §6) over both stores as they are now."""
        config = self.config()
        return recall_plan(
            self.recall_notes("project"),
            self.recall_notes("global"),
            config.max_inject_bytes,
            config.inject,
        )

    def body(self) -> str | None:
        """The injection body of :meth:`plan`, without the plan's entry per note
        (``memory-ls inject``)."""
        config = self.config()
        return recall_body(
            self.recall_notes("project"),
            self.recall_notes("global"),
            config.max_inject_bytes,
            config.inject,
        )

    def inject(self) -> InjectResult:
        """The ``memory.inject`` object."""
        return self.plan().as_inject_result()

    def path_info(self) -> PathInfo:
        """The ``memory.path`` object."""
        trust = self.trust()
        return {
            "project": str(self.paths["project"]),
            "global": str(self.paths["global"]),
            "trusted": trust.trusted,
            "trustReason": trust.summary,
        }

    # -- actions ------------------------------------------------------------

    def run(self, action: object, args: Mapping[str, object]) -> MemoryResult:
        """Validate raw field values and run one action; refusals come back as results."""
        from memory_ls.core.actions import read_request

        request, error = read_request(action, args)
        if error:
            return self.result(request.action, request.scope, error=error)
        return self.execute(request)

    def execute(self, request: Request) -> MemoryResult:
        """Run one validated action (:func:`memory_ls.core.actions.read_request`)."""
        if request.action == "list":
            return self.list(request.scope)
        if request.action == "move":  # two writes under both locks, so the note is never lost
            return self.move(request.text, request.scope)
        return self._write(request)

    def refusal(self, scope: Scope) -> str | None:
        """Why no change to ``scope`` is allowed at all, if none is.

        In order: the project's folder leads out of the project, the project
        directory does not exist (it is never created), read-only, untrusted.
        """
        from memory_ls.core.actions import READ_ONLY_MESSAGE, UNTRUSTED_MESSAGE

        refused = self._place_refusal(scope)
        if refused is not None:
            return refused
        if self.read_only:
            return READ_ONLY_MESSAGE
        if scope == "project" and not self.trust().trusted:
            return UNTRUSTED_MESSAGE
        return None

    def _place_refusal(self, scope: Scope) -> str | None:
        """Why ``scope``'s store cannot be written where it is: outside, or no project."""
        refused = self.store_refusal(scope)
        if refused is None and scope == "project" and not os.path.isdir(self.project_root):
            # Defence in depth: the front ends refuse a missing project first.
            refused = no_project_message(self.project_root)
        return refused

    def _mutate(self, scope: Scope, transform: Callable[[str], Change]) -> Change:
        """One read-modify-write of ``scope``; an I/O failure is a refusal, not a crash."""
        return self._guarded(scope, lambda: self._mutate_locked(scope, transform))

    def _guarded(self, scope: Scope, write: Callable[[], Change]) -> Change:
        """Run ``write``; a refusal or an I/O failure comes back as a :class:`Change` error."""
        from memory_ls.core.actions import Change

        try:
            return write()
        except StoreRefused as exc:
            return Change("", False, error=str(exc))
        except OSError as exc:
            return Change("", False, error=write_failed_message(self.paths[scope], exc))

    def _lock_request(self, scope: Scope) -> LockRequest:
        """What locking ``scope``'s store takes: its folder checked again once locked.

        The folder is checked at the real path of the folder actually held, and
        read and written through it: a ``.pi`` symlink planted since the
        caller's check cannot lead the write out of the project.
        """
        return LockRequest(
            self.paths[scope],
            make_parents=scope == "global",
            check=lambda real: self.store_refusal(scope, real),
        )

    def _mutate_locked(self, scope: Scope, transform: Callable[[str], Change]) -> Change:
        """One read-modify-write of ``scope`` under both locks (see :func:`store_locks`)."""
        from memory_ls.core.actions import Change

        path = self.paths[scope]
        refused = self._place_refusal(scope)
        if refused is not None:
            return Change("", False, error=refused)
        if not path.parent.exists():
            # Nothing to lock yet: only create folders when the change writes.
            first = transform("")
            if not first.changed:
                # Not there, or unreachable (a folder on the way that loops, dangles or is
                # a file): then a clear or forget of it did not "find nothing", it could
                # not look (SPEC §8), as list and inject say.
                unreachable = unreachable_store(path)
                return first if unreachable is None else Change("", False, error=unreachable)
        # The runtime's own lock is not held while waiting for the store's: a reader
        # of this runtime (a hover in the language server) is never kept waiting.
        with store_locks([self._lock_request(scope)]) as (folder,):
            return self._rewrite(scope, folder, transform)

    def _rewrite(
        self, scope: Scope, folder: LockedFolder, transform: Callable[[str], Change]
    ) -> Change:
        """Apply ``transform`` to the locked store and write it (redone if it changed meanwhile)."""
        from memory_ls.core.actions import Change

        made: list[Change] = []

        def decide(file: StoreFile) -> str | None:
            refusal = file.mutation_error
            content = file.content
            cached = self._views.get(scope)
            if cached is not None and cached.file.content == content:
                # The same text as the view's (compared, not hashed): hand over the view's
                # own string, whose parse is found by identity, not by hashing 1 MB again.
                content = cached.file.content
            change = Change(content, False, error=refusal) if refusal else transform(content)
            made.append(change)
            return change.content if change.changed and change.error is None else None

        cached = self._views.get(scope)
        written = rewrite_store(self.paths[scope], folder, decide, cached.file if cached else None)
        change = made[-1]
        if written is not None:
            with self._lock:
                self._adopt(scope, written)
        return change

    def _finish(
        self, action: str, scope: Scope, change: Change, **extra: str | None
    ) -> MemoryResult:
        if change.error:
            return self.result(action, scope, False, error=change.error, **extra)
        return self.result(action, scope, change.changed, existing=change.existing, **extra)

    def _write(self, request: Request) -> MemoryResult:
        """One action on its own store: refused as a whole, or one read-modify-write."""
        action, scope, echoed = request.action, request.scope, request.echoed()
        refusal = self.refusal(scope)
        if refusal:
            return self.result(action, scope, error=refusal, **echoed)
        change = self._mutate(scope, request.change(scope))
        return self._finish(action, scope, change, **echoed)

    def add(self, text: str, scope: Scope = "project") -> MemoryResult:
        """Append a (normalised, validated) note unless a near-duplicate is stored."""
        from memory_ls.core.actions import Request

        return self._write(Request("add", scope, text))

    def move(self, text: str, scope: Scope = "project") -> MemoryResult:
        """Add to the other scope, then forget from ``scope``: never in neither."""
        from memory_ls.core.actions import Request, no_match
        from memory_ls.core.models import other_scope

        target = other_scope(scope)
        refusal = self.refusal(scope) or self.refusal(target)
        if refusal:
            return self.result("move", scope, error=refusal, entry=text)
        if canonical_path(self.paths[scope]) == canonical_path(self.paths[target]):
            # Adding to the "other" store would find the note and forgetting would
            # then remove its only copy: the note would end up in neither scope.
            return self.result(
                "move", scope, error=same_file_message(self.paths[scope]), entry=text
            )
        source = self.view(scope)  # a first look, before any folder is created
        if source.file.mutation_error:
            return self.result("move", scope, error=source.file.mutation_error, entry=text)
        if text not in source.parsed.notes:
            return self.result("move", scope, error=no_match(scope, text), entry=text)
        request = Request("move", scope, text)
        moved = self._guarded(scope, lambda: self._move_locked(request, target))
        if moved.error:
            return self.result("move", scope, error=moved.error, entry=text)
        return self.result("move", scope, moved.changed, entry=text, existing=moved.existing)

    def _move_locked(self, request: Request, target: Scope) -> Change:
        """Both writes of a move under both stores' locks, target first.

        Holding both locks for the whole move means no other writer's add to
        either store can fall between the two writes and be lost, and no other
        move of the same note can see it in both stores or in neither. The
        result is the source's change, with the target's ``existing``.
        """
        from memory_ls.core.actions import Change, no_match

        scope = request.scope
        with store_locks([self._lock_request(scope), self._lock_request(target)]) as folders:
            source_folder, target_folder = folders
            source = read_store(self.paths[scope], source_folder)
            if source.mutation_error:
                return Change(source.content, False, error=source.mutation_error)
            if request.text not in parse(source.content).notes:
                return Change(source.content, False, error=no_match(scope, request.text))
            added = self._guarded(
                target, lambda: self._rewrite(target, target_folder, request.change(target))
            )
            if added.error:
                return added
            removed = self._guarded(
                scope, lambda: self._rewrite(scope, source_folder, request.change(scope))
            )
            if removed.error:
                return removed  # the note is in both stores now, never in neither
            return Change(removed.content, removed.changed, existing=added.existing)

    def clear(self, scope: Scope = "project") -> MemoryResult:
        """Remove every bullet of ``scope``; callers must have asked a human first."""
        from memory_ls.core.actions import Request

        return self._write(Request("clear", scope))

    # -- bridges to other agents (SPEC §15) -------------------------------------

    def import_notes(self, candidates: Sequence[str], scope: Scope = "project") -> ImportResult:
        """Import another agent's notes into ``scope`` in one locked write.

        Each candidate is normalised; an over-long one is refused, one whose key
        the store or the import already holds is skipped. An import the scope
        refuses (untrusted, read-only, an unreadable store) or that would pass
        the size cap refuses every note it would have added, and writes nothing.
        """
        from memory_ls.core.actions import Change
        from memory_ls.core.bridges import plan_import

        refusal = self.refusal(scope)
        if refusal:
            return plan_import("", candidates).refused_whole(refusal)
        plans: list[ImportPlan] = []
        path = self.paths[scope]

        def transform(content: str) -> Change:
            plan = plan_import(content, candidates)
            plans.append(plan)
            if plan.over_cap:
                return Change(content, False, error=oversize_message(path, plan.size))
            return Change(plan.content, plan.changed)

        change = self._mutate(scope, transform)
        plan = plans[-1] if plans else plan_import("", candidates)
        if change.error:
            return plan.refused_whole(change.error)
        return plan.result()

    def export_to(self, target: Path, *, check: bool = False) -> ExportResult:
        """Keep the memory-ls block of ``target`` equal to the recall body (SPEC §15).

        Only the block changes; nothing is written when it is current or with
        ``check``. The recall body leaves an untrusted project's notes out. A
        store that cannot be read refuses the export, so a block never loses
        notes because a file was briefly unreadable. ``target`` is the path as
        named: its symlinks are followed here, and a memory store or (for a file
        in the project) a file outside the project is refused.
        """
        from memory_ls.core.bridges import ExportError, export_message, plan_export
        from memory_ls.store.bridges import (
            export_target,
            other_names_message,
            read_export_target,
        )

        resolved = export_target(target, self.project_root, list(self.paths.values()))
        target = resolved.path
        shown = display_path(target)

        def refused(error: str) -> ExportResult:
            return {
                "path": str(target),
                "status": "current",
                "changed": False,
                "message": error,
                "error": error,
            }

        if resolved.error:
            return refused(resolved.error)
        scopes: tuple[Scope, ...] = ("project", "global") if self.trust().trusted else ("global",)
        for scope in scopes:
            error = self.view(scope).file.error
            if error:
                return refused(error)
        if not target.parent.is_dir():
            return refused(
                f"No such directory for the export target: {display_path(target.parent)}"
            )
        body = self.plan().body
        read = read_export_target(target)
        if read.error:
            return refused(read.error)
        try:
            plan = plan_export(read.text, body)
        except ExportError as exc:
            return refused(f"Cannot rewrite the memory-ls block in {shown}: {exc}")
        result: ExportResult = {
            "path": str(target),
            "status": plan.status,
            "changed": plan.changed,
            "message": export_message(plan.status, shown),
        }
        if check or not plan.changed:
            return result
        try:
            with store_lock(target) as folder:
                # Under the lock: read again, so an edit made meanwhile is kept.
                again = read_export_target(target)
                if again.error:
                    return refused(again.error)
                plan = plan_export(again.text, body)
                if plan.changed:
                    # Not over other names (hard links), looked at again right before the
                    # rename: they would keep the old text.
                    write_store(
                        target, plan.content, folder, one_name=True, linked=other_names_message
                    )
        except ExportError as exc:
            return refused(f"Cannot rewrite the memory-ls block in {shown}: {exc}")
        except StoreRefused as exc:
            return refused(str(exc))
        except OSError as exc:
            return refused(f"Cannot write {shown}: {exc.strerror or exc}")
        result["status"], result["changed"] = plan.status, plan.changed
        result["message"] = export_message(plan.status, shown)
        return result

    # -- doctor -------------------------------------------------------------

    def doctor_report(self) -> DoctorReport:
        """The doctor's report (SPEC §9) as JSON-able data."""
        from memory_ls.core.doctor import StoreFacts, doctor_report

        trust = self.trust()
        config = self.config()
        facts: dict[Scope, StoreFacts] = {}
        for scope in ("project", "global"):
            view = self.view(scope)
            file = view.file
            # A refused project store is not read, not even for its size: one lstat says
            # whether anything is there (not "missing" when it is the global store's file).
            refused = self.store_refusal(scope)
            unread = refused is not None
            kind = None if unread else file_type_at(file.path)
            # Only a regular file's size says anything about the store (a folder's does not).
            unsized = unread or kind is not None
            size = 0 if unsized or (stamp := stamp_of(file.path)) is None else stamp.size
            facts[scope] = StoreFacts(
                path=str(file.path),
                exists=os.path.lexists(file.path) if unread else file.exists,
                size=size,
                parsed=view.parsed,
                error=file.error,
                write_error=file.mutation_error or (None if unread else write_refusal(file.path)),
                file_type=kind,
                findings=() if unread or kind is not None else self._review_findings(scope),
                refused=refused,
            )
        plan = self.plan()
        report = doctor_report(
            facts,
            {
                "trusted": trust.trusted,
                "rule": trust.rule,
                "reason": trust.reason,
                "problems": list(trust.problems),
            },
            {
                "inject": config.inject,
                "maxInjectBytes": config.max_inject_bytes,
                "sources": [
                    {"path": s.path, "status": s.status, "why": s.why} for s in config.sources
                ],
                "problems": list(config.problems),
            },
            plan,
        )
        # The review inboxes' unreadable files and bad lines (SPEC §12), by line number only.
        from memory_ls.store.review import Review

        # (A refused project store's inbox is refused with the store: said once, above.)
        # An inbox with other names (hard links), read-only or another user's is among
        # them: never replaced or deleted (SPEC §12: the store's safe path), said before a
        # propose, accept or reject is refused, as the store's read-only reason is.
        said = {facts[scope].refused for scope in facts}
        report["problems"].extend(f"inbox: {w}" for w in Review(self).listing()[1] if w not in said)
        return report

    def _review_findings(self, scope: Scope) -> tuple[Finding, ...]:
        """SPEC §13's findings on one store, exactly as ``check`` computes them."""
        from memory_ls.store.project_files import stale_and_conflict_findings

        other = self.view("global").parsed if scope == "project" else None
        return tuple(
            stale_and_conflict_findings(
                self.project_root,
                self.agent_dir,
                scope,
                self.view(scope).parsed,
                other,
                str(self.paths["global"]),
            )
        )

    def doctor_text(self) -> str:
        """The doctor's report as readable text."""
        from memory_ls.core.doctor import render_doctor_text

        return render_doctor_text(self.doctor_report())

    def doctor_result(self) -> DoctorResult:
        """The ``memory.doctor`` result: the report and its text, from one reading."""
        from memory_ls.core.doctor import render_doctor_text

        report = self.doctor_report()
        return {**report, "text": render_doctor_text(report)}
