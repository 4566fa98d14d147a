"""``memory_ls/store/git.py`` on its own: the attribute lines and an idempotent set-up.

Real git in a tmp repository (``HOME`` and ``GIT_CONFIG_GLOBAL`` in tmp); the full
workflows (merges, sync between machines) are in ``tests/cli/test_git.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from memory_ls.store.git import (
    DRIVER_COMMAND,
    GitRefused,
    Repository,
    git_setup,
    repository_of,
    wanted_attributes,
)
from tests.conftest import Workspace

if shutil.which("git") is None:  # pragma: no cover - the CI image installs git
    if os.environ.get("CI") == "true":
        raise RuntimeError("git is required under CI=true (.ci/run installs it)")
    pytest.skip("git is not installed", allow_module_level=True)


@pytest.fixture
def repo(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The workspace's agent dir as a fresh git repository (git's config in the tmp home)."""
    monkeypatch.setenv("HOME", str(workspace.home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(workspace.home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    subprocess.run(["git", "init", "-q"], cwd=workspace.agent_dir, check=True)
    return workspace.agent_dir


def test_attribute_lines_anchor_a_store_at_the_root_and_escape_spaces() -> None:
    assert wanted_attributes(Repository(Path("/r"), "memory.md")) == [
        "/memory.md merge=memory-ls",
        "/memory.inbox.jsonl merge=union",
    ]
    assert wanted_attributes(Repository(Path("/r"), "my agent/memory.md")) == [
        "my[[:space:]]agent/memory.md merge=memory-ls",
        "my[[:space:]]agent/memory.inbox.jsonl merge=union",
    ]


def test_setup_is_idempotent_and_git_sees_the_attribute(workspace: Workspace, repo: Path) -> None:
    (repo / ".gitattributes").write_text("*.png binary")  # no final newline: kept, then ours
    found = repository_of(repo, workspace.global_store, "set up git")
    first = git_setup(found)
    assert first.attributes_written and len(first.changes) == 4
    assert (repo / ".gitattributes").read_text() == (
        "*.png binary\n/memory.md merge=memory-ls\n/memory.inbox.jsonl merge=union\n"
    )
    again = git_setup(found)
    assert again.changes == [] and not again.attributes_written
    attr = subprocess.run(
        ["git", "check-attr", "merge", "--", "memory.md", "sub/memory.md"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert attr == "memory.md: merge: memory-ls\nsub/memory.md: merge: unspecified\n"
    driver = subprocess.run(
        ["git", "config", "merge.memory-ls.driver"], cwd=repo, capture_output=True, text=True
    ).stdout
    assert driver.strip() == DRIVER_COMMAND


def test_a_folder_outside_any_work_tree_is_refused_quoting_git(workspace: Workspace) -> None:
    with pytest.raises(GitRefused) as refused:
        repository_of(workspace.home, workspace.home / "memory.md", "set up git")
    message = str(refused.value)
    assert message.startswith(f"Cannot set up git: {workspace.home} is not in a git work tree")
    assert 'git says: "fatal: not a git repository' in message
