"""Fixtures for the MCP server's end-to-end tests: a real client (``mcp.ClientSession``
over ``stdio_client``) spawning the server on the shared ``workspace``."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextResourceContents

from tests.conftest import Workspace

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 15.0
T = TypeVar("T")


async def within(awaitable: Awaitable[T], timeout: float = TIMEOUT) -> T:
    """Await with a deadline, so a hung server fails the test instead of stalling it."""
    return await asyncio.wait_for(awaitable, timeout)


class Memory:
    """A connected client session with small helpers for the ``memory`` tool."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call(self, arguments: dict[str, Any]) -> CallToolResult:
        return await within(self.session.call_tool("memory", arguments))

    async def read(self, uri: str) -> TextResourceContents:
        result = await within(self.session.read_resource(uri))
        assert len(result.contents) == 1
        content = result.contents[0]
        assert isinstance(content, TextResourceContents)
        return content


def text_of(result: CallToolResult) -> str:
    """The single text block of a tool result."""
    assert len(result.content) == 1
    block = result.content[0]
    assert block.type == "text"
    return block.text


@asynccontextmanager
async def open_memory(workspace: Workspace, *flags: str) -> AsyncIterator[Memory]:
    """Spawn ``python -m memory_ls.mcp_server --project P [flags]`` and initialise a session."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_ls.mcp_server", "--project", str(workspace.root), *flags],
        env=workspace.env(),
        cwd=str(REPO),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await within(session.initialize())
        yield Memory(session)


MemoryFactory = Callable[..., Any]


@pytest.fixture
def memory(workspace: Workspace) -> Callable[..., Any]:
    """``async with memory(*flags) as m:`` opens a session on the workspace's stores."""

    def factory(*flags: str) -> Any:
        return open_memory(workspace, *flags)

    return factory
