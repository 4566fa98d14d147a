"""The editor on a project whose ``.pi`` is a symlink loop, and on a project store that is
a hard link to the global one, through a real ``memory-ls serve`` (SPEC §1, §3, §7).

The open file's ``outside-project`` error says what is wrong (a loop; one file under two
names), and the commands answer as the CLI and the MCP tool do.
"""

from __future__ import annotations

import asyncio
import os

import pytest
from lsprotocol import types as lsp

from memory_ls.core.text import HEADER
from tests.conftest import store_text


def loop_message(root):
    return (
        f"Refusing to use {root}/.pi: it is a symlink that leads round in a loop, "
        "never to a folder."
    )


@pytest.mark.parametrize("shape", ["self", "two links"])
async def test_a_looping_pi_is_named_on_the_open_file_and_by_commands(start, workspace, shape):
    root = workspace.root
    if shape == "self":
        (root / ".pi").symlink_to(".pi")
    else:
        (root / ".pi").symlink_to(".pj")
        (root / ".pj").symlink_to(".pi")
    workspace.write("global", ["global note"])
    message = loop_message(root)
    s = await start(init_options={"trusted": True})
    # The buffer of a file that cannot exist on disk (an editor may hold one).
    uri = s.open(workspace.project_store, text=f"{HEADER}\n\n- a note\n")
    ds = await s.codes(uri, "outside-project")
    assert [(d.message, d.severity) for d in ds if d.code == "outside-project"] == [
        (message, lsp.DiagnosticSeverity.Error)
    ]
    for name, argument in (
        ("memory.add", {"text": "planted"}),
        ("memory.forget", {"text": "global note"}),
        ("memory.list", {}),
    ):
        r = await s.command(name, argument)
        assert r["error"] == message, name
        assert (r["project"], r["global"]) == ([], ["global note"]), name
    r = await s.command("memory.add", {"text": "g2", "scope": "global"})
    assert r["changed"] is True and "error" not in r


async def test_a_hard_linked_project_store_is_the_global_store_in_the_editor(start, workspace):
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
    s = await start(init_options={"trusted": True})
    for path in (workspace.project_store, glob):
        uri = s.open(path)
        ds = await s.codes(uri, "outside-project")
        assert [(d.message, d.severity) for d in ds if d.code == "outside-project"] == [
            (message, lsp.DiagnosticSeverity.Error)
        ], path
        # One file: its notes are not "also in project memory" (nor in global memory).
        assert "cross-scope-duplicate" not in {d.code for d in ds}, path
    for name, argument in (
        ("memory.add", {"text": "planted"}),
        ("memory.forget", {"text": "shared note"}),
        ("memory.move", {"text": "shared note", "scope": "global"}),
    ):
        r = await s.command(name, argument)
        assert r["error"] == message, name
        assert (r["project"], r["global"]) == ([], ["shared note"]), name
    r = await s.command("memory.add", {"text": "global note", "scope": "global"})
    assert (r["error"], r["changed"]) == (split, False)
    inject = await s.command("memory.inject")
    assert "project:" not in inject["body"] and inject["body"].count("- shared note") == 1
    assert glob.read_text() == store_text("shared note")
    assert os.stat(glob).st_ino == os.stat(workspace.project_store).st_ino
    # The user gives the project a file of its own: the next command sees it.
    workspace.project_store.unlink()
    await asyncio.sleep(0.3)  # past the 0.25 s a look at the disk stands for
    r = await s.command("memory.add", {"text": "global note", "scope": "global"})
    assert r["changed"] is True and "error" not in r, r
    r = await s.command("memory.add", {"text": "project note"})
    assert r["changed"] is True and "error" not in r, r
    assert (r["project"], r["global"]) == (["project note"], ["shared note", "global note"])
