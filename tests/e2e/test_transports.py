"""`memory-ls serve --tcp` and `--ws` answer `initialize` on the network (SPEC §7)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.conftest import Workspace

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"processId": None, "rootUri": None, "capabilities": {}},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def serve(workspace: Workspace) -> Iterator[object]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(flag: str) -> int:
        port = free_port()
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "memory_ls", "serve", flag, f"127.0.0.1:{port}"],
                env=workspace.env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        )
        return port

    yield start
    for p in procs:
        p.kill()
        p.wait(timeout=10)


async def _connect(port: int, opener):  # type: ignore[no-untyped-def]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while True:
        try:
            return await opener(port)
        except OSError:
            if loop.time() > deadline:
                raise
            await asyncio.sleep(0.1)


async def test_tcp(serve) -> None:  # type: ignore[no-untyped-def]
    port = serve("--tcp")
    reader, writer = await _connect(port, lambda p: asyncio.open_connection("127.0.0.1", p))
    body = json.dumps(INITIALIZE).encode()
    writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    await writer.drain()
    header = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
    length = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
    reply = json.loads(await asyncio.wait_for(reader.readexactly(length), 30))
    assert reply["id"] == 1
    assert reply["result"]["serverInfo"]["name"] == "memory-ls"
    writer.close()


async def test_ws(serve) -> None:  # type: ignore[no-untyped-def]
    from websockets.asyncio.client import connect

    port = serve("--ws")
    ws = await _connect(port, lambda p: connect(f"ws://127.0.0.1:{p}"))
    await ws.send(json.dumps(INITIALIZE))
    reply = json.loads(await asyncio.wait_for(ws.recv(), 30))
    assert reply["id"] == 1
    assert reply["result"]["serverInfo"]["name"] == "memory-ls"
    await ws.close()
