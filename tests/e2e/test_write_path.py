"""The language server's commands against a store another process holds locked (SPEC §3, §7).

A command waits for the lock in a worker thread, so the server keeps answering
(hover here) while it waits, and the wait ends in the command's error result.
"""

from __future__ import annotations

import asyncio

from lsprotocol import types as lsp

from memory_ls.store.files import locked_message, read_only_message
from tests.conftest import store_text
from tests.lock_holder import held_lock


async def test_hover_is_answered_while_a_command_waits_for_the_lock(start, workspace, monkeypatch):
    store = workspace.write("project", ["a"])
    monkeypatch.setenv("MEMORY_LS_LOCK_TIMEOUT", "3")
    s = await start("visual-studio-code")
    uri = s.open(store)
    await asyncio.sleep(0.1)
    loop = asyncio.get_running_loop()
    with held_lock(store, workspace.env()):
        began = loop.time()
        command = asyncio.ensure_future(s.command("memory.add", {"text": "b"}))
        await asyncio.sleep(0.3)  # the command is waiting for the lock by now
        hover = await asyncio.wait_for(
            s.client.text_document_hover_async(
                lsp.HoverParams(
                    text_document=lsp.TextDocumentIdentifier(uri=uri),
                    position=lsp.Position(2, 3),
                )
            ),
            2.0,
        )
        hovered = loop.time() - began
        assert not command.done()
        result = await command
    assert hovered < 3
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
    loop = asyncio.get_running_loop()
    for name, arg, locked in (
        ("memory.import", {"files": [str(notes)]}, store),
        ("memory.export", {"to": str(agents)}, agents),
    ):
        with held_lock(locked, workspace.env()):
            began = loop.time()
            command = asyncio.ensure_future(s.command(name, arg))
            await asyncio.sleep(0.3)  # the command is waiting for the lock by now
            hover = await asyncio.wait_for(
                s.client.text_document_hover_async(
                    lsp.HoverParams(
                        text_document=lsp.TextDocumentIdentifier(uri=uri),
                        position=lsp.Position(2, 3),
                    )
                ),
                2.0,
            )
            hovered = loop.time() - began
            assert not command.done(), name
            result = await command
        assert hovered < 3, name
        assert hover is not None and "project memory" in hover.contents.value
        assert "locked by another process" in str(result), (name, result)
    assert store.read_text() == store_text("a")
    assert agents.read_text() == "# Agents\n"
