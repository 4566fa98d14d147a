"""memory_ls/server/document_sync.py: watched-file events about memory files are one
recheck per burst, and a change in the middle of a burst is still seen."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from memory_ls.server import document_sync
from memory_ls.server.document_sync import RECHECK_DELAY, RECHECK_MAX_WAIT, did_change_watched_files
from tests.server.conftest import InProcess, eventually, uri_of


def _event(server: InProcess, *changes: tuple[Path, lsp.FileChangeType]) -> None:
    did_change_watched_files(
        server.ls,
        lsp.DidChangeWatchedFilesParams(
            changes=[lsp.FileEvent(uri=uri_of(path), type=kind) for path, kind in changes]
        ),
    )


def _codes(server: InProcess, uri: str) -> list[tuple[int, str]]:
    """The (line, code) of the document's last published diagnostics."""
    published = [
        p
        for p in server.client.notifications(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if p["uri"] == uri
    ]
    return [(d["range"]["start"]["line"], d["code"]) for d in published[-1]["diagnostics"]]


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every recheck a watched-file event asks for, counted."""
    calls: list[int] = []
    recheck = document_sync._recheck

    def counting(ls: object) -> None:
        calls.append(1)
        recheck(ls)  # type: ignore[arg-type]

    monkeypatch.setattr(document_sync, "_recheck", counting)
    return calls


async def test_a_burst_of_notifications_about_memory_files_is_one_recheck(
    server: InProcess, counted: list[int]
) -> None:
    ws = server.workspace
    ws.write("project", ["run the tests before a push", "keep the changelog current"])
    ws.write("global", ["something else"])
    await server.initialize()
    uri = server.open(ws.project_store)
    assert not [c for _, c in _codes(server, uri) if c == "cross-scope-duplicate"]
    changed = lsp.FileChangeType.Changed
    for i in range(100):
        temp = ws.project_store.parent / f".memory.md.{i:012x}.tmp"
        _event(server, (temp, lsp.FileChangeType.Created), (ws.root / f"f{i}.py", changed))
        if i == 50:
            # Another writer's change of the global store, in the middle of the burst.
            ws.write("global", ["something else", "Keep the changelog current."])
            _event(server, (ws.global_store, changed))
    assert counted == []  # nothing rechecked while the burst lasts
    await eventually(lambda: counted == [1], "the burst was never rechecked")
    assert (3, "cross-scope-duplicate") in _codes(server, uri)
    await asyncio.sleep(RECHECK_MAX_WAIT)
    assert counted == [1]


async def test_a_notification_is_rechecked_soon(server: InProcess, counted: list[int]) -> None:
    ws = server.workspace
    ws.write("project", ["keep the changelog current"])
    await server.initialize()
    uri = server.open(ws.project_store)
    loop = asyncio.get_running_loop()
    ws.write("global", ["Keep the changelog current."])
    sent = loop.time()
    _event(server, (ws.global_store, lsp.FileChangeType.Created))
    await eventually(lambda: counted == [1], "never rechecked", poll=0.005)
    assert loop.time() - sent < RECHECK_DELAY + 0.2
    assert (2, "cross-scope-duplicate") in _codes(server, uri)


async def test_events_that_never_stop_are_rechecked_every_max_wait(
    server: InProcess, counted: list[int]
) -> None:
    ws = server.workspace
    ws.write("project", ["keep the changelog current"])
    await server.initialize()
    server.open(ws.project_store)
    loop = asyncio.get_running_loop()
    began = loop.time()
    while loop.time() - began < RECHECK_MAX_WAIT * 3:
        _event(server, (ws.global_store, lsp.FileChangeType.Changed))
        await asyncio.sleep(RECHECK_DELAY / 4)
    assert len(counted) >= 2  # a writer that never pauses does not starve the recheck


async def test_trust_is_decided_again_at_the_event_not_at_the_recheck(
    server: InProcess, counted: list[int]
) -> None:
    """What the caches held is dropped at once: a command answered between the event and
    the recheck sees the new ``trust.json``, even when no stamp shows the edit."""
    ws = server.workspace
    ws.write("project", ["keep the changelog current"])
    trust = ws.agent_dir / "trust.json"
    root = os.path.realpath(ws.root)
    trust.write_text(json.dumps({root: True}) + " ", encoding="utf-8")
    await server.initialize()
    server.open(ws.project_store)

    async def trusted() -> bool:
        answer = await server.client.request(
            lsp.WORKSPACE_EXECUTE_COMMAND,
            lsp.ExecuteCommandParams(command="memory.path", arguments=[{}]),
        )
        return bool(answer["result"]["trusted"])

    assert await trusted()
    before = os.stat(trust)
    with open(trust, "r+", encoding="utf-8") as handle:  # same inode, size and mtime
        handle.write(json.dumps({root: False}))
    os.utime(trust, ns=(before.st_atime_ns, before.st_mtime_ns))
    _event(server, (trust, lsp.FileChangeType.Changed))
    assert not await trusted()
    assert counted == []  # answered before the recheck


async def test_a_closed_store_is_freed_at_once_without_a_collection(server: InProcess) -> None:
    """Nothing the server keeps holds a closed store's document, not even as a cycle: it
    is freed by its count when the delayed calls of its typing have run (a delayed call's
    timer and closure held each other, so every document typed in stayed until a full
    collection: ~2 MB of serve's peak on 4,500 notes, issue 11)."""
    import gc

    from memory_ls.server.documents import MemoryDocument

    ws = server.workspace
    notes = [f"deploy the staging service number {i} before noon" for i in range(40)]
    ws.write("project", [*notes, notes[0]])  # similar pairs and a duplicate to publish
    await server.initialize()
    uri = server.open(ws.project_store)
    await eventually(lambda: "similar" in {c for _, c in _codes(server, uri)}, "no similar")

    def alive() -> list[MemoryDocument]:
        return [o for o in gc.get_objects() if isinstance(o, MemoryDocument) and o.uri == uri]

    enabled = gc.isenabled()
    gc.collect()
    gc.disable()  # as a server that froze its start-up: no full collection meanwhile
    try:
        for version in range(2, 8):
            server.edit(uri, version, (3, 10), (3, 10), "x")
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)  # the typing's delayed calls (the similar pass again) run
        assert alive()
        document_sync.did_close(
            server.ls,
            lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)),
        )
        await asyncio.sleep(1.0)  # what the close asked for runs too
        assert alive() == []
    finally:
        if enabled:
            gc.enable()
