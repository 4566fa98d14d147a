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


async def test_a_hard_link_made_while_the_files_are_open_is_seen(start, workspace):
    """SPEC §3 freshness: two stores open, then the project's replaced by a hard link to
    the global one. The next look sees one file: the refusal on both documents (no more
    "also in global memory"), and no write through either scope splits it."""
    glob = workspace.write("global", ["shared note"])
    workspace.write("project", ["shared note"])
    s = await start(init_options={"trusted": True})
    project_uri = s.open(workspace.project_store)
    global_uri = s.open(glob)
    await s.codes(project_uri, "cross-scope-duplicate")
    workspace.project_store.unlink()
    os.link(glob, workspace.project_store)
    s.client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            changes=[
                lsp.FileEvent(uri=project_uri, type=lsp.FileChangeType.Deleted),
                lsp.FileEvent(uri=project_uri, type=lsp.FileChangeType.Created),
            ]
        )
    )
    message = (
        f"Refusing to use {workspace.root}/.pi: its memory.md is a hard link to the global "
        f"memory file ({glob}); project and global memory must be two files."
    )
    for uri in (project_uri, global_uri):
        ds = await s.wait_for(
            uri,
            lambda ds: (
                [d.message for d in ds if d.code == "outside-project"] == [message]
                and "cross-scope-duplicate" not in {d.code for d in ds}
            ),
        )
        assert ds[0].severity == lsp.DiagnosticSeverity.Error
    r = await s.command("memory.add", {"text": "planted"})
    assert r["error"] == message
    r = await s.command("memory.add", {"text": "planted", "scope": "global"})
    assert r["error"].startswith("Memory file has 2 hard links")
    assert glob.read_text() == store_text("shared note")
    assert os.stat(glob).st_ino == os.stat(workspace.project_store).st_ino


async def test_a_store_that_links_to_itself_is_a_symlinked_store(start, workspace):
    """``.pi/memory.md -> memory.md``: the store path itself is a symlink, refused as one
    (SPEC §1's words), on the open file and by the commands."""
    (workspace.root / ".pi").mkdir()
    workspace.project_store.symlink_to("memory.md")
    s = await start(init_options={"trusted": True})
    uri = s.open(workspace.project_store, text=f"{HEADER}\n\n- a note\n")
    ds = await s.codes(uri, "symlink")
    assert [d.severity for d in ds if d.code == "symlink"] == [lsp.DiagnosticSeverity.Error]
    assert "outside-project" not in {d.code for d in ds}
    r = await s.command("memory.add", {"text": "planted"})
    assert r["error"] == f"Refusing to use the symlinked memory file: {workspace.project_store}"


# -- chains of more links than Python's realpath could follow ----------------------------

LONG = 1100
"""More links than Python 3.11's realpath can follow: it recursed once per link."""

CHAIN = "is a chain of more symlinks than the system follows"


def chain_to(name, end, links=LONG):
    """``name`` leads to ``end`` (a link's target) through ``links`` symlinks, no loop."""
    before = end
    for i in range(links - 1):
        (name.parent / f"{name.name}-link{i}").symlink_to(before)
        before = f"{name.name}-link{i}"
    name.symlink_to(before)


async def test_a_pi_behind_a_long_chain_is_named_on_the_open_file_and_by_commands(start, workspace):
    """Export resolved the project store through the chain: RecursionError."""
    root = workspace.root
    (root / "pi-real").mkdir()
    chain_to(root / ".pi", "pi-real")
    workspace.write("global", ["global note"])
    message = f"Refusing to use {root}/.pi: it {CHAIN}, so it cannot be opened."
    s = await start(init_options={"trusted": True})
    uri = s.open(workspace.project_store, text=f"{HEADER}\n\n- a note\n")
    ds = await s.codes(uri, "outside-project")
    assert [d.message for d in ds if d.code == "outside-project"] == [message]
    for name, argument in (
        ("memory.add", {"text": "planted"}),
        ("memory.list", {}),
        ("memory.export", {"to": "AGENTS.md"}),
    ):
        r = await s.command(name, argument)
        assert r["error"] == message, name
    assert os.listdir(root / "pi-real") == []
    assert not (root / "AGENTS.md").exists()


async def test_export_into_a_long_chain_and_a_uri_behind_one_are_refused(
    start, workspace, tmp_path
):
    root = workspace.root
    workspace.write("global", ["global note"])
    (root / "AGENTS-real.md").write_text("# Agents\n")
    chain_to(root / "AGENTS.md", "AGENTS-real.md")
    other = tmp_path / "other-real"
    (other / ".git").mkdir(parents=True)
    chain_to(tmp_path / "other", other.name)
    s = await start(init_options={"trusted": True})
    r = await s.command("memory.export", {"to": "AGENTS.md"})
    assert r["error"] == f"Refusing to export to {root}/AGENTS.md: it {CHAIN}."
    assert (root / "AGENTS-real.md").read_text() == "# Agents\n"
    # Resolved to its end, the chain picked the project out there and wrote into it.
    r = await s.command("memory.add", {"text": "planted", "uri": str(tmp_path / "other")})
    assert r["error"] == f"Refusing to use {tmp_path}/other: it {CHAIN}."
    assert os.listdir(other) == [".git"]
