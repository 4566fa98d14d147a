"""`memory-ls serve --tcp` and `--ws` answer `initialize` on the network (SPEC §7)."""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

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

    start.procs = procs  # type: ignore[attr-defined]
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


LIES = pytest.mark.parametrize(
    ("bad", "answered"),
    [
        # A length no one would send: refused unread (it used to wait for the petabyte).
        (b"Content-Length: 1000000000000000\r\n\r\n" + b'{"jsonrpc": "2.0", "id": 62}', True),
        # A length too short: that message is lost, not the ones after it.
        (b"Content-Length: %d\r\n\r\n" % (len(SHUTDOWN) - 5) + SHUTDOWN, True),
        # Junk longer than a line may be (it used to end the server).
        (b"x" * 200_000, False),
        # More digits than Python reads as an int: it raised out of the loop (the server ended).
        (b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n" + b'{"jsonrpc": "2.0", "id": 62}', True),
        # No length at all: answered (it was lost without an answer).
        (b"Content-Length: -28\r\n\r\n" + b'{"jsonrpc": "2.0", "id": 62}', True),
        # Junk of exactly the reader's limit, then a line break.
        (b"x" * 65_536 + b"\n", False),
        # Header lines ended by CR alone: that message never ends its headers; the next is read.
        (b"Content-Length: 28\r\r" + b'{"jsonrpc": "2.0", "id": 62}', False),
    ],
    ids=[
        "absurd-length",
        "short-length",
        "long-junk",
        "5000-digits",
        "negative",
        "limit-junk",
        "cr-only",
    ],
)
"""Framing that lies, and whether its message gets an answer (an error without an id)."""


@LIES
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


async def _initialized(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await _connect(port, lambda p: asyncio.open_connection("127.0.0.1", p))
    writer.write(_frame(INITIALIZE))
    await writer.drain()
    assert (await _next(reader))["id"] == 1
    return reader, writer


async def test_tcp_headers_split_across_packets_are_read(serve) -> None:  # type: ignore[no-untyped-def]
    port = serve("--tcp")
    reader, writer = await _initialized(port)
    framed = _frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    for cut in (3, 9, 17, 19, 20, len(framed)):  # in the name, the number, the CR, the body
        writer.write(framed[:cut])
        await writer.drain()
        await asyncio.sleep(0.05)
        framed = framed[cut:]
    assert (await _next(reader))["id"] == 2
    writer.close()


async def test_tcp_second_connection_is_refused_and_the_first_served(serve) -> None:  # type: ignore[no-untyped-def]
    """pygls gave a second connection the server's writer: the first client's answers
    went to the second, and the second's end ended the server under the first."""
    port = serve("--tcp")
    reader, writer = await _initialized(port)
    second_reader, second_writer = await asyncio.open_connection("127.0.0.1", port)
    second_writer.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}))
    await second_writer.drain()
    try:
        got = await asyncio.wait_for(second_reader.read(), 30)
    except ConnectionResetError:  # closed with the frame unread
        got = b""
    assert got == b"", got  # closed, unanswered
    writer.write(_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
    await writer.drain()
    assert (await _next(reader))["id"] == 2
    writer.close()


async def test_tcp_client_gone_in_the_middle_of_a_body_ends_the_server(serve) -> None:  # type: ignore[no-untyped-def]
    """As a client that goes away between messages does: the read loop's exception left
    the process running, listening, without a client."""
    port = serve("--tcp")
    _, writer = await _initialized(port)
    writer.write(b"Content-Length: 100\r\n\r\n" + b'{"jsonrpc": "2.0", "id": 2,')
    await writer.drain()
    writer.close()
    process = serve.procs[-1]  # type: ignore[attr-defined]
    await asyncio.to_thread(process.wait, 30)
    assert process.returncode is not None


async def test_ws_binary_frames_are_read_and_a_second_connection_refused(serve) -> None:  # type: ignore[no-untyped-def]
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    port = serve("--ws")
    ws = await _connect(port, lambda p: connect(f"ws://127.0.0.1:{p}"))
    await ws.send(json.dumps(INITIALIZE).encode())  # bytes: a binary frame
    assert json.loads(await asyncio.wait_for(ws.recv(), 30))["id"] == 1
    await ws.send(b"\xff\xfe not UTF-8")
    error = json.loads(await asyncio.wait_for(ws.recv(), 30))
    assert error["id"] is None and error["error"]["code"] == -32700, error
    second = await connect(f"ws://127.0.0.1:{port}")
    with pytest.raises(ConnectionClosed):
        await asyncio.wait_for(second.recv(), 30)
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": 8, "method": "shutdown"}).encode())
    assert json.loads(await asyncio.wait_for(ws.recv(), 30))["id"] == 8
    await ws.close()


def _messages(out: bytes) -> list[dict[str, object]]:
    found = []
    while out:
        header, _, rest = out.partition(b"\r\n\r\n")
        length = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
        found.append(json.loads(rest[:length]))
        out = rest[length:]
    return found


@LIES
def test_stdin_that_is_a_file_is_read_with_the_same_framing_rules(
    workspace: Workspace, tmp_path: Path, bad: bytes, answered: bool
) -> None:
    """An editor gives the server a pipe, which the event loop reads; a file (or a
    terminal) is read by pygls' own reader instead, under the same rules."""
    script = tmp_path / "session.bin"
    shutdown: dict[str, object] = {"jsonrpc": "2.0", "id": 2, "method": "shutdown"}
    end: dict[str, object] = {"jsonrpc": "2.0", "method": "exit"}
    script.write_bytes(bad + _frame(INITIALIZE) + _frame(shutdown) + _frame(end))
    with script.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "memory_ls", "serve"],
            env=workspace.env(),
            stdin=stdin,
            capture_output=True,
            timeout=60,
        )
    answers = _messages(done.stdout)
    if answered:
        first = answers.pop(0)
        assert first["id"] is None and "error" in first, first
    assert [a["id"] for a in answers] == [1, 2], answers
    result = answers[0]["result"]
    assert isinstance(result, dict) and result["serverInfo"]["name"] == "memory-ls"
    assert done.returncode == 0, done.stderr.decode(errors="replace")


def _ended(server: subprocess.Popen[bytes], timeout: float = 60) -> int:
    """``server``'s exit code once it ends; if it does not, where each of its threads
    stood (``PYTHONFAULTHANDLER`` dumps them on ``SIGABRT``), in the failure: a server
    that hangs after ``exit`` once in a CI run is then diagnosed from that run alone."""
    try:
        return server.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        server.send_signal(signal.SIGABRT)
        _, err = server.communicate(timeout=10)
        raise AssertionError(
            f"the server did not end after exit; its threads:\n{(err or b'').decode(errors='replace')[-6000:]}"
        ) from None


def test_one_socket_as_stdin_and_stdout_keeps_large_messages_whole(workspace: Workspace) -> None:
    """socat's ``EXEC:``, inetd and systemd's ``Accept=yes`` give the server one socket
    as both standard input and output. The event loop puts what it reads in
    non-blocking mode, which for one socket is the writes' mode too: a publish larger
    than the socket's buffer, to a client that reads a moment later, was cut short
    (``BlockingIOError``), and every later message read as part of it."""
    import socket
    import threading
    import time

    notes = "".join(f"- use pnpm for build step {i % 40} in this repository\n" for i in range(3000))
    text = "# Memory\n\n" + notes
    workspace.project_store.parent.mkdir()
    workspace.project_store.write_text(text)
    ours, theirs = socket.socketpair()
    server = subprocess.Popen(
        [sys.executable, "-m", "memory_ls", "serve"],
        stdin=theirs,
        stdout=theirs,
        stderr=subprocess.PIPE,
        env={**workspace.env(), "PYTHONFAULTHANDLER": "1"},
        cwd=workspace.root,
    )
    theirs.close()
    uri = workspace.project_store.as_uri()
    opened = {"textDocument": {"uri": uri, "languageId": "markdown", "version": 1, "text": text}}
    sent = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": opened},
    ]
    for version in (2, 3):
        change = {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": text}],
        }
        sent.append({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": change})
    sent.append({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    writer = threading.Thread(target=lambda: ours.sendall(b"".join(map(_frame, sent))))
    writer.start()
    time.sleep(2)  # a busy client: the server's answers wait in the socket meanwhile
    received = b""
    ours.settimeout(60)
    while not received.endswith(b'"id": 2, "jsonrpc": "2.0", "result": null}'):
        chunk = ours.recv(1 << 20)
        if not chunk:
            break
        received += chunk
    writer.join()
    ours.sendall(_frame({"jsonrpc": "2.0", "method": "exit"}))
    try:
        assert _ended(server) == 0
    finally:
        ours.close()
        server.kill()
        server.wait()
    answers = _messages(received)
    versions = [
        a["params"]["version"]  # type: ignore[index]
        for a in answers
        if a.get("method") == "textDocument/publishDiagnostics"
    ]
    assert sorted(set(versions)) == [1, 2, 3] and versions == sorted(versions)  # each whole
    assert [a["id"] for a in answers if "id" in a] == [1, 2]


@pytest.mark.parametrize("closed", ["<&-", ">&-"], ids=["stdin", "stdout"])
def test_serve_with_stdin_or_stdout_closed_says_so(workspace: Workspace, closed: str) -> None:
    """A server started with standard input (or output) closed has no client: a clear
    error and exit code 2, not a traceback (``sys.stdin`` is ``None`` then)."""
    done = subprocess.run(
        ["sh", "-c", f'exec "$0" -m memory_ls serve {closed}', sys.executable],
        env=workspace.env(),
        cwd=workspace.root,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.decode() == "memory-ls: serve needs standard input and output open\n"


def test_stdin_pipe_is_left_blocking_when_the_server_ends(workspace: Workspace) -> None:
    """The event loop reads a pipe in non-blocking mode, which the pipe itself keeps:
    whoever else holds it (a shell, a wrapper) must find it as it was."""
    read_end, write_end = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memory_ls", "serve"],
            env=workspace.env(),
            stdin=read_end,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        shutdown: dict[str, object] = {"jsonrpc": "2.0", "id": 2, "method": "shutdown"}
        end: dict[str, object] = {"jsonrpc": "2.0", "method": "exit"}
        os.write(write_end, _frame(INITIALIZE) + _frame(shutdown) + _frame(end))
        out, err = proc.communicate(timeout=60)
        assert [a["id"] for a in _messages(out)] == [1, 2], err.decode(errors="replace")
        assert proc.returncode == 0
        assert os.get_blocking(read_end)
    finally:
        os.close(read_end)
        os.close(write_end)


def _pipe_size(fd: int) -> int:
    import fcntl

    return int(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ is Linux's")
def test_pipes_on_stdin_and_stdout_are_widened(workspace: Workspace) -> None:
    """A 256 KB ``didOpen`` (and a publish of as much) goes through a pipe in one write
    instead of 64 KiB rounds between the two processes."""
    ceiling = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    proc = subprocess.Popen(
        [sys.executable, "-m", "memory_ls", "serve"],
        env=workspace.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(_frame(INITIALIZE))
        proc.stdin.flush()
        header = proc.stdout.readline()  # answered: the pipes were widened before reading
        assert header.startswith(b"Content-Length")
        # 1 MiB, or the half or quarter of it that the system allows (root: any).
        allowed = [size for size in (1 << 20, 1 << 19, 1 << 18) if size <= ceiling]
        wanted = allowed[0] if allowed else 1 << 20
        assert _pipe_size(proc.stdin.fileno()) == wanted
        assert _pipe_size(proc.stdout.fileno()) == wanted
    finally:
        proc.kill()
        proc.wait(timeout=10)


HELD_SIMILAR = """
import os, sys, time
from memory_ls.server.diagnostics import Analysis
found = Analysis.all_pairs
def held(keys, threshold):
    pairs = found(keys, threshold)
    open(os.environ["MEMORY_LS_TEST_RELEASE"] + ".held", "w").close()
    while not os.path.exists(os.environ["MEMORY_LS_TEST_RELEASE"]):
        time.sleep(0.01)
    return pairs
Analysis.all_pairs = staticmethod(held)
from memory_ls.__main__ import main
sys.argv = ["memory-ls", "serve"]
sys.exit(main())
"""
"""``memory-ls serve`` whose pass over every similar pair ends only once the test
creates the file ``MEMORY_LS_TEST_RELEASE`` names (``….held`` says the pass is held):
its publish then comes when the test wants, here after the answer to ``shutdown``."""


def _read_until_answered(fd: int, msg_id: int) -> bytes:
    """What the server wrote on ``fd`` up to and including its answer to ``msg_id``."""
    received = b""
    while True:
        ready, _, _ = select.select([fd], [], [], 60)
        assert ready, f"no answer to {msg_id} in 60 s"
        chunk = os.read(fd, 1 << 20)
        assert chunk, "the server closed the connection before answering"
        received += chunk
        try:
            answers = _messages(received)
        except (IndexError, ValueError):  # a message still cut short
            continue
        if any(a.get("id") == msg_id for a in answers):
            return received


@pytest.mark.parametrize("transport", ["one-socket", "pipes"])
def test_exit_ends_the_server_when_the_client_stops_reading_after_shutdown(
    workspace: Workspace, tmp_path: Path, transport: str
) -> None:
    """A client may stop reading once ``shutdown`` is answered: the server says nothing
    after that answer. A publish made later (here the similar hints of a large store,
    ~1.3 MB, more than a socket or a widened pipe holds) was written to a client that no
    longer read, and blocked the server, which never read the ``exit`` behind it (the
    one-socket test above, once in a CI run)."""
    notes = "".join(f"- use pnpm for build step {i % 40} in this repository\n" for i in range(3000))
    text = "# Memory\n\n" + notes
    workspace.project_store.parent.mkdir()
    workspace.project_store.write_text(text)
    release = tmp_path / "release"
    env = {**workspace.env(), "PYTHONFAULTHANDLER": "1", "MEMORY_LS_TEST_RELEASE": str(release)}
    command = [sys.executable, "-c", HELD_SIMILAR]
    if transport == "one-socket":
        ours, theirs = socket.socketpair()
        server = subprocess.Popen(
            command,
            stdin=theirs,
            stdout=theirs,
            stderr=subprocess.PIPE,
            env=env,
            cwd=workspace.root,
        )
        theirs.close()
        read_fd, write_fd = ours.fileno(), ours.fileno()
    else:
        server = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=workspace.root,
        )
        assert server.stdin is not None and server.stdout is not None
        read_fd, write_fd = server.stdout.fileno(), server.stdin.fileno()
    try:
        uri = workspace.project_store.as_uri()
        opened = {
            "textDocument": {"uri": uri, "languageId": "markdown", "version": 1, "text": text}
        }
        sent = [
            INITIALIZE,
            {"jsonrpc": "2.0", "method": "initialized", "params": {}},
            {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": opened},
            {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        ]
        writer = threading.Thread(target=lambda: _write_all(write_fd, b"".join(map(_frame, sent))))
        writer.start()
        received = _read_until_answered(read_fd, 2)
        writer.join()
        held = release.with_name("release.held")
        for _ in range(600):  # the similar hints are found, and held
            if held.exists():
                break
            time.sleep(0.05)
        assert held.exists(), "the similar pass never ran"
        release.touch()  # the similar hints are ready now, after the answer to shutdown
        # Whatever the server writes from here on is left unread; it shows in 3 s if at all.
        ready, _, _ = select.select([read_fd], [], [], 3)
        _write_all(write_fd, _frame({"jsonrpc": "2.0", "method": "exit"}))
        assert _ended(server, timeout=20) == 0
        assert not ready, "the server wrote after its answer to shutdown"
    finally:
        if transport == "one-socket":
            ours.close()
        server.kill()
        server.communicate()
    assert [a["id"] for a in _messages(received) if "id" in a] == [1, 2]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
