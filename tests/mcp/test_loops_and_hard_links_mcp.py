"""The MCP server on a project whose ``.pi`` is a symlink loop, and on a project store
hard-linked to the global one (SPEC §1, §3, §11): the tool and the resources say what is
wrong, as the CLI does, and nothing is written or split."""

from __future__ import annotations

import os
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
