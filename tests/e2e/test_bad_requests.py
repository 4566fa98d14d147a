"""Bad, malformed and out-of-order messages over a real ``memory-ls serve`` (SPEC §7 "Bad requests").

pytest-lsp's client is typed, so it cannot send a request whose params are wrong:
these tests speak raw JSON-RPC over the server's stdio with a minimal framing
client of their own. Every request must get a response within a second, and
the server must keep working afterwards.
"""

from __future__ import annotations

import inspect
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pygls.io_
import pytest
from lsprotocol import types as lsp
from pygls.protocol import JsonRPCProtocol, LanguageServerProtocol

from memory_ls.core.text import HEADER
from memory_ls.server.commands import APPLY_TIMEOUT
from memory_ls.server.protocol import MAX_HEADER_LINE, MemoryProtocol, send_json
from memory_ls.server.server import create_server

ANSWER_TIMEOUT = 1.0
"""Every request, however bad, is answered within this many seconds."""
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
)
SERVER_NOT_INITIALIZED = -32002
NO_PARAMS = object()
NO_RESULT = object()
"""A reply to the server's request that carries no result (nor error)."""


class RawClient:
    """A language client that writes whatever bytes a test gives it.

    A reader thread splits the server's output into messages: responses are
    queued by id, notifications are kept, and the server's own requests
    (configuration, registrations, edits) get a plain answer so it never waits.
    """

    def __init__(self, root: Path, agent: Path, home: Path, log: Path) -> None:
        env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent), "HOME": str(home)}
        self.stderr = log.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memory_ls", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=env,
            cwd=root,
        )
        self.root = root
        self.replies: dict[str, Any] = {}
        """Results to give the server's requests, by method, instead of the plain ones."""
        self.held: dict[str, list[dict[str, Any]]] = {}
        """The server's requests of these methods, kept unanswered (a client still busy)."""
        self.responses: dict[Any, queue.Queue[dict[str, Any]]] = {}
        self.notifications: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    # -- writing -----------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def frame(self, body: bytes) -> None:
        self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def send(self, message: object) -> None:
        # json.dumps escapes a lone surrogate as "\\ud800", as a JS client would.
        self.frame(json.dumps(message).encode())

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def request(
        self, method: Any, params: Any = NO_PARAMS, timeout: float = ANSWER_TIMEOUT
    ) -> dict[str, Any]:
        """Send a request and return its response (failing if none comes in time)."""
        msg_id = self.new_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not NO_PARAMS:
            message["params"] = params
        self.send(message)
        return self.response(msg_id, timeout, what=f"{method} {params!r:.200}")

    def notify(self, method: str, params: Any = NO_PARAMS) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not NO_PARAMS:
            message["params"] = params
        self.send(message)

    # -- reading -----------------------------------------------------------------------

    def _queue(self, msg_id: Any) -> queue.Queue[dict[str, Any]]:
        with self.lock:
            return self.responses.setdefault(json.dumps(msg_id), queue.Queue())

    def response(
        self, msg_id: Any, timeout: float = ANSWER_TIMEOUT, what: str = ""
    ) -> dict[str, Any]:
        try:
            return self._queue(msg_id).get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"no answer to id {msg_id!r} within {timeout}s ({what}); "
                f"server exit code {self.proc.poll()}"
            ) from None

    def no_response(self, msg_id: Any, wait: float = 0.3) -> None:
        try:
            got = self._queue(msg_id).get(timeout=wait)
        except queue.Empty:
            return
        raise AssertionError(f"unexpected answer: {got}")

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            assert length is not None, "a message without Content-Length"
            message = json.loads(out.read(length))
            if "method" in message and "id" in message and message["method"] in self.held:
                with self.lock:
                    self.held[message["method"]].append(message)
            elif "method" in message and "id" in message:
                reply = {"jsonrpc": "2.0", "id": message["id"]}
                if (result := self._answer(message)) is not NO_RESULT:
                    reply["result"] = result
                self.send(reply)
            elif "method" in message:
                with self.lock:
                    self.notifications.append(message)
            else:  # a response must carry its id, null included (JSON-RPC 2.0)
                self._queue(message.get("id", "no id")).put(message)

    def _answer(self, request: dict[str, Any]) -> Any:
        if request["method"] in self.replies:
            return self.replies[request["method"]]
        if request["method"] == "workspace/configuration":
            return [None for _ in request["params"]["items"]]
        if request["method"] == "workspace/applyEdit":
            return {"applied": False}
        return None

    def published(self, uri: str) -> list[dict[str, Any]]:
        with self.lock:
            return [
                n["params"]
                for n in self.notifications
                if n["method"] == "textDocument/publishDiagnostics" and n["params"]["uri"] == uri
            ]

    def wait_published(self, uri: str, version: int, timeout: float = 5.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [p for p in self.published(uri) if p.get("version") == version]
            if found:
                return found[-1]
            time.sleep(0.02)
        raise AssertionError(f"no diagnostics for {uri} version {version}: {self.published(uri)}")

    # -- a session ---------------------------------------------------------------------

    def initialize(self, pull: bool = False) -> dict[str, Any]:
        text_document: dict[str, Any] = {"publishDiagnostics": {"versionSupport": True}}
        if pull:
            text_document["diagnostic"] = {"dynamicRegistration": False}
        answer = self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": self.root.as_uri(),
                "workspaceFolders": [{"uri": self.root.as_uri(), "name": "project"}],
                "capabilities": {
                    "textDocument": text_document,
                    "workspace": {"workspaceEdit": {"documentChanges": True}, "applyEdit": True},
                },
            },
            timeout=30,
        )
        assert "result" in answer, answer
        self.notify("initialized", {})
        return answer

    def open(self, path: Path, text: str, version: int = 1) -> str:
        uri = path.as_uri()
        self.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri,
                    "languageId": "markdown",
                    "version": version,
                    "text": text,
                }
            },
        )
        return uri

    def hover(self, uri: str, line: int, character: int = 2) -> dict[str, Any]:
        return self.request(
            "textDocument/hover",
            {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}},
        )

    def close(self) -> int:
        """Shut down and exit if still running; the server's exit code."""
        if self.proc.poll() is None:
            try:
                self.request("shutdown", timeout=5)
                self.notify("exit")
            except (AssertionError, BrokenPipeError):
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()
        return self.proc.returncode


@pytest.fixture
def client(tmp_path: Path) -> Iterator[RawClient]:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / ".pi").mkdir()
    (root / ".pi" / "memory.md").write_text(HEADER + "\n\n- use pnpm\n- run make test\n")
    agent = tmp_path / "agent"
    agent.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    raw = RawClient(root, agent, home, tmp_path / "server.log")
    yield raw
    raw.close()


def error_of(answer: dict[str, Any], code: int) -> str:
    """The error message of ``answer``, asserting that it is an error with ``code``."""
    assert "error" in answer, answer
    assert answer["error"]["code"] == code, answer
    return str(answer["error"]["message"])


def internal_errors(client: RawClient) -> list[str]:
    """What the server logged to the client as its own failure (bad input is not one)."""
    with client.lock:
        return [
            n["params"]["message"]
            for n in client.notifications
            if n["method"] == "window/logMessage" and "internal error" in n["params"]["message"]
        ]


def assert_still_works(client: RawClient, uri: str, version: int) -> None:
    """Hover, a command and diagnostics all still answer properly."""
    hover = client.hover(uri, 2)
    assert "result" in hover and hover["result"] is not None, hover
    assert "project memory" in hover["result"]["contents"]["value"]
    listed = client.request(
        "workspace/executeCommand", {"command": "memory.list", "arguments": [{}]}
    )
    assert listed["result"]["project"] == ["use pnpm", "run make test"], listed
    text = HEADER + "\n\n- use pnpm\n- run make test\n- use pnpm\n"
    client.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": text}],
        },
    )
    published = client.wait_published(uri, version)
    assert [d["code"] for d in published["diagnostics"]] == ["duplicate"]
    assert client.proc.poll() is None
    assert internal_errors(client) == []


# -- issue 9 item 6: params that cannot be read ---------------------------------------


def test_unreadable_params_get_invalid_params_naming_the_problem(client: RawClient) -> None:
    client.initialize()
    uri = client.open(
        client.root / ".pi" / "memory.md", HEADER + "\n\n- use pnpm\n- run make test\n"
    )
    doc = {"uri": uri}

    negative = error_of(
        client.request(
            "textDocument/hover", {"textDocument": doc, "position": {"line": -1, "character": 0}}
        ),
        INVALID_PARAMS,
    )
    assert "textDocument/hover" in negative and "line" in negative and "-1" in negative

    start = {"line": -3, "character": 0}
    negative_range = error_of(
        client.request(
            "textDocument/codeAction",
            {
                "textDocument": doc,
                "range": {"start": start, "end": {"line": 0, "character": 0}},
                "context": {"diagnostics": []},
            },
        ),
        INVALID_PARAMS,
    )
    assert "range.start" in negative_range and "-3" in negative_range

    no_range = error_of(
        client.request(
            "textDocument/codeAction", {"textDocument": doc, "context": {"diagnostics": []}}
        ),
        INVALID_PARAMS,
    )
    assert "range" in no_range and "missing" in no_range

    wrong_type = error_of(
        client.request(
            "textDocument/hover", {"textDocument": {"uri": 5}, "position": {"line": "x"}}
        ),
        INVALID_PARAMS,
    )
    assert "position.line" in wrong_type and "textDocument" in wrong_type

    for params in ([1, 2], "hover", 7, None, NO_PARAMS):
        error_of(client.request("textDocument/hover", params), INVALID_PARAMS)

    assert_still_works(client, uri, 2)


HUGE_INT = "1" + "0" * 400


def raw_request(
    client: RawClient, method: str, params: str, timeout: float = ANSWER_TIMEOUT
) -> dict[str, Any]:
    """A request whose params are written by hand (``1e999`` is not what json.dumps writes)."""
    msg_id = client.new_id()
    body = f'{{"jsonrpc": "2.0", "id": {msg_id}, "method": "{method}", "params": {params}}}'
    client.frame(body.encode())
    return client.response(msg_id, timeout, what=f"{method} {params:.100}")


def test_numbers_no_float_holds_get_clear_answers(client: RawClient) -> None:
    client.initialize()
    uri = client.open(
        client.root / ".pi" / "memory.md", HEADER + "\n\n- use pnpm\n- run make test\n"
    )
    doc = json.dumps({"uri": uri})

    # A position: 1e999 is read as infinity, which no integer holds; 10**400 is out of range.
    for line, said in [("1e999", "a number out of range at "), (HUGE_INT, "but was 100000000000…")]:
        position = f'{{"textDocument": {doc}, "position": {{"line": {line}, "character": 0}}}}'
        message = error_of(raw_request(client, "textDocument/hover", position), INVALID_PARAMS)
        assert "position" in message and said in message and len(message) < 200, message

    # A command's field: not a string, so the MemoryResult error of SPEC §3.
    for text in ("1e999", "-1e999", HUGE_INT):
        add = f'{{"command": "memory.add", "arguments": [{{"text": {text}}}]}}'
        answer = raw_request(client, "workspace/executeCommand", add)
        assert answer["result"]["error"] == "text is required.", answer

    # Diagnostic data a client sends back with a score no float holds: not read as data.
    for score in ("1e999", HUGE_INT):
        data = (
            f'{{"code": "similar", "line": 3, "note": "run make test", "first": "use pnpm",'
            f' "firstLine": 2, "score": {score}}}'
        )
        params = (
            f'{{"textDocument": {doc}, "range": {{"start": {{"line": 3, "character": 0}},'
            f' "end": {{"line": 3, "character": 1}}}}, "context": {{"diagnostics": [{{"range":'
            f' {{"start": {{"line": 3, "character": 2}}, "end": {{"line": 3, "character": 15}}}},'
            f' "message": "similar", "code": "similar", "source": "memory", "data": {data}}}]}}}}'
        )
        answer = raw_request(client, "textDocument/codeAction", params)
        assert "result" in answer, answer
        assert [a["title"] for a in answer["result"]] == [
            "Forget “run make test”",
            "Move to global memory",
        ]
    assert_still_works(client, uri, 2)


def test_settings_with_numbers_no_float_holds_are_reported_briefly(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (tmp_path / "agent").mkdir()
    (tmp_path / "home").mkdir()
    client = RawClient(root, tmp_path / "agent", tmp_path / "home", tmp_path / "server.log")
    try:
        options = (
            f'{{"similarThreshold": 1e999, "trusted": {HUGE_INT}, "readOnly": -1e999,'
            f' "severity": {{"duplicate": {HUGE_INT}}}}}'
        )
        init = (
            f'{{"processId": null, "rootUri": "{root.as_uri()}", "capabilities": {{}},'
            f' "initializationOptions": {options}}}'
        )
        assert "result" in raw_request(client, "initialize", init, timeout=30)
        client.notify("initialized", {})
        listed = client.request(
            "workspace/executeCommand", {"command": "memory.list", "arguments": [{}]}, timeout=5
        )
        assert listed["result"]["project"] == []  # the server runs, on its defaults
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with client.lock:
                logged = [
                    n["params"]["message"]
                    for n in client.notifications
                    if n["method"] == "window/logMessage"
                    and n["params"]["message"].startswith("memory-ls settings: ")
                ]
            if len(logged) == 4:
                break
            time.sleep(0.05)
        assert len(logged) == 4, logged
        shown = "100000000000000000000000000000000000000…"
        assert logged[0].startswith(
            "memory-ls settings: Invalid value Infinity for memoryLs.similarThreshold ("
        )
        assert logged[1].startswith(
            f"memory-ls settings: Invalid value {shown} for memoryLs.trusted ("
        )
        assert logged[2].startswith(
            "memory-ls settings: Invalid value -Infinity for memoryLs.readOnly ("
        )
        assert logged[3].startswith(f"memory-ls settings: Invalid severity {shown} for duplicate (")
        assert all(m.endswith("using the default.") and len(m) < 200 for m in logged), logged
        assert internal_errors(client) == []
    finally:
        client.close()


def test_hostile_pushed_settings_are_reported_briefly_and_the_server_carries_on(
    client: RawClient,
) -> None:
    """A client without ``workspace/configuration`` pushes its settings: junk in every
    shape (the section not an object, a NUL in the agent dir, NaN, a list nested 300 deep,
    a megabyte key, 5,000 unknown codes) is told in a few short log lines; the server keeps
    its settings and keeps working."""
    client.initialize()
    uri = client.open(
        client.root / ".pi" / "memory.md", HEADER + "\n\n- use pnpm\n- run make test\n"
    )
    client.wait_published(uri, 1)
    deep = "[" * 300 + "]" * 300
    codes = ", ".join(f'"code{i}": "error"' for i in range(5000))
    for settings in [
        '{"memoryLs": "junk"}',
        '{"memoryLs": {"agentDir": "/a\\u0000b", "similarThreshold": NaN}}',
        f'{{"memoryLs": {{"readOnly": {deep}, "{"k" * 1_000_000}": 1}}}}',
        f'{{"memoryLs": {{"severity": {{{codes}}}}}}}',
        "[1, 2]",
        "null",
    ]:
        body = (
            '{"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration",'
            f' "params": {{"settings": {settings}}}}}'
        )
        client.frame(body.encode())
    assert_still_works(client, uri, 2)  # (its answers come after every notification's end)
    with client.lock:
        logged = [
            n["params"]["message"]
            for n in client.notifications
            if n["method"] == "window/logMessage"
            and n["params"]["message"].startswith("memory-ls settings: ")
        ]
    assert logged[:5] == [
        "memory-ls settings: memoryLs settings must be an object, not a string; ignored.",
        "memory-ls settings: Invalid value '/a\\x00b' for memoryLs.agentDir"
        " (a path cannot hold a NUL character); using the default.",
        "memory-ls settings: Invalid value NaN for memoryLs.similarThreshold"
        " (Input should be a finite number); using the default.",
        "memory-ls settings: Invalid value [[[[...]]]] for memoryLs.readOnly"
        " (Input should be a valid boolean); using the default.",
        "memory-ls settings: Unknown setting memoryLs." + "k" * 59 + "…; ignored.",
    ]
    assert len(logged) == 5 + 21, logged[5:]
    assert logged[-1] == "memory-ls settings: 4980 more problems in memoryLs; ignored."
    assert all(len(m) < 300 for m in logged)


def test_bad_notification_is_ignored_and_the_server_carries_on(client: RawClient) -> None:
    client.initialize()
    bad_open = {"textDocument": {"uri": 5, "languageId": "markdown", "version": "x", "text": 1}}
    client.notify("textDocument/didOpen", bad_open)
    client.notify("textDocument/didChange", [1, 2])
    client.notify("textDocument/didClose", None)
    uri = client.open(
        client.root / ".pi" / "memory.md", HEADER + "\n\n- use pnpm\n- run make test\n"
    )
    client.wait_published(uri, 1)
    assert_still_works(client, uri, 2)


def test_a_text_that_is_not_a_string_is_refused_not_read_as_its_repr(client: RawClient) -> None:
    # cattrs turns any value into a ``str`` field with str(): a didChange or didOpen with
    # "text": null became a buffer holding "None" (and 5 became "5").
    client.initialize()
    store = client.root / ".pi" / "memory.md"
    uri = client.open(store, HEADER + "\n\n- use pnpm\n- run make test\n")
    client.wait_published(uri, 1)
    for version, text in ((2, None), (3, 5), (4, ["- x"])):
        client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
        )
    other = (client.root / "notes.md").as_uri()
    for text in (None, 7):
        client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": other, "languageId": "markdown", "version": 1, "text": text}},
        )
    symbols = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    assert [s["name"] for s in symbols["result"]] == ["use pnpm", "run make test"], symbols
    ignored = [
        n["params"]["message"]
        for n in client.notifications
        if n["method"] == "window/logMessage" and "ignored" in n["params"]["message"]
    ]
    assert len([m for m in ignored if "didChange" in m]) == 3, ignored
    assert len([m for m in ignored if "didOpen" in m]) == 2, ignored
    assert not [n for n in client.notifications if n.get("params", {}).get("uri") == other]
    assert_still_works(client, uri, 5)


# -- the envelope: JSON-RPC rules ------------------------------------------------------


def test_malformed_json_gets_a_parse_error_with_a_null_id(client: RawClient) -> None:
    client.initialize()
    client.frame(b'{"jsonrpc": "2.0", "id": 41, "method": "textDocument/hover", "params": {')
    message = error_of(client.response(None), PARSE_ERROR)
    assert "Parse error" in message
    client.no_response(41)
    client.frame(b"\xff\xfe not utf-8")
    error_of(client.response(None), PARSE_ERROR)
    client.frame(b"[" * 100_000)  # deeper than the JSON decoder recurses
    error_of(client.response(None, timeout=5), PARSE_ERROR)
    uri = client.open(
        client.root / ".pi" / "memory.md", HEADER + "\n\n- use pnpm\n- run make test\n"
    )
    assert_still_works(client, uri, 2)


INVALID_REQUESTS: list[tuple[Any, Any]] = [
    ({"id": 51, "method": "textDocument/hover", "params": {}}, 51),  # no "jsonrpc"
    ({"jsonrpc": "1.0", "id": 52, "method": "textDocument/hover", "params": {}}, 52),
    ({"jsonrpc": "2.0", "id": 53, "method": 7, "params": {}}, 53),
    ({"jsonrpc": "2.0", "id": [54], "method": "textDocument/hover", "params": {}}, None),
    ({"jsonrpc": "2.0", "id": True, "method": "textDocument/hover", "params": {}}, None),
    ({"jsonrpc": "2.0", "id": 5.5, "method": "textDocument/hover", "params": {}}, None),
    ({"jsonrpc": "2.0", "id": None, "method": "textDocument/hover", "params": {}}, None),
    ([{"jsonrpc": "2.0", "id": 55, "method": "shutdown"}], None),  # a batch
    (42, None),
    ("hover", None),
    ({}, None),
    # A notification method sent with an id is a request the server cannot serve.
    ({"jsonrpc": "2.0", "id": 56, "method": "textDocument/didSave", "params": {}}, 56),
    # An id and nothing else: neither a request nor an answer (it was only logged).
    ({"jsonrpc": "2.0", "id": 57}, 57),
    ({"jsonrpc": "2.0", "id": "fifty-eight", "params": {}}, "fifty-eight"),
    ({"jsonrpc": "2.0"}, None),
]


def test_invalid_requests_are_answered(client: RawClient) -> None:
    client.initialize()
    for message, answer_id in INVALID_REQUESTS:
        client.send(message)
        assert error_of(client.response(answer_id), INVALID_REQUEST), message
    uri = client.open(
        client.root / ".pi" / "memory.md", HEADER + "\n\n- use pnpm\n- run make test\n"
    )
    assert_still_works(client, uri, 2)


def test_unknown_method_is_method_not_found(client: RawClient) -> None:
    client.initialize()
    assert "memory/nothing" in error_of(client.request("memory/nothing", {}), METHOD_NOT_FOUND)
    assert "$/nothing" in error_of(client.request("$/nothing"), METHOD_NOT_FOUND)
    client.notify("memory/nothing", {})  # an unknown notification is ignored
    uri = client.open(
        client.root / ".pi" / "memory.md", HEADER + "\n\n- use pnpm\n- run make test\n"
    )
    assert_still_works(client, uri, 2)


# -- out of order ----------------------------------------------------------------------


def test_requests_before_initialize_are_refused_and_notifications_dropped(
    client: RawClient,
) -> None:
    store = client.root / ".pi" / "memory.md"
    uri = store.as_uri()
    position = {"line": 2, "character": 2}
    hover = client.request(  # the first answer waits for the server to start
        "textDocument/hover", {"textDocument": {"uri": uri}, "position": position}, timeout=30
    )
    message = error_of(hover, SERVER_NOT_INITIALIZED)
    assert "initialize" in message
    listed = client.request("workspace/executeCommand", {"command": "memory.list"})
    error_of(listed, SERVER_NOT_INITIALIZED)
    client.open(store, HEADER + "\n\n- dropped\n")  # dropped: the server is not initialized
    error_of(client.request("initialize", {"capabilities": 5}), INVALID_PARAMS)
    client.initialize()  # a bad initialize did not count
    assert client.published(uri) == []
    assert "already" in error_of(
        client.request("initialize", {"capabilities": {}}), INVALID_REQUEST
    )
    client.open(store, HEADER + "\n\n- use pnpm\n- run make test\n")
    assert_still_works(client, uri, 2)


def test_requests_after_shutdown_are_invalid_and_exit_ends_with_zero(client: RawClient) -> None:
    client.initialize()
    uri = client.open(client.root / ".pi" / "memory.md", HEADER + "\n\n- use pnpm\n")
    assert client.request("shutdown") == {"jsonrpc": "2.0", "id": client.next_id, "result": None}
    assert "shut" in error_of(client.hover(uri, 2), INVALID_REQUEST)
    error_of(client.request("shutdown"), INVALID_REQUEST)
    client.notify("exit")
    assert client.proc.wait(timeout=5) == 0


def test_exit_without_shutdown_ends_with_one(client: RawClient) -> None:
    client.initialize()
    client.notify("exit")
    assert client.proc.wait(timeout=5) == 1


def test_shutdown_while_a_command_waits_for_the_client_ends_with_zero(client: RawClient) -> None:
    """pygls' shutdown cancels the requests in flight while it walks them: cancelling a
    command (a generator handler: its callback runs at once and forgets the request)
    changed the dict under it, so ``shutdown`` got an internal error, the server never
    shut down, and ``exit`` ended with 1."""
    client.held["workspace/applyEdit"] = []
    client.initialize()
    client.open(client.root / ".pi" / "memory.md", HEADER + "\n\n- use pnpm\n- run make test\n")
    msg_id = client.new_id()
    client.send(
        {
            "jsonrpc": "2.0",
            "id": msg_id,
            "method": "workspace/executeCommand",
            "params": {"command": "memory.add", "arguments": [{"text": "new note"}]},
        }
    )
    deadline = time.monotonic() + 10
    while not client.held["workspace/applyEdit"]:  # the command waits for the client now
        assert time.monotonic() < deadline, "the command never asked to edit the buffer"
        time.sleep(0.02)
    assert client.request("shutdown") == {"jsonrpc": "2.0", "id": client.next_id, "result": None}
    # The note is written: the answer says so (docs/lsp.md), not "canceled".
    assert "new note" in client.response(msg_id)["result"]["project"]
    client.notify("exit")
    assert client.proc.wait(timeout=10) == 0
    assert "new note" in (client.root / ".pi" / "memory.md").read_text()  # nothing lost


def test_change_before_open_and_stale_versions_do_not_break_the_server(
    client: RawClient,
) -> None:
    client.initialize()
    store = client.root / ".pi" / "memory.md"
    uri = store.as_uri()
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": "- x\n"}]},
    )
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    client.open(store, HEADER + "\n\n- use pnpm\n- run make test\n", version=5)
    client.wait_published(uri, 5)
    assert_still_works(client, uri, 6)


def test_an_unreadable_answer_from_the_client_fails_fast(client: RawClient) -> None:
    """The server does not wait out its timeout for an answer it cannot read."""
    client.replies = {"workspace/applyEdit": 5, "workspace/configuration": "x"}
    client.initialize()
    uri = client.open(
        client.root / ".pi" / "memory.md", HEADER + "\n\n- use pnpm\n- run make test\n"
    )
    started = time.monotonic()
    added = client.request(
        "workspace/executeCommand", {"command": "memory.add", "arguments": [{"text": "new"}]}
    )
    assert added["result"]["project"] == ["use pnpm", "run make test", "new"]
    # Waiting out the answer would take APPLY_TIMEOUT (twice, with the retry); a loaded
    # machine may take a second or two to run the command itself.
    assert time.monotonic() - started < APPLY_TIMEOUT
    client.replies = {}
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    client.request(
        "workspace/executeCommand", {"command": "memory.forget", "arguments": [{"text": "new"}]}
    )
    client.open(client.root / ".pi" / "memory.md", HEADER + "\n\n- use pnpm\n- run make test\n", 3)
    assert_still_works(client, uri, 4)


# -- framing ---------------------------------------------------------------------------


def test_a_short_content_length_costs_only_that_message(client: RawClient) -> None:
    client.initialize()
    uri = client.open(
        client.root / ".pi" / "memory.md", HEADER + "\n\n- use pnpm\n- run make test\n"
    )
    body = json.dumps({"jsonrpc": "2.0", "id": 61, "method": "shutdown"}).encode()
    client.write(b"Content-Length: %d\r\n\r\n" % (len(body) - 5) + body)
    error_of(client.response(None), PARSE_ERROR)
    client.no_response(61)
    assert_still_works(client, uri, 2)  # the next messages are read again


def test_an_absurd_content_length_is_refused_without_reading_it(client: RawClient) -> None:
    client.initialize()
    uri = client.open(
        client.root / ".pi" / "memory.md", HEADER + "\n\n- use pnpm\n- run make test\n"
    )
    client.write(b"Content-Length: 1000000000000000\r\n\r\n" + b'{"jsonrpc": "2.0", "id": 62}')
    message = error_of(client.response(None), INVALID_REQUEST)
    assert "1000000000000000 bytes" in message
    assert_still_works(client, uri, 2)


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        # More digits than Python reads as an int (4,300): it raised out of the read loop.
        (b"Content-Length: " + b"9" * 5000 + b"\r\n", "(5000 digits)"),
        (b"Content-Length: -5\r\n", "'-5' is not a length"),
        (b"Content-Length: 12abc\r\n", "'12abc' is not a length"),
        (b"Content-Length: 28\r\nContent-Length: 5\r\n", "two different Content-Length"),
    ],
    ids=["5000-digits", "negative", "not-a-number", "two-lengths"],
)
def test_a_content_length_that_is_no_length_is_answered_and_skipped(
    client: RawClient, header: bytes, problem: str
) -> None:
    client.initialize()
    uri = client.open(
        client.root / ".pi" / "memory.md", HEADER + "\n\n- use pnpm\n- run make test\n"
    )
    # Its body would be answered as a request of id 62 if it were read.
    client.write(header + b"\r\n" + b'{"jsonrpc": "2.0", "id": 62}')
    assert problem in error_of(client.response(None), INVALID_REQUEST)
    client.no_response(62)
    assert_still_works(client, uri, 2)


@pytest.mark.parametrize(
    "header",
    [b"content-length: %d\r\n", b"Content-Length:  %d \r\n", b"Content-Length: 000%d\r\n"],
    ids=["lower-case", "spaces", "leading-zeros"],
)
@pytest.mark.parametrize("eol", [b"\r\n", b"\n"], ids=["crlf", "lf"])
def test_a_header_in_another_spelling_is_read(client: RawClient, header: bytes, eol: bytes) -> None:
    """Header names are case-insensitive and clients end lines with LF alone (pygls
    recognised only ``Content-Length: N\\r\\n``: the message was lost unanswered)."""
    client.initialize()
    uri = client.open(
        client.root / ".pi" / "memory.md", HEADER + "\n\n- use pnpm\n- run make test\n"
    )
    symbol = {"jsonrpc": "2.0", "id": 63, "method": "workspace/symbol", "params": {"query": "p"}}
    body = json.dumps(symbol).encode()
    client.write((header % len(body)).replace(b"\r\n", eol) + eol + body)
    assert "result" in client.response(63)
    assert_still_works(client, uri, 2)


@pytest.mark.parametrize("cut", [1, 5, 15])
def test_a_header_cut_by_the_end_of_a_junk_piece_is_still_found(
    client: RawClient, cut: int
) -> None:
    """Junk without a line break is read in pieces of MAX_HEADER_LINE bytes; a header
    that began in the last bytes of one piece was cut in two, and its message lost."""
    client.initialize()
    client.open(client.root / ".pi" / "memory.md", HEADER + "\n\n- use pnpm\n- run make test\n")
    body = json.dumps({"jsonrpc": "2.0", "id": 64, "method": "shutdown"}).encode()
    junk = b"x" * (MAX_HEADER_LINE - cut)
    client.write(junk + b"Content-Length: %d\r\n\r\n" % len(body) + body)
    assert client.response(64, timeout=5)["result"] is None


def test_an_id_without_a_method_is_answered_with_its_id(client: RawClient) -> None:
    client.initialize()
    client.send({"jsonrpc": "2.0", "id": 5})
    assert "needs a method" in error_of(client.response(5), INVALID_REQUEST)


def test_an_answer_without_a_result_fails_the_servers_request_at_once(client: RawClient) -> None:
    """``{"jsonrpc": "2.0", "id": N}`` for the server's own pending request: that request
    fails now (not after its timeout), and nothing is answered back to the client."""
    client.replies = {"workspace/applyEdit": NO_RESULT}
    client.initialize()
    uri = client.open(
        client.root / ".pi" / "memory.md", HEADER + "\n\n- use pnpm\n- run make test\n"
    )
    started = time.monotonic()
    added = client.request(
        "workspace/executeCommand",
        {"command": "memory.add", "arguments": [{"text": "new"}]},
        timeout=APPLY_TIMEOUT,
    )
    assert added["result"]["project"] == ["use pnpm", "run make test", "new"], added
    assert time.monotonic() - started < APPLY_TIMEOUT
    client.replies = {}
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    client.request(
        "workspace/executeCommand", {"command": "memory.forget", "arguments": [{"text": "new"}]}
    )
    with client.lock:
        answered = [k for k in client.responses if k.startswith('"')]  # the server's ids
    assert answered == [], answered
    client.open(client.root / ".pi" / "memory.md", HEADER + "\n\n- use pnpm\n- run make test\n", 3)
    assert_still_works(client, uri, 4)


def test_a_large_message_is_read(client: RawClient) -> None:
    client.initialize()
    big = HEADER + "\n\n" + "".join(f"- note {i} {'x' * 80}\n" for i in range(60_000))  # ~5 MB
    store = client.root / ".pi" / "memory.md"
    uri = client.open(store, big)
    published = client.wait_published(uri, 1, timeout=30)
    assert "file-too-large" in [d["code"] for d in published["diagnostics"]]
    answer = client.request("workspace/symbol", {"query": "x" * 2_000_000}, timeout=10)
    assert answer["result"] == []
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    client.open(store, HEADER + "\n\n- use pnpm\n- run make test\n", version=7)
    assert_still_works(client, uri, 8)


# -- the fuzz test: every registered method, many bad shapes ---------------------------


def registered_methods(pull: bool) -> tuple[list[str], list[str], list[str]]:
    """The requests, notifications and commands the server registers, read from its feature manager.

    The server is initialised in-process (with or without pull diagnostics) so the
    features it registers at ``initialize`` time are listed too.
    """
    ls = create_server()
    sent: list[bytes] = []
    ls.protocol.set_writer(type("Sink", (), {"write": lambda self, data: sent.append(data)})())
    capabilities: dict[str, Any] = {"textDocument": {"diagnostic": {}}} if pull else {}
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"rootUri": None, "capabilities": capabilities},
        }
    )
    ls.protocol.handle_message(json.loads(body, object_hook=ls.protocol.structure_message))
    assert sent and b'"result"' in sent[0], sent
    fm = ls.protocol.fm
    methods = sorted({*fm.features, *fm.builtin_features})
    requests, notifications = [], []
    for method in methods:
        message_type = lsp.METHOD_TO_TYPES[method][0]
        (requests if "id" in attrs.fields_dict(message_type) else notifications).append(method)
    return requests, notifications, sorted(fm.commands)


def bad_params(uri: str) -> list[Any]:
    """Params no request accepts as they are, or only just."""
    doc = {"uri": uri}
    position = {"line": 2, "character": 2}
    full_range = {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}}
    nested: Any = {}
    for _ in range(200):
        nested = {"a": [nested]}
    return [
        NO_PARAMS,
        None,
        [],
        [1, "x"],
        "textDocument",
        -1,
        {},
        {"textDocument": doc},
        {"textDocument": doc, "position": {"line": -1, "character": 0}},
        {"textDocument": doc, "position": {"line": 0, "character": -5}},
        {"textDocument": doc, "position": {"line": 2**31, "character": 2**53}},
        {"textDocument": doc, "position": {"line": 10**6, "character": 10**6}},
        {"textDocument": {"uri": 5}, "position": "x", "range": [0, 0]},
        {"textDocument": None, "position": None, "range": None, "context": None},
        {
            "textDocument": doc,
            "range": {"start": {"line": 3, "character": 0}, "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": [], "only": ["quickfix"]},
        },
        {
            "textDocument": {"uri": uri + "\ud800"},
            "position": position,
            "range": full_range,
            "context": {"diagnostics": [{"range": full_range, "message": "\udfff", "data": [1]}]},
            "options": {"tabSize": 2, "insertSpaces": True},
            "query": "\ud800",
            "command": "\ud800",
            "arguments": ["\ud800"],
        },
        {"textDocument": doc, "position": position, "extra": nested},
        {"textDocument": doc, "context": {"diagnostics": "x"}, "range": full_range},
        {"textDocument": doc, "options": {"tabSize": "x"}},
        {"query": 5, "previousResultId": 7, "identifier": []},
    ]


BAD_ARGUMENTS: list[Any] = [
    NO_PARAMS,
    None,
    5,
    [1],
    [None],
    ["text"],
    [[{"text": "x"}]],
    [{"text": 5, "to": [], "other": {}, "scope": "nowhere"}],
    [{"text": "", "scope": None}],
    [{"text": "\ud800", "to": "\udc00", "other": "\ud800", "scope": "\ud800"}],
    [{"uri": "file:///no/such/folder/at/all", "text": "x"}],
    [{"uri": 7}],
    [{"uri": "not a uri \ud800"}],
    [{}, {}],
]


def answered_properly(answer: dict[str, Any]) -> bool:
    """An error the client can act on, or a result: never a crash (internal error)."""
    if "error" in answer:
        return bool(answer["error"]["code"] != INTERNAL_ERROR and answer["error"]["message"])
    return "result" in answer


@pytest.mark.parametrize("pull", [False, True], ids=["push", "pull"])
def test_fuzz_every_registered_method(client: RawClient, pull: bool) -> None:
    requests, notifications, commands = registered_methods(pull)
    assert {"textDocument/hover", "textDocument/codeAction", "workspace/executeCommand"} <= set(
        requests
    )
    assert ("textDocument/diagnostic" in requests) is pull
    assert "memory.add" in commands
    client.initialize(pull=pull)
    store = client.root / ".pi" / "memory.md"
    uri = client.open(store, HEADER + "\n\n- use pnpm\n- run make test\n")
    shapes = bad_params(uri)
    bad: list[str] = []
    count = 0
    for method in requests:
        if method == "shutdown":
            continue  # it would (rightly) end the session; its own test is above
        for params in shapes:
            answer = client.request(method, params)
            count += 1
            if not answered_properly(answer):
                bad.append(f"{method} {params!r:.120} -> {answer}")
    for command in commands:
        for arguments in BAD_ARGUMENTS:
            params: dict[str, Any] = {"command": command}
            if arguments is not NO_PARAMS:
                params["arguments"] = arguments
            answer = client.request("workspace/executeCommand", params)
            count += 1
            if not answered_properly(answer):
                bad.append(f"{command} {arguments!r:.120} -> {answer}")
    for method in notifications:
        if method == "exit":
            continue
        for params in shapes:
            client.notify(method, params)
    assert not bad, "\n".join(bad)
    assert count > 200
    # Some of the shapes were good enough to close the document: open it again.
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    client.open(store, HEADER + "\n\n- use pnpm\n- run make test\n", version=10)
    if pull:
        client.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": 11},
                "contentChanges": [{"text": "- a\n- a\n"}],
            },
        )
        report = client.request("textDocument/diagnostic", {"textDocument": {"uri": uri}})
        assert [d["code"] for d in report["result"]["items"]] == ["duplicate"], report
    else:
        assert_still_works(client, uri, 11)


# -- the pygls internals this relies on -----------------------------------------------


class FakeReader:
    """pygls' reader interface over fixed bytes."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    async def readline(self) -> bytes:
        line, sep, self.data = self.data.partition(b"\n")
        return line + sep

    async def readexactly(self, n: int) -> bytes:
        body, self.data = self.data[:n], self.data[n:]
        return body


async def test_pygls_read_loop_still_hands_messages_to_memory_protocol() -> None:
    """MemoryProtocol overrides pygls methods by name: if pygls changes them, fail here.

    pygls' read loop parses each body with ``protocol.structure_message`` as the
    JSON object hook, passes the result to ``protocol.handle_message``, and reports
    a body that is not JSON to ``report_server_error``; MemoryProtocol answers
    bad requests from there. This runs pygls' own loop in-process.
    """
    for name in ("structure_message", "handle_message", "get_message_type"):
        assert name in vars(JsonRPCProtocol) or name in vars(LanguageServerProtocol), name
        assert name == "get_message_type" or name in vars(MemoryProtocol), name
    ls = create_server()
    written: list[bytes] = []
    ls.protocol.set_writer(type("Sink", (), {"write": lambda self, data: written.append(data)})())
    bodies = [
        b'{"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover", "params": {}}',
        b'{"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {',
    ]
    data = b"".join(b"Content-Length: %d\r\n\r\n" % len(b) + b for b in bodies)
    await pygls.io_.run_async(
        threading.Event(), FakeReader(data), ls.protocol, error_handler=ls.report_server_error
    )
    answers = [json.loads(w.partition(b"\r\n\r\n")[2]) for w in written]
    answers = [a for a in answers if "id" in a]
    assert [(a["id"], a["error"]["code"]) for a in answers] == [
        (1, SERVER_NOT_INITIALIZED),
        (None, PARSE_ERROR),
    ]


def test_send_json_frames_a_message_through_a_pipe() -> None:
    """``send_json`` uses pygls' private ``_send_data(data)``: if pygls changes it, fail here.

    Messages go through a real pipe, as over stdio, and are read back by their
    headers: each ``Content-Length`` counts its body's bytes (non-ASCII text
    included), each body is the message as sent, and an ``"id": null`` stays.
    """
    assert list(inspect.signature(LanguageServerProtocol._send_data).parameters) == [
        "self",
        "data",
    ]
    ls = create_server()
    messages: list[dict[str, Any]] = [
        {
            "jsonrpc": "2.0",
            "method": "textDocument/publishDiagnostics",
            "params": {
                "uri": "file:///tmp/caf%C3%A9/.pi/memory.md",
                "version": 3,
                "diagnostics": [{"message": "naïve “note” 😀 \u2028", "severity": 2}],
            },
        },
        {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": "é"}},
    ]
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, "rb") as pipe_in:
        with os.fdopen(write_fd, "wb") as pipe_out:
            ls.protocol.set_writer(pygls.io_.StdoutWriter(pipe_out))
            for message in messages:
                send_json(ls.protocol, message)
        received = []
        while header := pipe_in.readline():
            fields = {}
            while header != b"\r\n":
                name, _, value = header.decode("ascii").partition(": ")
                fields[name] = value.strip()
                header = pipe_in.readline()
            received.append(json.loads(pipe_in.read(int(fields["Content-Length"]))))
    assert received == messages
