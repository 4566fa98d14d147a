"""``memory.sync`` (SPEC §14) through a real server: the global store synced with real git.

The agent dir is a clone of a bare remote (a dotfiles repository); another clone pushes a
note first. The command's result lists the note that arrived, the client sees work-done
progress and a ``window/showMessage`` with the summary, and an open buffer of the store
shows the arrived note. Git's config is ``$HOME/.gitconfig`` in the workspace's tmp home.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from tests.conftest import Workspace, store_text

from .conftest import TIMEOUT
from .test_result_schemas import validate

if shutil.which("git") is None:  # pragma: no cover - the CI image installs git
    if os.environ.get("CI") == "true":
        raise RuntimeError("git is required under CI=true (.ci/run installs it)")
    pytest.skip("git is not installed", allow_module_level=True)


def git(workspace: Workspace, cwd: Path, *args: str) -> None:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=workspace.env(), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, (args, done.stderr)


@pytest.fixture
def dotfiles(workspace: Workspace, tmp_path: Path) -> Path:
    """The workspace's agent dir as a clone of a bare remote, and another clone of it."""
    (workspace.home / ".gitconfig").write_text(
        "[user]\n\tname = Test User\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"
    )
    remote = tmp_path / "remote.git"
    git(workspace, tmp_path, "init", "-q", "--bare", str(remote))
    other = tmp_path / "other-machine"
    git(workspace, tmp_path, "clone", "-q", str(remote), str(other))
    (other / "memory.md").write_text(store_text("from the other machine"))
    git(workspace, other, "add", "memory.md")
    git(workspace, other, "commit", "-qm", "first note")
    git(workspace, other, "push", "-qu", "origin", "main")
    shutil.rmtree(workspace.agent_dir)
    git(workspace, tmp_path, "clone", "-q", str(remote), str(workspace.agent_dir))
    return other


async def test_memory_sync_reports_what_arrived_with_progress_and_a_message(
    start, workspace: Workspace, dotfiles: Path
) -> None:
    workspace.global_store.write_text(store_text("from the other machine", "local note"))
    s = await start("visual-studio-code")
    uri = s.open(workspace.global_store)
    # The other machine adds a note and pushes meanwhile.
    (dotfiles / "memory.md").write_text(store_text("from the other machine", "pushed later"))
    git(workspace, dotfiles, "commit", "-qam", "second note")
    git(workspace, dotfiles, "push", "-q")

    result = await s.command("memory.sync")
    assert "error" not in result, result
    validate("sync-result", result)
    assert result["scope"] == "global" and result["upstream"] == "origin/main"
    assert result["arrived"] == ["pushed later"] and result["left"] == []
    assert result["commit"].startswith("memory: +1 -0 on ") and result["pushed"] is True
    on_disk = workspace.global_store.read_text()
    assert on_disk == store_text("from the other machine", "local note", "pushed later")
    assert any(
        m.type == lsp.MessageType.Info
        and m.message.startswith("Memory: Synced global memory with origin/main: 1 note arrived")
        for m in s.client.messages
    ), s.client.messages
    assert any(
        isinstance(r, lsp.WorkDoneProgressBegin) and "Syncing the global memory" in str(r.message)
        for reports in s.client.progress_reports.values()
        for r in reports
    ), s.client.progress_reports
    # The open buffer shows the note that arrived.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while s.buffers[uri] != on_disk and loop.time() < deadline:
        await asyncio.sleep(0.05)
    assert s.buffers[uri] == on_disk


async def test_memory_sync_refuses_without_a_repository_and_says_so(
    start, workspace: Workspace
) -> None:
    workspace.write("global", ["kept"])
    s = await start("neovim")
    result = await s.command("memory.sync", {"scope": "global"})
    assert "is not in a git work tree" in result["error"] and result["pushed"] is False
    assert workspace.text("global") == store_text("kept")
    assert any(
        m.type == lsp.MessageType.Error and "not in a git work tree" in m.message
        for m in s.client.messages
    )
    bad = await s.command("memory.sync", {"scope": "nowhere"})
    assert bad["error"] == "scope must be one of project, global."
