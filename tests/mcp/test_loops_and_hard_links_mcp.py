"""The MCP server on a project whose ``.pi`` is a symlink loop, and on a project store
hard-linked to the global one (SPEC §1, §3, §11): the tool and the resources say what is
wrong, as the CLI does, and nothing is written or split."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Workspace, store_text
from tests.mcp.conftest import text_of


async def refuses(m: Any, arguments: dict[str, Any], message: str, notes: list[str]) -> None:
    result = await m.call(arguments)
    assert result.is_error, arguments
    assert text_of(result) == f"Error: {message}"
    content = result.structured_content
    assert content is not None
    assert content["error"] == message
    assert (content["project"], content["global"]) == ([], notes)


@pytest.mark.parametrize("shape", ["self", "two links"])
async def test_a_looping_pi_is_named_as_a_loop(
    memory: Any, workspace: Workspace, shape: str
) -> None:
    if shape == "self":
        (workspace.root / ".pi").symlink_to(".pi")
    else:
        (workspace.root / ".pi").symlink_to(".pj")
        (workspace.root / ".pj").symlink_to(".pi")
    workspace.write("global", ["global note"])
    message = (
        f"Refusing to use {workspace.root}/.pi: it is a symlink that leads round in a loop, "
        "never to a folder."
    )
    async with memory("--trusted") as m:
        for arguments in (
            {"action": "add", "text": "planted"},
            {"action": "forget", "text": "global note"},
            {"action": "list"},
        ):
            await refuses(m, arguments, message, ["global note"])
        assert (await m.read("memory://project")).text == ""
        recall = (await m.read("memory://recall")).text
        assert "project:" not in recall and recall.count("- global note") == 1
        assert f"project: {message}" in (await m.read("memory://doctor")).text
        added = await m.call({"action": "add", "text": "g2", "scope": "global"})
        assert not added.is_error


async def test_a_hard_linked_project_store_is_global_memory_only(
    memory: Any, workspace: Workspace
) -> None:
    glob = workspace.write("global", ["shared note"])
    (workspace.root / ".pi").mkdir()
    os.link(glob, workspace.project_store)
    message = (
        f"Refusing to use {workspace.root}/.pi: its memory.md is a hard link to the global "
        f"memory file ({glob}); project and global memory must be two files."
    )
    split = (
        "Memory file has 2 hard links (other names for the same file); replacing it would "
        "leave the others with the old notes. Remove the other names, or make this one a "
        f"copy of its own, to change it: {glob}"
    )
    async with memory("--trusted") as m:
        for arguments in (
            {"action": "add", "text": "planted"},
            {"action": "forget", "text": "shared note"},
            {"action": "update", "text": "shared note", "to": "changed"},
            {"action": "list"},
        ):
            await refuses(m, arguments, message, ["shared note"])
        result = await m.call({"action": "add", "text": "global note", "scope": "global"})
        assert result.is_error and text_of(result) == f"Error: {split}"
        assert (await m.read("memory://project")).text == ""
        recall = (await m.read("memory://recall")).text
        assert "project:" not in recall and recall.count("- shared note") == 1
        assert f"project: {message}" in (await m.read("memory://doctor")).text
        # The user gives the project a file of its own: both scopes work, in the same session.
        workspace.project_store.unlink()
        added = await m.call({"action": "add", "text": "global note", "scope": "global"})
        assert not added.is_error, text_of(added)
        added = await m.call({"action": "add", "text": "project note"})
        assert not added.is_error, text_of(added)
    assert glob.read_text() == store_text("shared note", "global note")
    assert workspace.project_store.read_text() == store_text("project note")


# -- chains of more links than Python's realpath could follow ----------------------------

CHAIN = "is a chain of more symlinks than the system follows"


def chain_to(name: Path, end: str, links: int = 1100) -> None:
    """``name`` leads to ``end`` (a link's target) through ``links`` symlinks, no loop:
    more than Python 3.11's realpath can follow (it recursed once per link)."""
    before = end
    for i in range(links - 1):
        (name.parent / f"{name.name}-link{i}").symlink_to(before)
        before = f"{name.name}-link{i}"
    name.symlink_to(before)


async def test_an_agent_dir_behind_a_long_chain_is_named(
    memory: Any, workspace: Workspace, tmp_path: Path
) -> None:
    """The server ended with RecursionError before its first answer."""
    agent = tmp_path / "chained-agent"
    (tmp_path / "agent-real").mkdir()
    chain_to(agent, "agent-real")
    why = f"{agent} {CHAIN}"
    async with memory("--trusted", "--agent-dir", str(agent)) as m:
        result = await m.call({"action": "add", "text": "x", "scope": "global"})
        assert result.is_error
        assert text_of(result) == f"Error: Cannot write the memory file {agent}/memory.md: {why}"
        result = await m.call({"action": "list"})
        assert result.is_error
        assert text_of(result) == f"Error: Cannot read {agent}/memory.md: {why}"
        added = await m.call({"action": "add", "text": "a project note"})
        assert not added.is_error  # the project scope is not concerned
    assert os.listdir(tmp_path / "agent-real") == []


def test_a_project_behind_a_long_chain_is_named(workspace: Workspace, tmp_path: Path) -> None:
    real = tmp_path / "project-real"
    (real / ".git").mkdir(parents=True)
    chain_to(tmp_path / "chained", real.name)
    r = subprocess.run(
        [sys.executable, "-m", "memory_ls.mcp_server", "--project", str(tmp_path / "chained")],
        env=workspace.env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 2
    assert r.stderr.splitlines()[-1].endswith(f"error: --project {CHAIN}: {tmp_path}/chained")
    assert os.listdir(real) == [".git"]


async def test_the_doctor_resource_says_a_read_only_store_would_not_be_written(
    memory: Any, workspace: Workspace
) -> None:
    """As the CLI's doctor does (``tests/cli/test_write_path.py``): the add is refused, and
    the doctor says why before it."""
    from memory_ls.store.files import read_only_message

    store = workspace.write("global", ["a"])
    store.chmod(0o444)
    async with memory("--trusted") as m:
        result = await m.call({"action": "add", "text": "b", "scope": "global"})
        assert result.is_error and text_of(result) == f"Error: {read_only_message(store)}"
        doctor = (await m.read("memory://doctor")).text
        assert f"read-only: {read_only_message(store)}" in doctor, doctor
