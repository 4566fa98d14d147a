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


def _frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def _next(reader: asyncio.StreamReader) -> dict[str, object]:
    header = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
    length = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
    answer: dict[str, object] = json.loads(await asyncio.wait_for(reader.readexactly(length), 30))
    return answer


SHUTDOWN = json.dumps({"jsonrpc": "2.0", "id": 61, "method": "shutdown"}).encode()


@pytest.mark.parametrize(
    ("bad", "answered"),
    [
        # A length no one would send: refused unread (it used to wait for the petabyte).
        (b"Content-Length: 1000000000000000\r\n\r\n" + b'{"jsonrpc": "2.0", "id": 62}', True),
        # A length too short: that message is lost, not the ones after it.
        (b"Content-Length: %d\r\n\r\n" % (len(SHUTDOWN) - 5) + SHUTDOWN, True),
        # Junk longer than a line may be (it used to end the server).
        (b"x" * 200_000, False),
    ],
    ids=["absurd-length", "short-length", "long-junk"],
)
async def test_tcp_framing_that_lies_costs_only_its_own_message(  # type: ignore[no-untyped-def]
    serve, bad: bytes, answered: bool
) -> None:
    port = serve("--tcp")
    reader, writer = await _connect(port, lambda p: asyncio.open_connection("127.0.0.1", p))
    writer.write(bad + _frame(INITIALIZE))
    await writer.drain()
    first = await _next(reader)
    if answered:  # an error without an id, for the message that could not be read
        assert first["id"] is None and "error" in first, first
        first = await _next(reader)
    assert first["id"] == 1, first
    result = first["result"]
    assert isinstance(result, dict) and result["serverInfo"]["name"] == "memory-ls"
    # The connection still serves: a request after it is answered.
    writer.write(_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
    await writer.drain()
    assert (await _next(reader))["id"] == 2
    writer.close()


async def test_ws_reads_a_message_over_a_mebibyte(serve) -> None:  # type: ignore[no-untyped-def]
    from websockets.asyncio.client import connect

    port = serve("--ws")
    ws = await _connect(port, lambda p: connect(f"ws://127.0.0.1:{p}", max_size=None))
    await ws.send(json.dumps(INITIALIZE))
    reply = json.loads(await asyncio.wait_for(ws.recv(), 30))
    assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "memory-ls"
    # The websockets default (1 MiB) closed the connection, and so ended the server.
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "x" * 3_000_000}))
    error = json.loads(await asyncio.wait_for(ws.recv(), 30))
    assert error["id"] == 7 and error["error"]["code"] == -32601  # method not found
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": 8, "method": "shutdown"}))
    assert json.loads(await asyncio.wait_for(ws.recv(), 30))["id"] == 8
    await ws.close()
