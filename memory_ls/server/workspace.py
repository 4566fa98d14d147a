"""Projects, open documents and what each document is (SPEC §7 Documents).

Each workspace folder is its own project with its own :class:`MemoryRuntime`;
a command's ``uri`` picks one, the first folder is the default. The client's
``trusted`` covers its folders and what lies inside them; any other project is
decided by ``trust.json`` and its resources, as the CLI decides it (SPEC §4). A
document is a memory document when its path is the global store or ends in
``/.pi/memory.md``.
Trust, configuration, other-scope key indexes and recall plans are cached here
and keyed on what they depend on, so an edit does not re-read files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from memory_ls.core.checks import key_index
from memory_ls.core.models import Scope, other_scope
from memory_ls.core.recall import INTRO, MARKER, TAIL_RESERVE, PlannedNote, RecallPlan, recall_plan
from memory_ls.core.text import utf8_length
from memory_ls.server.documents import MemoryDocument
from memory_ls.server.settings import Settings
from memory_ls.store.paths import (
    no_project_message,
    project_root_for,
    project_store_path,
    refused_project_store,
    repository_root_for,
)
from memory_ls.store.runtime import MemoryRuntime


def _resolved(path: Path) -> Path | None:
    """``path`` canonical (symlinks and ``..`` resolved), or ``None`` if no path can be."""
    try:
        return Path(os.path.realpath(path))
    except ValueError:  # a NUL byte
        return None


def _nearest_existing(path: Path) -> Path:
    """``path`` itself when it exists, else its nearest ancestor that does."""
    while not os.path.exists(path) and path.parent != path:
        path = path.parent
    return path


def canonical(path: Path) -> str:
    """The path with its folder's symlinks resolved (the file itself may be a symlink)."""
    return os.path.join(os.path.realpath(path.parent), path.name)


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    """What a memory document is: which project, which scope, and whether it is the store."""

    runtime: MemoryRuntime
    scope: Scope | None
    """``None`` for a ``.pi/memory.md`` that is not its project's store."""
    real_store: str | None = None


@dataclass(slots=True)
class _PlanEntry:
    project: list[str]
    global_: list[str]
    max_bytes: int
    inject: bool
    plan: RecallPlan
    decisions: int
    budget: list[tuple[int, bool]] | None = None
    """Per planned note: bytes used before it, and whether its section had started."""


class Projects:
    """Every project the server knows, the open documents, and cached facts about both."""

    def __init__(self) -> None:
        self.settings = Settings()
        self.folders: list[Path] = []
        self.runtimes: dict[Path, MemoryRuntime] = {}
        self.documents: dict[str, MemoryDocument] = {}
        self.by_path: dict[str, MemoryDocument] = {}
        self._keys: dict[tuple[str, Scope], tuple[object, dict[str, str]]] = {}
        self._plans: dict[Path, _PlanEntry] = {}
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
        """Forget cached trust, configuration, key indexes and plans."""
        self._keys.clear()
        self._plans.clear()
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
                root, agent_dir=s.agent_dir, trusted=trusted, read_only=s.read_only
            )
            self.runtimes[root] = runtime
        return runtime

    def covers(self, root: Path) -> bool:
        """Whether the client's trust decision reaches the project at ``root`` (canonical).

        It does for a workspace folder's own project and for any project inside a
        folder, and for nothing else (SPEC §4): a cloned repository opened or
        named from elsewhere is decided by its own ``trust.json`` entry and
        resources, never by the client's trust in the workspace.
        """
        for folder in self.folders:
            real = Path(os.path.realpath(folder))
            if root == real or real in root.parents or project_root_for(real) == root:
                return True
        return False

    def missing_project(self, path: Path) -> str | None:
        """Why a command's ``uri`` picks no project: it names nothing, outside every folder.

        The path is judged where it resolves to (symlinks and ``..`` followed): a
        path that exists picks its project, a missing one inside a workspace
        folder picks the project of its nearest existing ancestor; any other
        path names nothing, and nothing creates a project (SPEC §1).
        """
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
        if path is None:
            return self.default_runtime()
        refused = self._refused_project_store(path)
        if refused is not None:
            # `<root>/.pi/memory.md` of a project whose .pi leads out (maybe to the
            # agent dir): the uri names that project, whatever file it leads to.
            return refused
        default = self.default_runtime()
        real = _resolved(path)
        if real is None:
            return default  # names nothing (a NUL byte); missing_project refused it first
        if canonical(path) == canonical(default.paths["global"]):
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

    def _refused_project_store(self, path: Path) -> MemoryRuntime | None:
        """The runtime of the project whose store ``path`` names, when that store is refused."""
        refused = refused_project_store(path)
        return None if refused is None else self.runtime_for_path(refused[0])

    # -- documents -----------------------------------------------------------------

    def describe(self, path: Path) -> DocumentInfo | None:
        """What the file at ``path`` is, or ``None`` when it is not a memory document."""
        refused = self._refused_project_store(path)
        if refused is not None:
            # The project's store, refused (it gets the `outside-project` error), even
            # when its .pi leads to the agent dir and so to the global store's file.
            return DocumentInfo(refused, "project")
        canon = canonical(path)
        runtime = self.default_runtime()
        if canon == canonical(runtime.paths["global"]):
            return DocumentInfo(runtime, "global")
        if path.name != "memory.md" or path.parent.name != ".pi":
            return None
        runtime = self.runtime_for_path(path.parent.parent)
        store = canonical(project_store_path(runtime.project_root))
        if canon != store:
            return DocumentInfo(runtime, None, store)
        return DocumentInfo(runtime, "project")

    def open(self, doc: MemoryDocument) -> None:
        """Track an open document."""
        self.documents[doc.uri] = doc
        self.by_path[canonical(doc.path)] = doc

    def close(self, uri: str) -> MemoryDocument | None:
        """Stop tracking a document."""
        doc = self.documents.pop(uri, None)
        if doc is not None:
            self.by_path.pop(canonical(doc.path), None)
        return doc

    def open_store(self, runtime: MemoryRuntime, scope: Scope) -> MemoryDocument | None:
        """The open document of ``runtime``'s ``scope`` store, if it is open."""
        return self.by_path.get(canonical(runtime.paths[scope]))

    # -- cached facts ----------------------------------------------------------------

    def store_notes(self, runtime: MemoryRuntime, scope: Scope) -> list[str]:
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
        """Key → note of the *other* store (empty for an untrusted project)."""
        other = other_scope(scope)
        if other == "project" and not self.project_readable(runtime):
            return {}
        doc = self.open_store(runtime, other)
        cache_key = (str(runtime.paths[other]), other)
        version: object
        if doc is not None:
            version = (id(doc), doc.notes_version)
        else:
            view = runtime.view(other)
            version = (view.file.stamp, view.readable)
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

    def plan(self, runtime: MemoryRuntime) -> tuple[RecallPlan, int]:
        """The recall plan over both stores as the editor shows them, and its decision id.

        The decision id changes only when the set of notes left out may have changed,
        so callers can keep what they derived from the plan.
        """
        config = runtime.config()
        project = self.store_notes(runtime, "project") if self.project_readable(runtime) else []
        global_ = self.store_notes(runtime, "global")
        entry = self._plans.get(runtime.project_root)
        if (
            entry is not None
            and entry.max_bytes == config.max_inject_bytes
            and entry.inject == config.inject
        ):
            reused = _reuse(entry, project, global_)
            if reused is not None:
                entry.project, entry.global_, entry.plan = project, global_, reused
                return reused, entry.decisions
        plan = recall_plan(project, global_, config.max_inject_bytes, config.inject)
        self._decisions += 1
        self._plans[runtime.project_root] = _PlanEntry(
            project, global_, config.max_inject_bytes, config.inject, plan, self._decisions
        )
        return plan, self._decisions


def _reuse(entry: _PlanEntry, project: list[str], global_: list[str]) -> RecallPlan | None:
    """The cached plan updated for a one-note edit that cannot change any decision.

    A note the plan leaves out does not touch the budget, so editing it changes
    nothing else as long as it still does not fit where it stands. Anything else
    (an included note, several notes, a note added or removed) is re-planned.
    """
    if len(project) != len(entry.project) or len(global_) != len(entry.global_):
        return None
    changed = [("project", i) for i in _diff(entry.project, project)]
    changed += [("global", i) for i in _diff(entry.global_, global_)]
    plan = entry.plan
    if not changed:
        return plan
    if len(changed) != 1:
        return None
    scope, index = changed[0]
    position = index if scope == "project" else len(project) + index
    old = plan.notes[position]
    if old.included:
        return None
    text = (project if scope == "project" else global_)[index]
    cost = utf8_length(f"- {text}") + 1
    if cost < old.bytes and _fits_at(entry, position, cost):
        return None
    note = PlannedNote(old.scope, old.index, text, cost, False)
    notes = (*plan.notes[:position], note, *plan.notes[position + 1 :])
    return RecallPlan(plan.inject, plan.max_bytes, notes, plan.body)


def _fits_at(entry: _PlanEntry, position: int, cost: int) -> bool:
    """Whether a note of ``cost`` bytes at ``position`` would be taken (recall_plan's rule).

    The bytes used before each note are computed once per plan: a reused plan
    keeps every decision, so they stay valid.
    """
    if entry.budget is None:
        entry.budget = _budget(entry.plan)
    used, started = entry.budget[position]
    scope = entry.plan.notes[position].scope
    extra = 0 if started else utf8_length(f"{scope}:") + 1
    return used + extra + cost <= max(0, entry.plan.max_bytes - TAIL_RESERVE)


def _budget(plan: RecallPlan) -> list[tuple[int, bool]]:
    used = utf8_length(MARKER) + 1 + utf8_length(INTRO) + 1
    started: set[str] = set()
    out: list[tuple[int, bool]] = []
    for n in plan.notes:
        out.append((used, n.scope in started))
        if n.included:
            if n.scope not in started:
                started.add(n.scope)
                used += utf8_length(f"{n.scope}:") + 1
            used += n.bytes
    return out


def _diff(old: list[str], new: list[str]) -> list[int]:
    if old == new:
        return []
    return [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b][:2]
