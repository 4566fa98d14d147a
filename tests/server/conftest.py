"""In-process server tests (esbonio style): the object ``create_server()`` builds, its
handlers called directly, no process and no transport.

What the server sends goes to a :class:`Client`, set as pygls' writer: it keeps every
message and answers the server's own requests (``workspace/configuration`` with its
``configuration``, ``workspace/applyEdit`` with a refusal, anything else with
``null``), so a handler that asks the client something runs to its end. These tests take seconds; ``tests/e2e`` drives the real
``memory-ls serve`` process with explicit client capabilities.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from lsprotocol.converters import get_converter
from pygls.uris import from_fs_path
from pytest_lsp import client_capabilities

from memory_ls.server.document_sync import did_change, did_open
from memory_ls.server.server import MemoryServer, create_server, initialized
from tests.conftest import Workspace

TIMEOUT = 5.0
REFUSED_EDIT = "the in-process client has no buffers to edit"
CONVERTER = get_converter()


def uri_of(path: Path) -> str:
    uri = from_fs_path(str(path))
    assert uri is not None
    return uri


class Client:
    """The client end of an in-process server: a pygls writer that keeps what it is sent."""

    def __init__(self, ls: MemoryServer) -> None:
        self.ls = ls
        self.sent: list[dict[str, Any]] = []
        """Every message the server sent, as JSON."""
        self.configuration: Any = None
        """The answer to ``workspace/configuration`` for the ``memoryLs`` section."""
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}

    # -- pygls' Writer -----------------------------------------------------------------

    def write(self, data: bytes) -> None:
        message = json.loads(data)
        self.sent.append(message)
        if "method" in message and "id" in message:  # the server asks the client
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": self._answer(message)}
            asyncio.get_running_loop().call_soon(self._receive, answer)
        elif (waiting := self._waiting.pop(message.get("id"), None)) is not None:
            waiting.set_result(message)

    def close(self) -> None:
        return None

    def _answer(self, request: dict[str, Any]) -> Any:
        if request["method"] == lsp.WORKSPACE_CONFIGURATION:
            return [self.configuration for _ in request["params"]["items"]]
        if request["method"] == lsp.WORKSPACE_APPLY_EDIT:
            return {"applied": False, "failureReason": REFUSED_EDIT}
        return None

    def _receive(self, message: dict[str, Any]) -> None:
        protocol = self.ls.protocol
        protocol.handle_message(protocol.structure_message(message))

    # -- what a test does ----------------------------------------------------------------

    async def request(self, method: str, params: Any) -> dict[str, Any]:
        """Send a request to the server; its raw JSON-RPC response."""
        message_id = next(self._ids)
        answered = asyncio.get_running_loop().create_future()
        self._waiting[message_id] = answered
        self._receive(
            {
                "jsonrpc": "2.0",
                "id": message_id,
                "method": method,
                "params": CONVERTER.unstructure(params),
            }
        )
        return await asyncio.wait_for(answered, TIMEOUT)

    def notifications(self, method: str) -> list[Any]:
        """The params of every notification ``method`` the server sent, oldest first."""
        return [m["params"] for m in self.sent if m.get("method") == method and "id" not in m]

    def requests(self, method: str) -> list[Any]:
        """The params of every request ``method`` the server sent the client."""
        return [m["params"] for m in self.sent if m.get("method") == method and "id" in m]

    def logs(self) -> list[str]:
        """The messages of ``window/logMessage``."""
        return [p["message"] for p in self.notifications(lsp.WINDOW_LOG_MESSAGE)]


@dataclass
class InProcess:
    """A server built by ``create_server()``, its client end, and the workspace it serves."""

    ls: MemoryServer
    client: Client
    workspace: Workspace

    async def initialize(
        self,
        capabilities: str | lsp.ClientCapabilities = "visual-studio-code",
        init_options: Any = None,
        configuration: Any = None,
        folders: list[Path] | None = None,
    ) -> lsp.InitializeResult:
        """``initialize`` (through pygls, which sets up its workspace), then ``initialized``.

        ``capabilities`` is a pytest-lsp preset or explicit capabilities;
        ``configuration`` is what the client answers for the ``memoryLs`` section.
        """
        caps = client_capabilities(capabilities) if isinstance(capabilities, str) else capabilities
        self.client.configuration = configuration
        roots = folders or [self.workspace.root]
        answer = await self.client.request(
            lsp.INITIALIZE,
            lsp.InitializeParams(
                capabilities=caps,
                root_uri=uri_of(roots[0]),
                workspace_folders=[lsp.WorkspaceFolder(uri=uri_of(f), name=f.name) for f in roots],
                initialization_options=init_options,
            ),
        )
        assert "result" in answer, answer
        await asyncio.wait_for(initialized(self.ls, lsp.InitializedParams()), TIMEOUT)
        result: lsp.InitializeResult = CONVERTER.structure(answer["result"], lsp.InitializeResult)
        return result

    def open(self, path: Path, text: str | None = None, version: int = 1) -> str:
        """``textDocument/didOpen`` of ``path`` (its text on disk unless given)."""
        uri = uri_of(path)
        content = path.read_text(encoding="utf-8") if text is None else text
        did_open(
            self.ls,
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(
                    uri=uri, language_id="markdown", version=version, text=content
                )
            ),
        )
        return uri

    def edit(
        self, uri: str, version: int, start: tuple[int, int], end: tuple[int, int], text: str
    ) -> None:
        """``textDocument/didChange``: ``text`` in place of the range (line, character)."""
        did_change(
            self.ls,
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[
                    lsp.TextDocumentContentChangePartial(
                        range=lsp.Range(start=lsp.Position(*start), end=lsp.Position(*end)),
                        text=text,
                    )
                ],
            ),
        )


async def eventually(happened: Callable[[], bool], never: str, poll: float = 0.02) -> None:
    """Wait (up to :data:`TIMEOUT`) until ``happened()``; fail saying what ``never`` did."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while not happened():
        assert loop.time() < deadline, never
        await asyncio.sleep(poll)


@pytest.fixture
def server(workspace: Workspace) -> Iterator[InProcess]:
    """A fresh in-process server on the shared ``workspace`` (not initialized yet)."""
    ls = create_server()
    client = Client(ls)
    ls.protocol.set_writer(client, include_headers=False)
    yield InProcess(ls, client, workspace)
    gc.unfreeze()  # `initialized` freezes a real server's start-up garbage; not the test run's
