"""Deciding trust for a project from the file system (SPEC §4).

Gathers the facts — ``<agent-dir>/trust.json`` (read only, never written) and
which trust-requiring resources exist — and lets ``memory_ls.core.trust``
decide.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from memory_ls.core.records import replace
from memory_ls.core.text import display_path
from memory_ls.core.trust import (
    ANCESTOR_TRUST_RESOURCE,
    PROJECT_TRUST_RESOURCES,
    TrustDecision,
    explicit_decision,
    parse_trust_store,
    resources_decision,
    trust_store_decision,
    with_problems,
)
from memory_ls.store.paths import (
    project_folder,
    project_folder_refusal,
    read_small_text,
    real_path,
)

TRUST_STORE_NAME = "trust.json"

# Pi's trust store grows by one short line per project; anything this big is
# not a trust store, and reading it would only cost time.
TRUST_STORE_LIMIT = 4 * 1024 * 1024


def trust_store_path(agent_dir: Path) -> Path:
    """Return Pi's trust store, ``<agent-dir>/trust.json``."""
    return agent_dir / TRUST_STORE_NAME


class Stamps:
    """The stamp of each path a decision consults, taken as it is first consulted: before
    it is read or looked into, so a change made while the decision is being made shows as
    a changed stamp at the next look (a cache keyed by these never holds a decision the
    files no longer give)."""

    def __init__(self, stamp: Callable[[str], object]) -> None:
        self._stamp = stamp
        self.taken: dict[str, object] = {}

    def take(self, path: str) -> None:
        """Stamp ``path`` unless it was stamped already (the first, earliest stamp counts)."""
        if path not in self.taken:
            self.taken[path] = self._stamp(path)


def decide_trust(
    project_root: Path,
    agent_dir: Path,
    explicit: bool | None = None,
    home: Path | None = None,
    stamps: Stamps | None = None,
) -> TrustDecision:
    """Decide whether ``project_root`` is trusted, by the first rule that decides.

    1. ``explicit`` (the client's workspace trust, ``--trusted``/``--untrusted``);
    2. ``<agent_dir>/trust.json`` for the canonical root or its nearest decided
       ancestor (an unreadable or malformed file is no decision, and reported);
    3. untrusted if the project holds a trust-requiring resource, else trusted.

    ``home`` (default: the user's home) locates the one ``.agents/skills``
    folder that does not count. Problems with ``trust.json`` are kept in the
    decision whichever rule decides. Never raises for file-system trouble.

    The decision lists in ``consulted`` the files it read and, for every path
    it looked for, the folder where that path (or its first missing folder)
    would appear or go: while none of them changes, the decision holds.
    Nothing is looked for inside a ``.pi`` that resolves outside the project
    (its store is refused anyway, SPEC §1): another folder's files decide nothing.
    ``stamps``, when given, stamps each of them as it is consulted (:class:`Stamps`).
    """
    if explicit is not None:
        return explicit_decision(explicit)
    root = Path(real_path(project_root))
    problems: list[str] = []
    consulted = _Consulted(stamps)

    store = trust_store_path(agent_dir)
    consulted.read(store)
    read = read_small_text(store, TRUST_STORE_LIMIT)
    if read.text is not None:
        entries, found = parse_trust_store(read.text, str(store))
        problems.extend(found)
        decision = trust_store_decision(entries, str(root), str(store))
        if decision is not None:
            return consulted.into(with_problems(decision, problems))
    elif read.error is not None:
        problems.append(f"ignored {display_path(store)}: {read.error}")

    in_project, in_ancestors, check_problems = _find_resources(root, home, consulted)
    problems.extend(check_problems)
    return consulted.into(with_problems(resources_decision(in_project, in_ancestors), problems))


class _Consulted:
    """The paths a decision depends on, in order, each once.

    A path looked for only by its presence needs no entry of its own: its
    coming or going changes the folder that holds it (the nearest existing
    one, when folders on its way are missing too), and that folder's stamp,
    symlinks followed, is what a cache compares. That keeps the list short:
    one folder per level of the project's ancestry, not one entry per resource.
    """

    def __init__(self, stamps: Stamps | None = None) -> None:
        self._paths: dict[str, None] = {}
        self._stamps = stamps

    def _add(self, path: str) -> None:
        self._paths[path] = None
        if self._stamps is not None:
            self._stamps.take(path)

    def read(self, path: Path) -> None:
        """``path`` is about to be read: its content decides, and it may come or go."""
        self._add(str(path))
        self.look(path)

    def look(self, path: Path) -> None:
        """``path`` is about to be looked for: its nearest existing folder shows it come or go."""
        folder = path.parent
        while not os.path.isdir(folder) and folder != folder.parent:
            folder = folder.parent
        self._add(str(folder))

    def into(self, decision: TrustDecision) -> TrustDecision:
        return replace(decision, consulted=tuple(self._paths))


def _find_resources(
    root: Path, home: Path | None, consulted: _Consulted
) -> tuple[list[str], list[str], list[str]]:
    """Return the trust-requiring resources present: in the root, in ancestors, and problems."""
    problems: list[str] = []
    in_project: list[str] = []
    consulted.look(project_folder(root))
    if project_folder_refusal(root) is None:
        for name in PROJECT_TRUST_RESOURCES:
            consulted.look(root / name)
            if _present(root / name, problems):
                in_project.append(name)
    home_dir = Path(real_path(home if home is not None else Path.home()))
    in_ancestors: list[str] = []
    # `root` is canonical, so its parents are too and compare with `home_dir`.
    for folder in (root, *root.parents):
        if folder == home_dir:
            continue  # ~/.agents/skills is the user's own, not the repository's
        candidate = folder / ANCESTOR_TRUST_RESOURCE
        consulted.look(candidate)
        if _present(candidate, problems):
            if folder == root:
                in_project.append(ANCESTOR_TRUST_RESOURCE)
            else:
                in_ancestors.append(str(candidate))
    return in_project, in_ancestors, problems


def _present(path: Path, problems: list[str]) -> bool:
    """Whether ``path`` exists (a dangling symlink counts: it names a resource).

    A path that cannot be checked (permission denied) counts as present, since
    an unverifiable resource must not make a project trusted.
    """
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        # One report per folder: an unreadable `.pi/` would otherwise give eight.
        problem = (
            f"could not look inside {display_path(path.parent)} ({exc.strerror or exc}); "
            "its trust-requiring resources count as present"
        )
        if problem not in problems:
            problems.append(problem)
        return True
    return True
