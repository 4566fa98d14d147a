"""Deciding trust for a project from the file system (SPEC §4).

Gathers the facts — ``<agent-dir>/trust.json`` (read only, never written) and
which trust-requiring resources exist — and lets ``memory_ls.core.trust``
decide.
"""

from __future__ import annotations

import os
from pathlib import Path

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
from memory_ls.store.paths import read_small_text

TRUST_STORE_NAME = "trust.json"

# Pi's trust store grows by one short line per project; anything this big is
# not a trust store, and reading it would only cost time.
TRUST_STORE_LIMIT = 4 * 1024 * 1024


def trust_store_path(agent_dir: Path) -> Path:
    """Return Pi's trust store, ``<agent-dir>/trust.json``."""
    return agent_dir / TRUST_STORE_NAME


def decide_trust(
    project_root: Path,
    agent_dir: Path,
    explicit: bool | None = None,
    home: Path | None = None,
) -> TrustDecision:
    """Decide whether ``project_root`` is trusted, by the first rule that decides.

    1. ``explicit`` (the client's workspace trust, ``--trusted``/``--untrusted``);
    2. ``<agent_dir>/trust.json`` for the canonical root or its nearest decided
       ancestor (an unreadable or malformed file is no decision, and reported);
    3. untrusted if the project holds a trust-requiring resource, else trusted.

    ``home`` (default: the user's home) locates the one ``.agents/skills``
    folder that does not count. Problems with ``trust.json`` are kept in the
    decision whichever rule decides. Never raises for file-system trouble.
    """
    if explicit is not None:
        return explicit_decision(explicit)
    root = Path(os.path.realpath(project_root))
    problems: list[str] = []

    store = trust_store_path(agent_dir)
    read = read_small_text(store, TRUST_STORE_LIMIT)
    if read.text is not None:
        entries, found = parse_trust_store(read.text, str(store))
        problems.extend(found)
        decision = trust_store_decision(entries, str(root), str(store))
        if decision is not None:
            return with_problems(decision, problems)
    elif read.error is not None:
        problems.append(f"ignored {store}: {read.error}")

    in_project, in_ancestors, check_problems = _find_resources(root, home)
    problems.extend(check_problems)
    return with_problems(resources_decision(in_project, in_ancestors), problems)


def _find_resources(root: Path, home: Path | None) -> tuple[list[str], list[str], list[str]]:
    """Return the trust-requiring resources present: in the root, in ancestors, and problems."""
    problems: list[str] = []
    in_project = [name for name in PROJECT_TRUST_RESOURCES if _present(root / name, problems)]
    home_dir = Path(os.path.realpath(home if home is not None else Path.home()))
    in_ancestors: list[str] = []
    # `root` is canonical, so its parents are too and compare with `home_dir`.
    for folder in (root, *root.parents):
        if folder == home_dir:
            continue  # ~/.agents/skills is the user's own, not the repository's
        candidate = folder / ANCESTOR_TRUST_RESOURCE
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
            f"could not look inside {path.parent} ({exc.strerror or exc}); "
            "its trust-requiring resources count as present"
        )
        if problem not in problems:
            problems.append(problem)
        return True
    return True
