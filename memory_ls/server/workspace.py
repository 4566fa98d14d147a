"""Projects, open documents and what each document is (SPEC §7 Documents).

Each workspace folder is its own project with its own :class:`MemoryRuntime`;
a command's ``uri`` picks one, the first folder is the default. The client's
``trusted`` covers its folders and what lies inside them; any other project is
decided by ``trust.json`` and its resources, as the CLI decides it (SPEC §4). A
document is a memory document when its path is the global store or ends in
``/.pi/memory.md``; the store layer decides which (:func:`classify_store_path`).
Other-scope key indexes, the global store's claiming notes (for ``conflict``) and
one recall plan per project are cached here, keyed on what they depend on, so an
edit does not re-read files (each :class:`MemoryRuntime` caches its own trust,
configuration and store reads).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memory_ls.core.checks import key_index
from memory_ls.core.conflicts import claims_of_key
from memory_ls.core.models import Scope, other_scope
from memory_ls.core.notes import Bullet
from memory_ls.core.recall import (
    PlannedNote,
    RecallPlan,
    incremental_plan,
    kept_out,
    recall_plan,
    with_kept_out,
)
from memory_ls.core.text import display_path
from memory_ls.server.documents import MemoryDocument
from memory_ls.server.settings import Settings
from memory_ls.store.paths import (
    StorePath,
    canonical_path,
    classify_store_path,
    no_project_message,
    project_root_for,
    real_path,
    refused_folder_on_the_way,
    repository_root_for,
    unfollowable,
)
from memory_ls.store.runtime import MemoryRuntime


def _resolved(path: Path) -> Path | None:
    """``path`` canonical (symlinks and ``..`` resolved), or ``None`` if no path can be."""
    try:
        return Path(real_path(path))
    except ValueError:  # a NUL byte
        return None


def _nearest_existing(path: Path) -> Path:
    """``path`` itself when it exists, else its nearest ancestor that does."""
    while not os.path.exists(path) and path.parent != path:
        path = path.parent
    return path


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    """What a memory document is: which project, which scope, and whether it is the store."""

    runtime: MemoryRuntime
    scope: Scope | None
    """``None`` for a ``.pi/memory.md`` that is not its project's store."""
    real_store: str | None = None


@dataclass(frozen=True, slots=True, eq=False)
class ClaimingNotes:
    """The global store's notes that make a claim (SPEC §13 ``conflict``), by key, and
    the store's path: what a project document's conflicts across scopes compare with.
    A new object whenever the store changed (callers compare by identity)."""

    by_key: dict[str, tuple[Bullet, ...]]
    path: str


class Projects:
    """Every project the server knows, the open documents, and cached facts about both."""

    def __init__(self) -> None:
        self.settings = Settings()
        self.folders: list[Path] = []
        self.runtimes: dict[Path, MemoryRuntime] = {}
        self.documents: dict[str, MemoryDocument] = {}
        self.by_path: dict[str, MemoryDocument] = {}
        """Per file (its canonical path): the open document read for it (diagnostics of
        the other store, recall, symbols), the last one opened."""
        self._file_of: dict[str, str] = {}
        """Per open document's uri: its file's canonical path, as it was opened or last
        followed (:meth:`follow`)."""
        self._keys: dict[tuple[str, Scope], tuple[object, dict[str, str]]] = {}
        self._claiming: dict[str, tuple[object, ClaimingNotes]] = {}
        self._plans: dict[Path, tuple[RecallPlan, int]] = {}
        """Per project root: its last plan and that plan's decision id."""
        self._kept: dict[Path, dict[int, PlannedNote]] = {}
        """Per project root: the open buffer's project notes edited since its plan was made,
        each still left out (:func:`kept_out`), by index; the plan with them is the plan
        (:meth:`decision`). Folded into a plan of their own when one is asked for."""
        self._decisions = 0

    # -- projects ------------------------------------------------------------------

    def configure(self, settings: Settings, folders: list[Path] | None = None) -> None:
        """Apply new settings (and folders): every runtime is rebuilt, caches dropped."""
        self.settings = settings
        if folders is not None:
            self.folders = folders
        self.runtimes = {}
        self.invalidate()
        for folder in self.folders:
            self.runtime_for_path(folder)

    def invalidate(self) -> None:
        """Forget cached key indexes (runtimes re-check their own stamps).

        The plans (and the edits kept beside them) are kept, but a project's no longer
        served: :meth:`decision` compares a kept plan's inputs with the notes and settings
        as they are now (:meth:`_edit_kept`, else :func:`incremental_plan` in
        :meth:`_replan`), which keep it, with its decision, only when every input is the
        same. A recheck that finds nothing changed (a watched-file event, a command's
        end) then keeps the plan and the ``not-injected`` runs derived from it: planning
        4,500 notes again was ~2/3 of such a recheck (~6 of ~9 ms)."""
        self._keys.clear()
        self._claiming.clear()
        if self._plans.keys() - self.runtimes.keys():
            self._plans = {r: p for r, p in self._plans.items() if r in self.runtimes}
        if self._kept.keys() - self.runtimes.keys():
            self._kept = {r: k for r, k in self._kept.items() if r in self.runtimes}
        for runtime in self.runtimes.values():
            # A watcher may see what no stamp shows (an edit that kept size and mtime).
            runtime.forget_settings()

    def runtime_for_path(self, path: Path) -> MemoryRuntime:
        """The runtime of the project holding ``path`` (created on first use)."""
        root = project_root_for(path)
        runtime = self.runtimes.get(root)
        if runtime is None:
            s = self.settings
            trusted = s.trusted if self.covers(root) else None
            runtime = MemoryRuntime(
                root, agent_dir=self.agent_dir_setting(), trusted=trusted, read_only=s.read_only
            )
            self.runtimes[root] = runtime
        return runtime

    def agent_dir_setting(self) -> str | None:
        """The ``agentDir`` setting, a relative one taken from the first workspace folder.

        Not from the server's current directory: the editor picks that (VS Code's is
        wherever it was started), so the same setting would name a different folder
        from one start to the next. ``~`` and absolute paths are taken as they are.
        """
        chosen = self.settings.agent_dir
        if not chosen or chosen.startswith("~") or os.path.isabs(chosen):
            return chosen
        return os.path.join(self.folders[0] if self.folders else Path.cwd(), chosen)

    def covers(self, root: Path) -> bool:
        """Whether the client's trust decision reaches the project at ``root`` (canonical).

        It does for a workspace folder's own project and for any project inside a
        folder, and for nothing else (SPEC §4): a cloned repository opened or
        named from elsewhere is decided by its own ``trust.json`` entry and
        resources, never by the client's trust in the workspace.
        """
        for folder in self.folders:
            real = Path(real_path(folder))
            if root == real or real in root.parents or project_root_for(real) == root:
                return True
        return False

    def missing_project(self, path: Path) -> str | None:
        """Why a command's ``uri`` picks no project: it names nothing, outside every folder.

        The path is judged where it resolves to (symlinks and ``..`` followed): a
        path that exists picks its project, a missing one inside a workspace
        folder picks the project of its nearest existing ancestor; any other
        path names nothing, and nothing creates a project (SPEC §1). A path whose links
        the system will not follow (a loop, or a chain of more links than it follows)
        is named for them: resolved to its end, a chain would pick the project there.
        """
        why = unfollowable(path)
        if why is not None:
            return f"Refusing to use {display_path(path)}: it {why}."
        real = _resolved(path)
        if real is not None and (os.path.exists(real) or self._folder_holding(real)):
            return None
        return no_project_message(path)

    def _folder_holding(self, real: Path) -> Path | None:
        """The innermost workspace folder (canonical) that is the canonical ``real`` or holds it."""
        holding = [
            canon
            for folder in self.folders
            if (canon := _resolved(folder)) is not None and (real == canon or canon in real.parents)
        ]
        return max(holding, key=lambda f: len(f.parts), default=None)

    def default_runtime(self) -> MemoryRuntime:
        """The first workspace folder's runtime (the current directory without folders)."""
        return self.runtime_for_path(self.folders[0] if self.folders else Path.cwd())

    def runtime_for_uri_path(self, path: Path | None) -> MemoryRuntime:
        """The runtime for a command's ``uri`` (a folder or a file), else the default."""
        default = self.default_runtime()
        if path is None:
            return default
        real = _resolved(path)
        if real is None:
            return default  # names nothing (a NUL byte); missing_project refused it first
        return self._runtime_for(path, real, self._classify(path, default.paths["global"]))

    @staticmethod
    def _classify(path: Path, global_store: Path) -> StorePath | None:
        """Which store a ``uri``'s ``path`` is (:func:`classify_store_path`, which judges a
        store in a refused ``.pi`` as the editor does); or, for any other path in a
        project's ``.pi`` that leads out of it, that project with its refusal
        (:func:`refused_folder_on_the_way`): never the project where the link leads."""
        found = classify_store_path(path, global_store)
        if found is not None:
            return found
        through = refused_folder_on_the_way(path)
        if through is None:
            return None
        return StorePath("project", through[0], refusal=through[1])

    def runtime_for_command(self, path: Path | None) -> MemoryRuntime | str:
        """:meth:`runtime_for_uri_path`, or why the ``uri`` picks no project
        (:meth:`missing_project`), the path classified once for both.

        The store of a project whose ``.pi`` leads out of it is judged first: it names
        that project (and so gets its exact refusal) even when the link dangles.
        """
        default = self.default_runtime()
        if path is None:
            return default
        real = _resolved(path)
        found = None if real is None else self._classify(path, default.paths["global"])
        if found is None or found.scope != "project" or found.refusal is None:
            missing = self.missing_project(path)
            if missing is not None:
                return missing
        assert real is not None  # (a path that names nothing is missing)
        return self._runtime_for(path, real, found)

    def _runtime_for(self, path: Path, real: Path, found: StorePath | None) -> MemoryRuntime:
        """The runtime for a command's ``uri`` path, its canonical form ``real`` and its
        classification ``found``."""
        default = self.default_runtime()
        if found is not None and found.root is not None:
            # `<root>/.pi/memory.md` (or a path in that `.pi`) of a project whose .pi
            # leads out (maybe to the agent dir), or that the agent dir makes the global
            # store: the uri names that project (its project scope refused), whatever
            # file it leads to. And a project's store, or a `.pi/memory.md` that names
            # it, names that project as the editor describes it: outside any repository
            # and folder, not the `.pi` folder the file is in.
            return self.runtime_for_path(found.root)
        if found is not None and found.scope == "global":
            # The global store belongs to no project: it picks the default one, not
            # a "project" rooted in the agent dir.
            return default
        # Where the path really is, not the folder it is spelled under: a nested
        # repository, a link leading out of a folder and a `..` each pick their own
        # project, as a document's path does (`describe`). Outside any repository a
        # file in a folder belongs to the folder's project, not to its own directory.
        target = _nearest_existing(real)
        if repository_root_for(target) is None:
            target = self._folder_holding(real) or target
        return self.runtime_for_path(target)

    # -- documents -----------------------------------------------------------------

    def describe(self, path: Path) -> DocumentInfo | None:
        """What the file at ``path`` is, or ``None`` when it is not a memory document.

        The store layer classifies the path (:func:`classify_store_path`); a project
        store that is refused is still the project's store here (it gets the
        ``outside-project`` error), even when its .pi leads to the global store. The
        global store that is also a project's ``.pi/memory.md`` (its agent dir is that
        ``.pi``) is described with that project, so it shows that project's refusal.
        """
        default = self.default_runtime()
        found = classify_store_path(path, default.paths["global"])
        if found is None:
            return None
        if found.root is None:
            return DocumentInfo(default, "global")
        return DocumentInfo(self.runtime_for_path(found.root), found.scope, found.real_store)

    def open(self, doc: MemoryDocument) -> None:
        """Track an open document."""
        self.close(doc.uri)  # opened again under the same uri: the new one replaces it
        key = canonical_path(doc.path)
        self.documents[doc.uri] = doc
        self._file_of[doc.uri] = key
        self.by_path[key] = doc

    def close(self, uri: str) -> MemoryDocument | None:
        """Stop tracking a document.

        One file can be open under two URIs (a path through a symlinked folder, and the
        real one): closing one leaves the other as the file's open document.
        """
        doc = self.documents.pop(uri, None)
        key = self._file_of.pop(uri, None)
        if doc is not None and key is not None and self.by_path.get(key) is doc:
            del self.by_path[key]
            left = [other for u, other in self.documents.items() if self._file_of.get(u) == key]
            if left:
                self.by_path[key] = left[-1]
        return doc

    def file_of(self, uri: str) -> str | None:
        """The file (canonical path) the open document at ``uri`` is the document of."""
        return self._file_of.get(uri)

    def follow(self, uri: str) -> tuple[str, str] | None:
        """Look again where the path of the open document at ``uri`` leads.

        A folder on the way may be a symlink pointed elsewhere since the document was
        opened (``/w/link`` from ``/w/projA`` to ``/w/projB``): the document then follows
        its path and is the document of the file it leads to now, the one an editor's
        save writes (SPEC §7 Open buffers). Returns ``(before, now)`` when it moved. The
        file it left keeps another open document of it, if any; the file it reaches keeps
        its own open document, if it has one, and gets this one otherwise.
        """
        doc = self.documents.get(uri)
        before = self._file_of.get(uri)
        if doc is None or before is None:
            return None
        try:
            now = canonical_path(doc.path)
        except (OSError, ValueError):  # a NUL byte, a loop: it names nothing new
            return None
        if now == before:
            return None
        self._file_of[uri] = now
        if self.by_path.get(before) is doc:
            del self.by_path[before]
            left = self._documents_of_key(before)
            if left:
                self.by_path[before] = left[-1]
        self.by_path.setdefault(now, doc)
        return before, now

    def open_store(self, runtime: MemoryRuntime, scope: Scope) -> MemoryDocument | None:
        """The open document read for ``runtime``'s ``scope`` store, if it is open (when
        it is open under two URIs, the last opened: see :meth:`open_stores`)."""
        return self.by_path.get(runtime.canonical(scope))

    def open_stores(self, runtime: MemoryRuntime, scope: Scope) -> list[MemoryDocument]:
        """Every open document of ``runtime``'s ``scope`` store, in the order they opened.

        More than one when the editor has the file open under two URIs (through a
        symlinked folder and by its real path; VS Code keeps a document per URI): a
        command's change must reach each, or saving the one left out would undo it.
        """
        return self._documents_of(runtime.canonical(scope))

    def same_file(self, doc: MemoryDocument) -> list[MemoryDocument]:
        """Every open document of ``doc``'s file (``doc`` too, while it is open)."""
        key = self._file_of.get(doc.uri)
        return [] if key is None else self._documents_of(key)

    def _documents_of(self, key: str) -> list[MemoryDocument]:
        if key not in self.by_path:  # (the common case: not open at all)
            return []
        return self._documents_of_key(key)

    def _documents_of_key(self, key: str) -> list[MemoryDocument]:
        return [doc for uri, doc in self.documents.items() if self._file_of.get(uri) == key]

    # -- cached facts ----------------------------------------------------------------

    def store_notes(self, runtime: MemoryRuntime, scope: Scope) -> Sequence[str]:
        """A store's notes: the editor's buffer when it is open, else the file (recall view)."""
        doc = self.open_store(runtime, scope)
        if doc is not None:
            return doc.notes()
        view = runtime.view(scope)
        return view.parsed.notes if view.readable else view.last_good

    @staticmethod
    def project_readable(runtime: MemoryRuntime) -> bool:
        """Whether the project's notes may be read: trusted, and its .pi inside it."""
        return runtime.store_refusal("project") is None and runtime.trust().trusted

    def other_keys(self, runtime: MemoryRuntime, scope: Scope) -> dict[str, str]:
        """Key → note of the *other* store (empty for an untrusted project, and when
        ``agentDir`` makes both one file: a note is not "also" in the file it is in,
        and forgetting it "here" would forget it there)."""
        other = other_scope(scope)
        if other == "project" and not self.project_readable(runtime):
            return {}
        if runtime.canonical(other) == runtime.canonical(scope):
            return {}
        doc = self.open_store(runtime, other)
        cache_key = (str(runtime.paths[other]), other)
        version: object
        if doc is not None:
            # Keyed as global_claims is (the editor's conflict step asks that cache only
            # when this one changed), though a bullet that only moved keeps its key.
            version = (id(doc), doc.bullets_version)
        else:
            view = runtime.view(other)
            # The read itself, not its stamp: a racy stamp's read again (RACY_MARGIN_NS)
            # may find new text under the same stamp.
            version = (view.file, view.readable)
        cached = self._keys.get(cache_key)
        if cached is not None and cached[0] == version:
            return cached[1]
        if doc is not None:
            keys = key_index(doc.note_bullets())
        else:
            view = runtime.view(other)
            keys = key_index(view.parsed.bullets) if view.readable else {}
        self._keys[cache_key] = (version, keys)
        return keys

    def global_claims(self, runtime: MemoryRuntime) -> ClaimingNotes:
        """The global store's notes that make a claim, as the editor shows them (its buffer
        when open, else the file), cached until that store changes.

        Only the global store is ever compared across scopes (SPEC §13: the finding is
        on the project note), so no untrusted project note reaches this cache.
        """
        doc = self.open_store(runtime, "global")
        path = str(runtime.paths["global"])
        version: object
        if doc is not None:
            # Not notes_version: the findings point at the notes' columns too.
            version = (id(doc), doc.bullets_version)
        else:
            view = runtime.view("global")
            version = (view.file, view.readable)  # the read, not its stamp (as in other_keys)
        cached = self._claiming.get(path)
        if cached is not None and cached[0] == version:
            return cached[1]
        if doc is not None:
            bullets = doc.note_bullets()
        else:
            view = runtime.view("global")
            bullets = view.parsed.bullets
        by_key: dict[str, list[Bullet]] = {}
        for b in bullets:
            if not b.blank and claims_of_key(b.key):
                by_key.setdefault(b.key, []).append(b)
        claiming = ClaimingNotes({k: tuple(v) for k, v in by_key.items()}, path)
        self._claiming[path] = (version, claiming)
        return claiming

    def plan(self, runtime: MemoryRuntime) -> tuple[RecallPlan, int]:
        """The recall plan over both stores as the editor shows them, and its decision id.

        The decision id changes only when the set of notes left out may have changed,
        so callers can keep what they derived from the plan. The core decides when
        the cached plan can be updated in place (:func:`incremental_plan`); this only
        keeps one plan per project.
        """
        root = runtime.project_root
        decision, _ = self.decision(runtime)
        plan = self._plans[root][0]
        doc = self.open_store(runtime, "project") if root in self._kept else None
        if doc is not None:
            # decision() has just compared the kept edits with this buffer: its notes now.
            plan = with_kept_out(plan, doc.notes(), self._kept.pop(root))
            self._plans[root] = (plan, decision)
        return plan, decision

    def decision(self, runtime: MemoryRuntime) -> tuple[int, int]:
        """:meth:`plan`'s decision id and its body's UTF-8 bytes, without a plan made for
        an edit that changes no decision: a keystroke in a note the budget leaves out.

        Such an edit is kept beside the plan (:attr:`_kept`) until a plan is asked for:
        making one is copying every note's verdict, and freeing the last (4,500 of them,
        ~0.05 ms of a keystroke with the buffer's notes made a tuple for it).
        """
        root = runtime.project_root
        cached = self._plans.get(root)
        if cached is None or not self._edit_kept(runtime, cached[0]):
            cached = self._replan(runtime)
        return cached[1], cached[0].used

    def _edit_kept(self, runtime: MemoryRuntime, plan: RecallPlan) -> bool:
        """Whether ``plan`` with the kept edits is the plan still, the open buffer's notes
        edited since only in place, at most one of them again, and kept out (then kept)."""
        config = runtime.config()
        if config.max_inject_bytes != plan.max_bytes or config.inject != plan.inject:
            return False
        doc = self.open_store(runtime, "project") if self.project_readable(runtime) else None
        edited = doc.notes_edited(plan.project) if doc is not None else None
        if edited is None or tuple(self.store_notes(runtime, "global")) != plan.global_:
            return False
        indices, now = edited
        kept = self._kept.get(runtime.project_root, {})
        changed = [i for i in indices if now[i] != (kept[i].text if i in kept else plan.project[i])]
        if not changed:
            return True
        if len(changed) > 1:
            return False
        index = changed[0]
        note = kept_out(plan, "project", index, now[index], kept.get(index))
        if note is None:
            return False
        self._kept.setdefault(runtime.project_root, {})[index] = note
        return True

    def _replan(self, runtime: MemoryRuntime) -> tuple[RecallPlan, int]:
        """The plan brought up to both stores' notes: updated in place by the core when it
        can be, else made afresh with a new decision id."""
        config = runtime.config()
        readable = self.project_readable(runtime)
        doc = self.open_store(runtime, "project") if readable else None
        project = self.store_notes(runtime, "project") if readable else []
        global_ = self.store_notes(runtime, "global")
        root = runtime.project_root
        cached = self._plans.get(root)
        kept = self._kept.pop(root, None)
        if cached is not None:
            previous = cached[0]
            if kept:
                # The kept edits' notes as they were kept (the buffer moved on since).
                texts = list(previous.project)
                for index, note in kept.items():
                    texts[index] = note.text
                previous = with_kept_out(previous, tuple(texts), kept)
            # The buffer says which of its notes changed since the plan's (a keystroke: one).
            edited = doc.notes_changed(previous.project) if doc is not None else None
            updated = incremental_plan(
                previous, project, global_, config.max_inject_bytes, config.inject, edited
            )
            if updated is not None:
                self._plans[root] = (updated, cached[1])
                return updated, cached[1]
        plan = recall_plan(project, global_, config.max_inject_bytes, config.inject)
        self._decisions += 1
        self._plans[root] = (plan, self._decisions)
        return plan, self._decisions
