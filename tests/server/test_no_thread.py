"""A server that cannot start a thread (a process or memory limit: ``can't start new
thread``) does the thread's work on the event loop instead: the same diagnostics, no
progress left open, nothing left waiting for a thread that never ran."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from lsprotocol import types as lsp

from memory_ls.core.conflicts import claims_of_key
from memory_ls.server import project_watch
from memory_ls.server.background import CONFLICT_INLINE_NOTES, PROGRESS_MIN_NOTES
from tests import stale_project
from tests.conftest import store_text

from .conftest import InProcess, eventually


@pytest.fixture
def no_thread(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every server thread fails to start, as ``_thread.start_new_thread`` does at a limit;
    the names of those asked for."""
    refused: list[str] = []
    start = threading.Thread.start

    def failing(self: threading.Thread) -> None:
        if self.name.startswith("memory-ls-"):
            refused.append(self.name)
            raise RuntimeError("can't start new thread")
        start(self)

    monkeypatch.setattr(threading.Thread, "start", failing)
    return refused


def _codes(server: InProcess, uri: str) -> set[Any]:
    found = server.ls.document(uri)
    assert found is not None
    return {f.code for f in server.ls.analysis.findings(found.doc)}


async def test_a_large_store_opened_without_threads_gets_its_hints_and_conflicts(
    server: InProcess, no_thread: list[str]
) -> None:
    """The claims and the similar pass run on the loop: the conflict and similar findings
    come, and the progress begun for the pass ends (a client showed it for good)."""
    claims_of_key.cache_clear()
    size = max(CONFLICT_INLINE_NOTES, PROGRESS_MIN_NOTES)
    notes = [f"note number {i} about topic {i}" for i in range(size)]
    server.workspace.write(
        "project",
        store_text(
            *notes,
            "use pnpm",
            "never use pnpm",
            "deploy the staging service at noon",
            "deploy the staging services at noon",
        ),
    )
    await server.initialize("visual-studio-code")
    uri = server.open(server.workspace.project_store)
    found = server.ls.document(uri)
    assert found is not None
    await eventually(lambda: {"conflict", "similar"} <= _codes(server, uri), "never found")
    assert {"memory-ls-claims", "memory-ls-similar"} <= set(no_thread)
    assert found.state.conflicts_ready and found.state.similar_ready
    progress = server.client.notifications(lsp.PROGRESS)
    begun = [p["token"] for p in progress if p["value"]["kind"] == "begin"]
    await eventually(
        lambda: (
            sorted(
                p["token"]
                for p in server.client.notifications(lsp.PROGRESS)
                if p["value"]["kind"] == "end"
            )
            == sorted(begun)
        ),
        "a progress never ended",
    )


async def test_the_project_files_are_judged_without_a_thread(
    server: InProcess, no_thread: list[str]
) -> None:
    """The project's files are looked at on the loop: ``stale-path`` comes, and the entry
    is not left building (which kept it, and its snapshot of the tree, for good)."""
    stale_project.project(server.workspace)
    await server.initialize("visual-studio-code")
    uri = server.open(server.workspace.project_store)
    await eventually(lambda: "stale-path" in _codes(server, uri), "never judged")
    assert "memory-ls-project-files" in no_thread
    entries = project_watch._files(server.ls).entries
    assert entries and not any(entry.building for entry in entries.values())


async def test_a_command_without_a_worker_thread_runs_once_and_answers_what_it_did(
    server: InProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker that runs a command's write cannot be started: the write runs on the loop
    and the command answers it. It was answered as failed while the write stayed queued in
    the executor, done by the next command's worker (unseen, and never shown in a buffer)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from memory_ls.server import commands

    server.workspace.write("project", ["one"])
    await server.initialize()
    executor = ThreadPoolExecutor()  # no thread yet: the next call starts one
    asyncio.get_running_loop().set_default_executor(executor)
    start = threading.Thread.start
    refused: list[str] = []

    def failing(self: threading.Thread) -> None:
        if not refused:
            refused.append(self.name)
            raise RuntimeError("can't start new thread")
        start(self)

    monkeypatch.setattr(threading.Thread, "start", failing)
    first = await commands.execute(server.ls, "memory.add", ({"text": "two"},))
    assert refused
    assert "error" not in first and first["project"] == ["one", "two"]
    second = await commands.execute(server.ls, "memory.forget", ({"text": "two"},))
    assert second["project"] == ["one"]
    third = await commands.execute(server.ls, "memory.list", ({},))
    assert third["project"] == ["one"]  # the first add was not run again meanwhile
    executor.shutdown()
