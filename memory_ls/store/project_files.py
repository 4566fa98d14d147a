"""What the project tree holds, for SPEC §13's ``stale-path``, ``stale-script`` and
``instruction-duplicate``: one walk into a :class:`~memory_ls.core.stale.ProjectSnapshot`,
and safe reads of the files those checks compare notes with.

Every read goes through :func:`memory_ls.store.facts.read_disk_bytes`: regular files
only, never through a symlink, never blocking on a FIFO, and size-limited (a file over
its limit is left out, not half read). The walk never follows a symlink either (so a
symlink loop is one entry, not a hang) and stops after :data:`MAX_WALK_ENTRIES` entries.
"""

from __future__ import annotations

import fnmatch
import itertools
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from memory_ls.core.checks import Finding, sort_findings
from memory_ls.core.conflicts import conflict_findings
from memory_ls.core.instruction_duplicates import (
    GLOBAL_INSTRUCTION_FILES,
    PROJECT_INSTRUCTION_FILES,
    instruction_duplicate_findings,
    instruction_index,
)
from memory_ls.core.notes import ParsedFile
from memory_ls.core.stale import (
    JUSTFILE_NAMES,
    MAKEFILE_NAMES,
    MakeTargets,
    PackageInfo,
    ProjectSnapshot,
    just_recipes,
    make_targets,
    package_info,
    pnpm_workspace_globs,
    skipped_folder,
    stale_findings,
)
from memory_ls.store.facts import read_disk_bytes
from memory_ls.store.paths import real_path

if TYPE_CHECKING:
    from memory_ls.core.scopes import Scope

MAX_WALK_ENTRIES = 200_000
"""The walk stops after this many entries: a larger tree is judged on what was seen."""
MAX_BUILD_FILE_BYTES = 1024 * 1024
"""A package.json, Makefile, justfile or pnpm-workspace.yaml larger than this is not read."""
MAX_INSTRUCTION_BYTES = 1024 * 1024
"""An instruction file larger than this is not compared with the notes."""
MAX_WORKSPACE_GLOBS = 1000
"""A package.json / pnpm-workspace.yaml naming more workspace globs than this (a real
monorepo names a few dozen) leaves the package scripts unknown: matching 60,000 globs
against thousands of folders took check a minute."""
MAX_GLOB_MATCHES = 2_000_000
"""Globs times folders holding a package.json: over this, the scripts are unknown too."""


def _read_text(path: Path, limit: int) -> str | None:
    """The text of a regular file no larger than ``limit``, or ``None`` (missing, a
    symlink, a FIFO or device, too large, unreadable). Bad UTF-8 is replaced, not fatal."""
    read = read_disk_bytes(path, limit + 1)
    if read.error is not None or read.symlink or not read.regular or len(read.data) > limit:
        return None
    return read.data.decode("utf-8", errors="replace")


def _inside(path: Path, root: Path) -> bool:
    """Whether ``path``'s folder, symlinks resolved, is inside ``root`` (resolved)."""
    try:
        parent = Path(real_path(path.parent))
        return parent == root or root in parent.parents
    except (OSError, ValueError):
        return False


def walk_project(root: Path) -> tuple[frozenset[str], frozenset[str]]:
    """``(root_entries, paths)`` of the project at ``root``: every name at the root, and the
    relative POSIX path of every file and folder the search visits (SPEC §13 skips
    :func:`skipped_folder` folders and virtual environments). Symlinks are entries,
    never followed. Never raises."""
    root_entries: set[str] = set()
    paths: set[str] = set()
    try:
        with os.scandir(root) as it:
            root_entries = {e.name for e in it}
    except OSError:
        return frozenset(), frozenset()
    stack: list[tuple[str, str]] = [(str(root), "")]
    while stack and len(paths) < MAX_WALK_ENTRIES:
        folder, rel = stack.pop()
        try:
            with os.scandir(folder) as it:
                # Stop inside a folder too: one folder of millions of files is a big tree.
                entries = list(itertools.islice(it, MAX_WALK_ENTRIES - len(paths)))
        except OSError:
            continue
        for e in entries:
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir and skipped_folder(
                e.name, has_pyvenv_cfg=os.path.lexists(os.path.join(e.path, "pyvenv.cfg"))
            ):
                continue
            child = f"{rel}/{e.name}" if rel else e.name
            paths.add(child)
            if is_dir:
                stack.append((e.path, child))
    return frozenset(root_entries), frozenset(paths)


def _first_existing(root: Path, names: Iterable[str], entries: frozenset[str]) -> str | None:
    for name in names:
        if name in entries:
            return _read_text(root / name, MAX_BUILD_FILE_BYTES)
    return None


def _workspace_dirs(globs: Iterable[str], paths: frozenset[str]) -> list[str] | None:
    """The folders the workspaces globs name that hold a package.json (seen by the walk),
    or ``None`` when there are too many globs to match (then the workspace packages, and
    with them the scripts, are unknown: nothing is judged by them)."""
    candidates = sorted(p[: -len("/package.json")] for p in paths if p.endswith("/package.json"))
    patterns: dict[str, None] = {}
    for raw in globs:
        pattern = raw.strip().removeprefix("./").rstrip("/")
        if pattern and not pattern.startswith("!"):
            patterns[pattern] = None
    if len(patterns) > MAX_WORKSPACE_GLOBS or len(patterns) * len(candidates) > MAX_GLOB_MATCHES:
        return None
    out: dict[str, None] = {}
    for pattern in patterns:
        match = re.compile(fnmatch.translate(pattern)).match
        for d in candidates:
            if d not in out and (d == pattern or match(d)):
                out[d] = None
    return list(out)


def _packages(
    root: Path, entries: frozenset[str], paths: frozenset[str]
) -> tuple[PackageInfo, ...] | None:
    if "package.json" not in entries:
        return None
    text = _read_text(root / "package.json", MAX_BUILD_FILE_BYTES)
    top = None if text is None else package_info(text)
    if top is None:
        return None  # the root's is unreadable or not an object: scripts are unknown
    globs = list(top.workspaces)
    if "pnpm-workspace.yaml" in entries:
        pnpm = _read_text(root / "pnpm-workspace.yaml", MAX_BUILD_FILE_BYTES)
        if pnpm is not None:
            globs.extend(pnpm_workspace_globs(pnpm))
    dirs = _workspace_dirs(globs, paths)
    if dirs is None:
        return None
    out = [top]
    for d in dirs:
        path = root / d / "package.json"
        if not _inside(path, Path(real_path(root))):
            continue
        sub = _read_text(path, MAX_BUILD_FILE_BYTES)
        info = None if sub is None else package_info(sub)
        if info is not None:
            out.append(info)
    return tuple(out)


def _binaries(root: Path) -> frozenset[str]:
    try:
        with os.scandir(root / "node_modules" / ".bin") as it:
            return frozenset(e.name for e in it)
    except OSError:
        return frozenset()


def project_snapshot(root: Path) -> ProjectSnapshot:
    """The project as the stale checks see it: one walk and the root's build files.

    A Makefile or justfile that cannot be read (too large, a FIFO, a symlink) is as
    if absent: nothing is judged by it. Never raises, never blocks."""
    root_entries, paths = walk_project(root)
    make_text = _first_existing(root, MAKEFILE_NAMES, root_entries)
    just_text = _first_existing(root, JUSTFILE_NAMES, root_entries)
    make: MakeTargets | None = None if make_text is None else make_targets(make_text)
    just: MakeTargets | None = None if just_text is None else just_recipes(just_text)
    return ProjectSnapshot(
        root_entries=root_entries,
        paths=paths,
        packages=_packages(root, root_entries, paths),
        make=make,
        just=just,
        binaries=_binaries(root),
    )


def project_instruction_texts(root: Path) -> dict[str, str]:
    """The project's instruction files (SPEC §13's list, at the root) that can be read
    safely: absolute path -> text. A symlink is followed only when it ends inside the
    project (``CLAUDE.md -> AGENTS.md`` is common; ``AGENTS.md -> ~/.bashrc`` is an
    attack), and a file already read under another name is not read twice."""
    try:
        resolved = Path(real_path(root))
    except (OSError, ValueError):
        return {}
    out: dict[str, str] = {}
    seen: set[Path] = set()
    for rel in PROJECT_INSTRUCTION_FILES:
        path = root / rel
        try:
            real = Path(real_path(path))
        except (OSError, ValueError):
            continue
        if real in seen or not (real.parent == resolved or resolved in real.parents):
            continue
        text = _read_text(real, MAX_INSTRUCTION_BYTES)
        if text is not None:
            seen.add(real)
            out[str(path)] = text
    return out


def global_instruction_texts(agent_dir: Path, home: Path | None = None) -> dict[str, str]:
    """The user's own instruction files for the global store: path -> text. These are
    the user's files (often symlinks into a dotfiles repository), so a symlink is
    resolved first; the read itself is still regular-files-only and size-limited."""
    base = home if home is not None else Path.home()
    candidates = [base / p.removeprefix("~/") for p in GLOBAL_INSTRUCTION_FILES]
    candidates.append(agent_dir / "AGENTS.md")
    out: dict[str, str] = {}
    for path in candidates:
        try:
            real = Path(real_path(path))
        except (OSError, ValueError):
            continue
        text = _read_text(real, MAX_INSTRUCTION_BYTES)
        if text is not None and str(path) not in out:
            out[str(path)] = text
    return out


def stale_and_conflict_findings(
    root: Path,
    agent_dir: Path,
    scope: Scope,
    parsed: ParsedFile,
    other: ParsedFile | None = None,
    other_path: str | None = None,
) -> list[Finding]:
    """SPEC §13's findings for one store (what ``check`` and the doctor report):
    ``stale-path`` / ``stale-script`` (project store only, against the tree at ``root``),
    ``instruction-duplicate`` (against the scope's instruction files) and ``conflict``
    (inside the store and, for the project store, with ``other``, the global store's
    notes). The caller decides whether ``other`` may be compared (trust)."""
    bullets = parsed.bullets
    if not any(not b.blank for b in bullets):
        return []  # nothing to compare: no walk, no reads
    found: list[Finding] = []
    if scope == "project":
        found.extend(stale_findings(bullets, parsed.lines, project_snapshot(root)))
        texts = project_instruction_texts(root)
    else:
        texts = global_instruction_texts(agent_dir)
    if texts:
        found.extend(instruction_duplicate_findings(bullets, instruction_index(texts)))
    theirs = other.bullets if other is not None and scope == "project" else ()
    found.extend(conflict_findings(bullets, scope, theirs, other_path))
    return sort_findings(found)
