"""``check FILE`` classifies a memory file as the editor does, through a real CLI process.

One store-layer classifier (``store.paths.classify_store_path``) decides which
store a path is for ``check`` and the language server alike (SPEC §7, §8).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEADER = "<!-- Pi memory: one note per bullet; written by the memory tool and /memory -->"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A trusted repository whose global store holds ``shared note``."""
    project = (tmp_path / "repo").resolve()
    (project / ".git").mkdir(parents=True)
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "memory.md").write_text(f"{HEADER}\n\n- shared note\n")
    return project


def check(repo: Path, *files: str) -> list[dict[str, object]]:
    agent = repo.parent / "agent"
    r = subprocess.run(
        [sys.executable, "-m", "memory_ls", "check", "--trusted", "--format", "json", *files],
        cwd=repo,
        env={**os.environ, "PI_CODING_AGENT_DIR": str(agent)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode in (0, 1), r.stderr
    rows: list[dict[str, object]] = json.loads(r.stdout)
    return rows


def test_a_pi_symlinked_inside_the_project_is_checked_as_its_store(repo: Path) -> None:
    (repo / "tools" / "pi").mkdir(parents=True)
    (repo / ".pi").symlink_to("tools/pi")
    (repo / "tools" / "pi" / "memory.md").write_text(f"{HEADER}\n\n- shared note\n")
    codes = [row["code"] for row in check(repo, ".pi/memory.md")]
    assert codes == ["cross-scope-duplicate"]


def test_a_folder_linked_to_pi_reaches_the_project_store(repo: Path) -> None:
    (repo / ".pi").mkdir()
    (repo / ".pi" / "memory.md").write_text(f"{HEADER}\n\n- shared note\n")
    (repo / "notes").symlink_to(".pi")
    codes = [row["code"] for row in check(repo, "notes/memory.md")]
    assert codes == ["cross-scope-duplicate"]


def test_a_pi_memory_below_the_root_names_the_real_store(repo: Path) -> None:
    (repo / "sub" / ".pi").mkdir(parents=True)
    (repo / "sub" / ".pi" / "memory.md").write_text(f"{HEADER}\n\n- elsewhere\n")
    rows = check(repo, "sub/.pi/memory.md")
    assert [(row["code"], row["message"]) for row in rows] == [
        (
            "not-the-store",
            f"This is not the project's memory store; the agent reads {repo / '.pi' / 'memory.md'}",
        )
    ]


def test_agent_dir_at_the_projects_pi_folder_makes_no_note_a_duplicate_of_itself(
    repo: Path,
) -> None:
    """``agentDir`` naming the project's ``.pi``: both stores are one file, so no note is
    "also in project memory" (its fix, "forget here, it stays there", forgot it)."""
    (repo / ".pi").mkdir()
    (repo / ".pi" / "memory.md").write_text(f"{HEADER}\n\n- use pnpm\n- run make test\n")
    r = subprocess.run(
        [sys.executable, "-m", "memory_ls", "check", "--trusted", "--format", "json"],
        cwd=repo,
        env={**os.environ, "PI_CODING_AGENT_DIR": str(repo / ".pi")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode in (0, 1), r.stderr
    codes = [row["code"] for row in json.loads(r.stdout)]
    assert "cross-scope-duplicate" not in codes, r.stdout
