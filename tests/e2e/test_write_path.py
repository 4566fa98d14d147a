"""The language server's commands against a store another process holds locked (SPEC §3, §7).

A command waits for the lock in a worker thread, so the server keeps answering
(hover here) while it waits, and the wait ends in the command's error result.
"""

from __future__ import annotations

import asyncio

from memory_ls.store.files import locked_message, read_only_message
from tests.conftest import store_text


async def test_hover_is_answered_while_a_command_waits_for_the_lock(start, workspace, monkeypatch):
    store = workspace.write("project", ["a"])
    monkeypatch.setenv("MEMORY_LS_LOCK_TIMEOUT", "3")
    s = await start("visual-studio-code")
    uri = s.open(store)
    await asyncio.sleep(0.1)
    result, hover = await s.command_while_locked(
        store, workspace.env(), "memory.add", {"text": "b"}, uri
    )
    assert hover is not None and "project memory" in hover.contents.value
    assert result["error"] == locked_message(store, 3)
    assert result["changed"] is False and result["project"] == ["a"]
    assert store.read_text() == store_text("a")


async def test_a_read_only_store_is_refused_by_a_command(start, workspace):
    store = workspace.write("project", ["a"])
    store.chmod(0o444)
    s = await start("neovim")
    result = await s.command("memory.add", {"text": "b"})
    assert result["error"] == read_only_message(store)
    assert result["changed"] is False
    assert store.read_text() == store_text("a")


async def test_hover_is_answered_while_an_import_or_export_waits_for_the_lock(
    start, workspace, monkeypatch
):
    # memory.import and memory.export write under a lock too: waiting for it must not
    # stop the server from answering, as for every other command.
    store = workspace.write("project", ["a"])
    notes = workspace.root / "notes.md"
    notes.write_text("- imported\n")
    agents = workspace.root / "AGENTS.md"
    agents.write_text("# Agents\n")
    monkeypatch.setenv("MEMORY_LS_LOCK_TIMEOUT", "3")
    s = await start("visual-studio-code")
    uri = s.open(store)
    await asyncio.sleep(0.1)
    for name, arg, locked in (
        ("memory.import", {"files": [str(notes)]}, store),
        ("memory.export", {"to": str(agents)}, agents),
    ):
        result, hover = await s.command_while_locked(locked, workspace.env(), name, arg, uri)
        assert hover is not None and "project memory" in hover.contents.value
        assert "locked by another process" in str(result), (name, result)
    assert store.read_text() == store_text("a")
    assert agents.read_text() == "# Agents\n"
