"""Bad and malformed messages over a real ``memory-ls mcp`` stdio session (SPEC §11).

The SDK's client only sends well-formed messages, so these tests write raw
JSON-RPC lines. Every request must get an answer within a few seconds (an error,
or a result where the message can be read), and the server must keep working.
"""

from __future__ import annotations

import inspect
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from mcp.server.stdio import stdio_server

from memory_ls.core.text import HEADER
from memory_ls.mcp_server import build_server
from memory_ls.store.runtime import MemoryRuntime
from tests.conftest import Workspace

ANSWER_TIMEOUT = 3.0
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
)


class RawMcp:
    """``memory-ls mcp`` on pipes, spoken to one JSON line at a time."""

    def __init__(self, workspace: Workspace) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memory_ls", "mcp", "--project", str(workspace.root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **workspace.env()},
        )
        self.answers: dict[str, queue.Queue[dict[str, Any]]] = {}
        self.lock = threading.Lock()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _queue(self, msg_id: Any) -> queue.Queue[dict[str, Any]]:
        with self.lock:
            return self.answers.setdefault(json.dumps(msg_id), queue.Queue())

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            if "method" not in message:  # an answer must carry its id, null included
                self._queue(message.get("id", "no id")).put(message)

    def line(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def send(self, message: object) -> None:
        # json.dumps escapes a lone surrogate as "\\ud800", as a JavaScript client would.
        self.line(json.dumps(message).encode())

    def answer(self, msg_id: Any, timeout: float = ANSWER_TIMEOUT) -> dict[str, Any]:
        try:
            return self._queue(msg_id).get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"no answer to id {msg_id!r} within {timeout}s; exit code {self.proc.poll()}"
            ) from None

    def request(self, method: str, params: Any = None, timeout: float = ANSWER_TIMEOUT) -> Any:
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.answer(self.next_id, timeout)

    def call(self, arguments: Any) -> dict[str, Any]:
        return self.request("tools/call", {"name": "memory", "arguments": arguments})

    def initialize(self) -> None:
        answer = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
            timeout=30,
        )
        assert "result" in answer, answer
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


@pytest.fixture
def mcp(workspace: Workspace) -> Iterator[RawMcp]:
    raw = RawMcp(workspace)
    yield raw
    raw.close()


def error_of(answer: dict[str, Any], code: int) -> str:
    assert "error" in answer, answer
    assert answer["error"]["code"] == code, answer
    return str(answer["error"]["message"])


def text_of(answer: dict[str, Any]) -> str:
    assert "result" in answer, answer
    content = answer["result"]["content"]
    assert len(content) == 1
    return str(content[0]["text"])


def assert_still_works(mcp: RawMcp, *notes: str) -> None:
    listed = mcp.call({"action": "list"})
    assert listed["result"]["isError"] is False, listed
    assert listed["result"]["structuredContent"]["project"] == list(notes)
    resource = mcp.request("resources/read", {"uri": "memory://project"})
    assert resource["result"]["contents"][0]["text"] == "\n".join(f"- {n}" for n in notes)


# -- issue 9 item 8: a lone surrogate escape ------------------------------------------


def test_lone_surrogate_is_read_as_replacement_character(mcp: RawMcp, workspace: Workspace) -> None:
    mcp.initialize()
    added = mcp.call({"action": "add", "text": "tests need \ud800 DATABASE_URL"})
    assert text_of(added).startswith("Added to project memory: tests need \ufffd DATABASE_URL")
    # Written by hand too, and as a key: a lone low surrogate and one at the end.
    mcp.line(
        b'{"jsonrpc": "2.0", "id": "s2", "method": "tools/call", "params": {"name": "memory",'
        b' "arguments": {"action": "add", "text": "use pnpm\\udc00", "\\ud800": 1}}}'
    )
    assert text_of(mcp.answer("s2")).startswith("Added to project memory: use pnpm\ufffd")
    assert workspace.project_store.read_text(encoding="utf-8") == (
        HEADER + "\n\n- tests need \ufffd DATABASE_URL\n- use pnpm\ufffd\n"
    )
    # A valid pair is one character, not two replacements.
    mcp.line(
        b'{"jsonrpc": "2.0", "id": "s3", "method": "tools/call", "params": {"name": "memory",'
        b' "arguments": {"action": "add", "text": "ship it \\ud83d\\ude80"}}}'
    )
    assert text_of(mcp.answer("s3")).startswith("Added to project memory: ship it \U0001f680")
    assert_still_works(
        mcp, "tests need \ufffd DATABASE_URL", "use pnpm\ufffd", "ship it \U0001f680"
    )


# -- numbers no float holds --------------------------------------------------------------


def test_huge_numbers_get_the_tools_answer_with_their_id(mcp: RawMcp) -> None:
    """``1e999`` is JSON (a number too large for a float), not a parse error with a null id."""
    mcp.initialize()
    big = "1" + "0" * 400
    for msg_id, arguments in [
        ("n1", '{"action": "add", "text": 1e999}'),
        ("n2", '{"action": "add", "text": -1e999}'),
        ("n3", f'{{"action": "add", "text": {big}}}'),
        ("n4", '{"action": "update", "text": "x", "to": 1e999}'),
    ]:
        mcp.line(
            b'{"jsonrpc": "2.0", "id": "%s", "method": "tools/call", "params": '
            b'{"name": "memory", "arguments": %s}}' % (msg_id.encode(), arguments.encode())
        )
        answer = mcp.answer(msg_id)
        assert answer["result"]["isError"] is True, answer
        field = "to" if msg_id == "n4" else "text"
        assert text_of(answer) == f"Error: {field} is required.", answer
    mcp.line(
        b'{"jsonrpc": "2.0", "id": "n5", "method": "tools/call", "params": {"name": "memory",'
        b' "arguments": {"action": "add", "text": "x", "scope": 1e999}}}'
    )
    assert text_of(mcp.answer("n5")) == "Error: scope must be one of project, global."
    # An id that is not a string or an integer: refused as a request, never a parse error.
    mcp.line(b'{"jsonrpc": "2.0", "id": 1e999, "method": "tools/list"}')
    assert "id" in error_of(mcp.answer(None), INVALID_REQUEST)
    assert_still_works(mcp)


# -- lines that are not JSON-RPC requests ----------------------------------------------


def test_malformed_lines_are_answered(mcp: RawMcp) -> None:
    mcp.initialize()
    mcp.line(b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {')
    assert "Parse error" in error_of(mcp.answer(None), PARSE_ERROR)
    mcp.line(b"[" * 100_000)
    error_of(mcp.answer(None), PARSE_ERROR)
    mcp.line(b'{"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {"x": NaN}}')
    error_of(mcp.answer(None), PARSE_ERROR)
    mcp.line(b"")  # a blank line between messages is not a message
    for message, answer_id in [
        ({"id": 11, "method": "tools/list"}, 11),  # no "jsonrpc"
        ({"jsonrpc": "1.0", "id": 12, "method": "tools/list"}, 12),
        ({"jsonrpc": "2.0", "id": 13, "method": 5}, 13),
        ({"jsonrpc": "2.0", "id": [14], "method": "tools/list"}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "tools/list"}, None),
        ({"jsonrpc": "2.0", "id": None, "method": "tools/list"}, None),
        ([{"jsonrpc": "2.0", "id": 15, "method": "tools/list"}], None),  # a batch
        (42, None),
        ({}, None),
    ]:
        mcp.send(message)
        error_of(mcp.answer(answer_id), INVALID_REQUEST)
    error_of(mcp.request("tools/call", [1, 2]), INVALID_PARAMS)
    mcp.send({"jsonrpc": "2.0", "method": "notifications/initialized", "params": [1]})
    assert_still_works(mcp)
    assert mcp.answers.keys() <= {json.dumps(i) for i in (None, *range(1, 20))}


# -- a light fuzz of the methods that matter -------------------------------------------

BAD_ARGUMENTS: list[Any] = [
    None,
    [],
    [1],
    "add",
    5,
    {},
    {"action": None},
    {"action": 5, "text": {"a": 1}},
    {"action": "add"},
    {"action": "add", "text": ["x"]},
    {"action": "add", "text": "x" * 10_000},
    {"action": "add", "text": "x", "scope": "nowhere"},
    {"action": "update", "text": "missing", "to": None},
    {"action": "forget", "text": 7},
    {"action": "clear"},
    {"action": "list", "scope": ["project"]},
    {"action": "add", "text": "x", "extra": {"deep": [[[[{}]]]]}},
]


def test_fuzz_tools_and_resources(mcp: RawMcp, workspace: Workspace) -> None:
    mcp.initialize()
    bad: list[str] = []

    def check(answer: dict[str, Any], what: str, tool: bool = False) -> None:
        if "error" in answer:
            ok = answer["error"]["code"] != INTERNAL_ERROR and bool(answer["error"]["message"])
        else:
            result = answer.get("result")
            ok = isinstance(result, dict)
            if tool:  # a tool call's result: a MemoryResult, or a plain error result
                ok = ok and ("structuredContent" in result or result.get("isError") is True)
        if not ok:
            bad.append(f"{what} -> {answer}")

    for arguments in BAD_ARGUMENTS:
        check(mcp.call(arguments), f"memory {arguments!r:.80}", tool=True)
    for params in [
        None,
        [],
        {},
        {"name": 5},
        {"name": "memory", "arguments": "x"},
        {"name": "nope", "arguments": {}},
        {"name": "memory\ud800", "arguments": {}},
    ]:
        check(mcp.request("tools/call", params), f"tools/call {params!r:.80}", tool=True)
    for params in [
        None,
        {},
        {"uri": 5},
        {"uri": "memory://nope"},
        {"uri": "memory://recall/../project"},
        {"uri": "file:///etc/passwd"},
        {"uri": "memory://\ud800"},
        {"uri": "not a uri"},
    ]:
        check(mcp.request("resources/read", params), f"resources/read {params!r:.80}")
    for method in ["nothing/here", "tools/list", "resources/list", "prompts/get", "ping"]:
        for params in [None, {}, {"cursor": 5}, {"name": None}]:
            check(mcp.request(method, params), f"{method} {params!r:.80}")
    assert not bad, "\n".join(bad)
    unknown = mcp.request("resources/read", {"uri": "memory://nope"})
    assert "memory://nope" in error_of(unknown, INVALID_PARAMS)
    error_of(mcp.request("nothing/here"), METHOD_NOT_FOUND)
    # Only the well-formed adds wrote anything; the store is still readable.
    assert workspace.project_store.read_text(encoding="utf-8").startswith(HEADER)
    assert_still_works(mcp, *mcp.call({"action": "list"})["result"]["structuredContent"]["project"])
    assert mcp.call({"action": "add", "text": "still works"})["result"]["isError"] is False


def test_the_sdk_hooks_memory_ls_relies_on_still_exist(workspace: Workspace) -> None:
    """serve_stdio repeats ``MCPServer.run_stdio_async`` with its own input: fail here first
    if the SDK renames what that needs (every test above would hang or fail too)."""
    server = build_server(MemoryRuntime(workspace.root, agent_dir=str(workspace.agent_dir)))
    lowlevel = server._lowlevel_server
    assert callable(lowlevel.run) and callable(lowlevel.create_initialization_options)
    assert "stdin" in inspect.signature(stdio_server).parameters
    source = inspect.getsource(type(server).run_stdio_async)
    assert "stdio_server()" in source and "self._lowlevel_server.run(" in source
