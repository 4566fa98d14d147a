"""Shared fixtures for the real-editor tests (Neovim, Emacs, VS Code, the grammar).

Each test needs a real tool installed by ``.ci/install-editors.sh``. Locally a
missing tool skips its test with the reason; under ``CI=true`` it fails instead,
so CI can never go green by skipping.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EDITORS = REPO / "editors"
TOOLS = Path(os.environ.get("MEMORY_LS_EDITOR_TOOLS", "/opt/memory-ls-editors"))
ARTIFACTS = REPO / "tests" / "artifacts"

HEADER = "<!-- Pi memory: one note per bullet; written by the memory tool and /memory -->"
LONG_NOTE = "remember " + " ".join(f"detail{i:03d}" for i in range(60))  # > 500 characters
PROJECT_NOTES = [
    "use pnpm, not npm",
    "🎉 ship on fridays is fine",
    "tests need DATABASE_URL",
    "🎉 Ship on Fridays is fine.",  # near-duplicate of the emoji note: `duplicate`
    LONG_NOTE,  # `too-long`
]
GLOBAL_NOTES = ["prefer ripgrep over grep", "write commit messages in the imperative"]
DUPLICATE_LINE = 5  # 0-based line of "🎉 Ship on Fridays is fine."
EMOJI_DUPLICATE = PROJECT_NOTES[3]


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def require(condition: object, reason: str) -> None:
    """Skip locally when a tool is missing; fail under CI=true."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"{reason} (CI=true: editor tests may not skip; run .ci/install-editors.sh)")
    pytest.skip(reason)


def memory_ls_bin() -> Path | None:
    """The `memory-ls` executable: $MEMORY_LS_BIN, the running venv's, or PATH's."""
    env = os.environ.get("MEMORY_LS_BIN")
    if env:
        return Path(env)
    beside = Path(sys.executable).parent / "memory-ls"
    if beside.exists():
        return beside
    found = shutil.which("memory-ls")
    return Path(found) if found else None


_SERVER_OK: dict[str, str | None] = {}


def server_problem() -> str | None:
    """Why `memory-ls serve` cannot run here, or None when it can."""
    if "problem" in _SERVER_OK:
        return _SERVER_OK["problem"]
    binary = memory_ls_bin()
    problem: str | None = None
    if binary is None:
        problem = "memory-ls is not installed (pip install -e .)"
    else:
        try:
            probe = subprocess.run(
                [str(binary), "serve", "--help"],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            if probe.returncode != 0:
                problem = f"`memory-ls serve --help` failed: {(probe.stderr or probe.stdout)[-500:]}"
        except (OSError, subprocess.TimeoutExpired) as error:
            problem = f"`memory-ls serve --help` did not run: {error}"
    _SERVER_OK["problem"] = problem
    return problem


def require_server() -> Path:
    problem = server_problem()
    require(problem is None, problem or "")
    binary = memory_ls_bin()
    assert binary is not None
    return binary


@dataclass
class Workspace:
    root: Path  # a git repository (has .git/) holding .pi/memory.md
    agent_dir: Path
    home: Path
    env: dict[str, str]

    @property
    def project_store(self) -> Path:
        return self.root / ".pi" / "memory.md"

    @property
    def global_store(self) -> Path:
        return self.agent_dir / "memory.md"

    def project_text(self) -> str:
        return self.project_store.read_text(encoding="utf-8")

    def global_text(self) -> str:
        return self.global_store.read_text(encoding="utf-8")


def store_text(notes: list[str]) -> str:
    return HEADER + "\n\n" + "".join(f"- {note}\n" for note in notes)


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    """A repository whose .pi/memory.md holds a duplicate and an over-long note, a global
    store with two notes, and an isolated HOME / XDG / agent dir (the real home is never touched)."""
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".pi").mkdir()
    (root / ".pi" / "memory.md").write_text(store_text(PROJECT_NOTES), encoding="utf-8")
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "memory.md").write_text(store_text(GLOBAL_NOTES), encoding="utf-8")
    home = tmp_path / "home"
    for sub in ("", ".config", ".cache", ".local/share", ".local/state", "tmp"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    binary = memory_ls_bin()
    path_entries = [str(binary.parent)] if binary else []
    path_entries += [str(TOOLS / "bin"), os.environ.get("PATH", "/usr/bin:/bin")]
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("XDG_", "NVIM", "VIM", "EMACS", "VSCODE_"))
    }
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_STATE_HOME=str(home / ".local/state"),
        TMPDIR=str(home / "tmp"),
        PI_CODING_AGENT_DIR=str(agent),
        PATH=os.pathsep.join(path_entries),
        LANG="C.UTF-8",
        LC_ALL="C.UTF-8",
    )
    yield Workspace(root=root, agent_dir=agent, home=home, env=env)
