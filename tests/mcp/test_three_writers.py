"""The MCP server, the CLI and a language-server command add to one store at once (SPEC §3).

Each writer is a real process: an MCP server driven by the SDK's own stdio client, a
language server driven by pytest-lsp's client (``workspace/executeCommand memory.add``)
and several ``memory-ls add`` processes. They run concurrently on one temp project; every
note must end up in ``.pi/memory.md`` exactly once, and nothing else may be left in ``.pi/``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient, client_capabilities, make_test_lsp_client

from memory_ls.core.notes import parse_notes
from tests.conftest import Workspace

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 60.0  # every single wait; the machine may be small and busy
COUNT = 12  # notes per writer
CLI_AT_ONCE = 4  # CLI processes running at the same time
PACE = 0.05  # seconds between two adds of the MCP and LSP writers, to spread them out


async def within(awaitable: Any, timeout: float = TIMEOUT) -> Any:
    return await asyncio.wait_for(awaitable, timeout)


@asynccontextmanager
async def mcp_session(workspace: Workspace) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_ls.mcp_server", "--project", str(workspace.root)],
        env=workspace.env(),
        cwd=str(REPO),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await within(session.initialize())
        yield session


@asynccontextmanager
async def lsp_session(workspace: Workspace) -> AsyncIterator[LanguageClient]:
    client = make_test_lsp_client()

    @client.feature(lsp.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
        return lsp.ApplyWorkspaceEditResult(applied=True)

    @client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def register(params: lsp.RegistrationParams) -> None:
        return None

    await within(
        client.start_io(
            sys.executable,
            "-m",
            "memory_ls.server",
            env={**workspace.env(), "PYTHONUNBUFFERED": "1"},
            cwd=str(REPO),
        )
    )
    try:
        uri = from_fs_path(str(workspace.root))
        assert uri is not None
        await within(
            client.initialize_session(
                lsp.InitializeParams(
                    capabilities=client_capabilities("visual-studio-code"),
                    root_uri=uri,
                    workspace_folders=[lsp.WorkspaceFolder(uri=uri, name=workspace.root.name)],
                )
            )
        )
        yield client
    finally:
        try:
            await within(client.shutdown_session())
        except Exception:
            await client.stop()


async def mcp_writer(session: ClientSession) -> list[str]:
    problems: list[str] = []
    for i in range(COUNT):
        note = f"mcp note {i}"
        result = await within(session.call_tool("memory", {"action": "add", "text": note}))
        content = result.structured_content or {}
        if result.is_error or content.get("changed") is not True:
            problems.append(f"{note}: {result.content} {content}")
        await asyncio.sleep(PACE)
    return problems


async def lsp_writer(client: LanguageClient) -> list[str]:
    problems: list[str] = []
    for i in range(COUNT):
        note = f"lsp note {i}"
        result = await within(
            client.workspace_execute_command_async(
                lsp.ExecuteCommandParams(
                    command="memory.add", arguments=[{"text": note, "scope": "project"}]
                )
            )
        )
        if not isinstance(result, dict) or result.get("changed") is not True:
            problems.append(f"{note}: {result}")
        await asyncio.sleep(PACE)
    return problems


async def cli_add(workspace: Workspace, note: str, slots: asyncio.Semaphore) -> str | None:
    async with slots:
        r = await asyncio.to_thread(
            workspace.cli,
            "add",
            "--project",
            str(workspace.root),
            "--",
            note,
            cwd=REPO,
            timeout=TIMEOUT,
        )
    if r.returncode != 0:
        return f"{note}: exit {r.returncode}: {r.stdout}{r.stderr}"
    return None


async def cli_writer(workspace: Workspace) -> list[str]:
    slots = asyncio.Semaphore(CLI_AT_ONCE)
    results = await asyncio.gather(
        *(cli_add(workspace, f"cli note {i}", slots) for i in range(COUNT))
    )
    return [problem for problem in results if problem is not None]


async def test_mcp_cli_and_language_server_add_at_once_lose_nothing(workspace: Workspace) -> None:
    async with mcp_session(workspace) as mcp, lsp_session(workspace) as client:
        problems = await within(
            asyncio.gather(mcp_writer(mcp), lsp_writer(client), cli_writer(workspace))
        )
    assert [p for writer in problems for p in writer] == []

    notes = parse_notes(workspace.project_store.read_text(encoding="utf-8"))
    expected = [f"{who} note {i}" for who in ("mcp", "lsp", "cli") for i in range(COUNT)]
    missing = sorted(set(expected) - set(notes))
    duplicated = sorted({note for note in notes if notes.count(note) > 1})
    assert missing == [], f"lost notes: {missing}"
    assert duplicated == [], f"notes written more than once: {duplicated}"
    assert sorted(notes) == sorted(expected)
    assert sorted(os.listdir(workspace.root / ".pi")) == ["memory.md"]
