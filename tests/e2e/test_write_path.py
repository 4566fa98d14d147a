"""The language server's commands against a store another process holds locked (SPEC §3, §7).

A command waits for the lock in a worker thread, so the server keeps answering
(hover here) while it waits, and the wait ends in the command's error result.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcRequestCancelled

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


async def test_a_cancelled_add_that_started_writing_answers_what_it_wrote(start, workspace):
    # $/cancelRequest lands while memory.add waits for the lock in its worker thread: the
    # thread cannot be stopped, so the note is written. The answer must say so (the
    # result, not "canceled"), and the open buffer must be shown the note: a buffer left
    # without it would drop the note at its next save.
    from tests.lock_holder import held_lock, release

    store = workspace.write("project", ["a"])
    s = await start("visual-studio-code")
    s.open(store)
    await asyncio.sleep(0.1)
    params = lsp.ExecuteCommandParams(command="memory.add", arguments=[{"text": "b"}])
    with held_lock(store, workspace.env()) as holder:
        running = asyncio.ensure_future(
            s.client.protocol.send_request_async("workspace/executeCommand", params, msg_id=4242)
        )
        await asyncio.sleep(0.3)  # the add waits for the lock by now
        s.client.protocol.notify("$/cancelRequest", lsp.CancelParams(id=4242))
        await asyncio.sleep(0.2)
        assert not running.done(), f"answered before it could write: {running.exception()!r}"
        release(holder)
        result = await asyncio.wait_for(running, 10)
    assert result["changed"] is True and "b" in result["project"], result
    assert store.read_text() == store_text("a", "b")
    assert s.applied, "the open buffer was not shown the note"


async def test_a_cancelled_add_that_had_not_started_writes_nothing(start, workspace):
    # The second add waits for the first's turn on the store (the first waits for the
    # lock): cancelled there, it is answered "canceled" and writes nothing, while the
    # first, which had started, writes its note.
    from tests.lock_holder import held_lock, release

    store = workspace.write("project", ["a"])
    s = await start("neovim")
    proto = s.client.protocol

    def add(text: str, msg_id: int) -> asyncio.Future[Any]:
        params = lsp.ExecuteCommandParams(command="memory.add", arguments=[{"text": text}])
        return asyncio.ensure_future(
            proto.send_request_async("workspace/executeCommand", params, msg_id=msg_id)
        )

    with held_lock(store, workspace.env()) as holder:
        first = add("b", 501)
        await asyncio.sleep(0.3)  # waiting for the lock, with the store's turn
        second = add("c", 502)
        await asyncio.sleep(0.2)  # waiting for the turn
        proto.notify("$/cancelRequest", lsp.CancelParams(id=502))
        with pytest.raises(JsonRpcRequestCancelled):
            await asyncio.wait_for(second, 10)
        assert not first.done()
        release(holder)
        result = await asyncio.wait_for(first, 10)
    assert result["project"] == ["a", "b"], result
    await asyncio.sleep(0.5)  # time enough for a second add that ran on regardless
    assert store.read_text() == store_text("a", "b")
