"""A small asyncio JSON-RPC client for language servers over stdio (no pygls).

Every server in the benchmark is driven by this one client, so they are measured the
same way.  It frames messages (``Content-Length``), matches responses to requests,
records every ``textDocument/publishDiagnostics`` with its arrival time, and answers the
server's own requests the way an editor would:

- ``workspace/configuration`` → the configured section or ``null`` per item
- ``workspace/applyEdit`` → applies the edit to the open document (and tells the server
  with a ``didChange``, as an editor does), ``{"applied": true}``
- ``client/registerCapability``, ``window/workDoneProgress/create``, anything else → ``null``

(vscode-markdown-languageserver's ``markdown/parse`` requests never get here: its Node
proxy, ``bench/peers/vscode_md_proxy.mjs``, answers them, as VS Code's extension host does.)

``RssSampler`` polls ``/proc`` for the resident memory of the server's process tree.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

JSON = Any


@dataclass(frozen=True)
class Publish:
    """One ``textDocument/publishDiagnostics`` as received."""

    uri: str
    version: int | None
    diagnostics: list[dict[str, Any]]
    received: float  # time.perf_counter()
    size: int = 0
    """The message body's bytes."""
    parse: float = 0.0
    """Seconds this client took to parse it (``json.loads``): part of ``received``'s wait."""

    def codes(self) -> set[str]:
        return {str(d.get("code")) for d in self.diagnostics}


class ServerError(Exception):
    """The server answered a request with an error, or died, or timed out."""


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@dataclass
class OpenDocument:
    uri: str
    text: str
    version: int
    language_id: str = "markdown"


def _offset(text: str, line: int, character: int) -> int:
    """Python string offset of an LSP position (UTF-16 character)."""
    start = 0
    for _ in range(line):
        nl = text.find("\n", start)
        if nl < 0:
            return len(text)
        start = nl + 1
    end = text.find("\n", start)
    line_text = text[start : len(text) if end < 0 else end]
    units = 0
    for i, ch in enumerate(line_text):
        if units >= character:
            return start + i
        units += 2 if ord(ch) > 0xFFFF else 1
    return start + len(line_text)


def apply_text_edits(text: str, edits: list[dict[str, Any]]) -> str:
    """Apply LSP ``TextEdit``s (non-overlapping) to ``text``."""
    spans = []
    for edit in edits:
        rng = edit["range"]
        start = _offset(text, rng["start"]["line"], rng["start"]["character"])
        end = _offset(text, rng["end"]["line"], rng["end"]["character"])
        spans.append((start, end, edit["newText"]))
    for start, end, new in sorted(spans, key=lambda s: (s[0], s[1]), reverse=True):
        text = text[:start] + new + text[end:]
    return text


class RssSampler:
    """Peak resident memory of a process tree, sampled from ``/proc`` in a thread.

    The peak is the largest sum of ``VmRSS`` over the tree seen in any sample, or a single
    process's own high-water mark (``VmHWM``) if that is larger.  ``exclude_root`` leaves
    the root process out (used for the vscode-markdown proxy, whose memory is the
    editor's, not the server's).
    """

    def __init__(self, pid: int, interval: float = 0.02, exclude_root: bool = False) -> None:
        self.pid = pid
        self.interval = interval
        self.exclude_root = exclude_root
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def start(self) -> RssSampler:
        self._thread.start()
        return self

    def stop(self) -> int:
        self.sample()
        self._stop.set()
        self._thread.join(timeout=2)
        return self.peak

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def tree(self) -> list[int]:
        pids = [self.pid]
        i = 0
        while i < len(pids):
            pids.extend(_children(pids[i]))
            i += 1
        return pids[1:] if self.exclude_root else pids

    def sample(self) -> None:
        total = 0
        for pid in self.tree():
            rss, hwm = _rss_hwm(pid)
            total += rss
            self.peak = max(self.peak, hwm)
        self.peak = max(self.peak, total)


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                found.extend(int(p) for p in fh.read().split())
    except OSError:
        pass
    return found


def _rss_hwm(pid: int) -> tuple[int, int]:
    rss = hwm = 0
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return rss, hwm


@dataclass
class LspClient:
    """One language-server process and the client side of its connection."""

    proc: asyncio.subprocess.Process
    spawned: float
    configuration: dict[str, JSON] = field(default_factory=dict)
    last_publish: dict[str, Publish] = field(default_factory=dict)
    """The latest publish per document. Not every publish: a client that keeps them all
    (1.15 MB of JSON each on the paraphrase store) spends its own time in long garbage
    collections that the edit timings then charge to the server."""
    documents: dict[str, OpenDocument] = field(default_factory=dict)
    server_requests: Counter[str] = field(default_factory=Counter)
    notifications: Counter[str] = field(default_factory=Counter)
    log: list[str] = field(default_factory=list)
    _next_id: int = 0
    _pending: dict[int, asyncio.Future[JSON]] = field(default_factory=dict)
    _barriers: set[int] = field(default_factory=set)
    _waiters: list[tuple[Callable[[Publish], bool], asyncio.Future[Publish]]] = field(
        default_factory=list
    )
    _reader: asyncio.Task[None] | None = None
    _write_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _last_body: tuple[int, float] = (0, 0.0)
    """The size and parse time of the message being dispatched."""

    @classmethod
    async def spawn(
        cls,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        configuration: dict[str, JSON] | None = None,
    ) -> LspClient:
        spawned = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            limit=1 << 26,
            start_new_session=True,
        )
        client = cls(proc=proc, spawned=spawned, configuration=dict(configuration or {}))
        client._reader = asyncio.create_task(client._read_loop())
        return client

    # --- wire ----------------------------------------------------------------------

    async def _write(self, message: dict[str, JSON]) -> float:
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
        data = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        stdin = self.proc.stdin
        assert stdin is not None
        async with self._write_lock:
            sent = time.perf_counter()
            stdin.write(data)
            await stdin.drain()
        return sent

    async def _read_loop(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            while True:
                length = -1
                while True:
                    line = await stdout.readline()
                    if not line:
                        raise EOFError
                    line = line.strip()
                    if not line:
                        break
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                if length < 0:
                    continue
                body = await stdout.readexactly(length)
                started = time.perf_counter()
                message = json.loads(body)
                received = time.perf_counter()
                self._last_body = (len(body), received - started)
                await self._dispatch(message, received)
        except (EOFError, asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            error = ServerError("server closed its output")
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(error)
            for _, waiter in self._waiters:
                if not waiter.done():
                    waiter.set_exception(error)

    async def _dispatch(self, message: dict[str, JSON], received: float) -> None:
        method = message.get("method")
        if method is None:
            message_id = message.get("id", -1)
            future = self._pending.pop(message_id, None)
            if future is not None and not future.done():
                if message_id in self._barriers:
                    self._barriers.discard(message_id)
                    future.set_result(received)
                elif "error" in message:
                    future.set_exception(ServerError(json.dumps(message["error"])[:500]))
                else:
                    future.set_result(message.get("result"))
            return
        if "id" in message:
            self.server_requests[method] += 1
            try:
                result = await self._answer(method, message.get("params"))
            except Exception as exc:  # never let a bad reply stop the reader
                self.log.append(f"answering {method}: {exc!r}")
                result = None
            await self._write({"jsonrpc": "2.0", "id": message["id"], "result": result})
            return
        self.notifications[method] += 1
        if method == "textDocument/publishDiagnostics":
            params = message["params"]
            publish = Publish(
                uri=params["uri"],
                version=params.get("version"),
                diagnostics=params.get("diagnostics") or [],
                received=received,
                size=self._last_body[0],
                parse=self._last_body[1],
            )
            self.last_publish[publish.uri] = publish
            still: list[tuple[Callable[[Publish], bool], asyncio.Future[Publish]]] = []
            for predicate, waiter in self._waiters:
                if waiter.done():
                    continue
                if predicate(publish):
                    waiter.set_result(publish)
                else:
                    still.append((predicate, waiter))
            self._waiters = still
        elif method == "window/logMessage":
            self.log.append(str(message.get("params", {}).get("message", ""))[:300])

    async def _answer(self, method: str, params: JSON) -> JSON:
        if method == "workspace/configuration":
            items = (params or {}).get("items", [])
            return [self.configuration.get(str(item.get("section"))) for item in items]
        if method == "workspace/applyEdit":
            return await self._apply_workspace_edit((params or {}).get("edit", {}))
        # client/registerCapability, window/workDoneProgress/create,
        # workspace/diagnostic/refresh, window/showMessageRequest, ...
        return None

    async def _apply_workspace_edit(self, edit: dict[str, JSON]) -> JSON:
        per_uri: dict[str, list[dict[str, JSON]]] = {}
        for uri, edits in (edit.get("changes") or {}).items():
            per_uri.setdefault(uri, []).extend(edits)
        for change in edit.get("documentChanges") or []:
            if "textDocument" in change:
                per_uri.setdefault(change["textDocument"]["uri"], []).extend(change["edits"])
        for uri, edits in per_uri.items():
            doc = self.documents.get(uri)
            if doc is None:
                continue
            doc.text = apply_text_edits(doc.text, edits)
            doc.version += 1
            await self.notify(
                "textDocument/didChange",
                {
                    "textDocument": {"uri": uri, "version": doc.version},
                    "contentChanges": [{"text": doc.text}],
                },
            )
        return {"applied": True}

    # --- API -----------------------------------------------------------------------

    async def request(self, method: str, params: JSON, timeout: float = 30.0) -> JSON:
        result, _ = await self.timed_request(method, params, timeout)
        return result

    async def timed_request(
        self, method: str, params: JSON, timeout: float = 30.0
    ) -> tuple[JSON, float]:
        """Send a request; return its result and the round trip in seconds."""
        self._next_id += 1
        request_id = self._next_id
        future: asyncio.Future[JSON] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        sent = await self._write(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        )
        try:
            result = await asyncio.wait_for(future, timeout)
        except TimeoutError as exc:
            self._pending.pop(request_id, None)
            raise ServerError(f"{method}: no answer in {timeout:g} s") from exc
        return result, time.perf_counter() - sent

    async def barrier(self, timeout: float = 30.0) -> float:
        """Send a request no server implements; return when its answer (an error) arrived.

        Servers handle messages in order, so the answer comes after the server has
        handled everything sent before it: for a server that does not publish unchanged
        diagnostics, this is when it finished with the last change.
        """
        self._next_id += 1
        request_id = self._next_id
        future: asyncio.Future[JSON] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self._barriers.add(request_id)
        await self._write(
            {"jsonrpc": "2.0", "id": request_id, "method": "bench/barrier", "params": None}
        )
        try:
            return float(await asyncio.wait_for(future, timeout))
        except TimeoutError as exc:
            self._pending.pop(request_id, None)
            raise ServerError(f"bench/barrier: no answer in {timeout:g} s") from exc

    async def notify(self, method: str, params: JSON) -> float:
        """Send a notification; return the time it was written."""
        return await self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def expect_publish(self, predicate: Callable[[Publish], bool]) -> asyncio.Future[Publish]:
        """A future for the next publish (from now on) that matches ``predicate``."""
        future: asyncio.Future[Publish] = asyncio.get_running_loop().create_future()
        self._waiters.append((predicate, future))
        return future

    async def open(self, uri: str, text: str, language_id: str = "markdown") -> float:
        self.documents[uri] = OpenDocument(uri=uri, text=text, version=0, language_id=language_id)
        return await self.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": language_id, "version": 0, "text": text}},
        )

    async def insert(
        self, uri: str, line: int, column: int, char: str, incremental: bool
    ) -> tuple[int, float]:
        """Type ``char`` at (line, column in code points); return (new version, time sent)."""
        doc = self.documents[uri]
        lines = doc.text.split("\n")
        before = lines[line][:column]
        lines[line] = before + char + lines[line][column:]
        doc.text = "\n".join(lines)
        doc.version += 1
        if incremental:
            position = {"line": line, "character": utf16_len(before)}
            change: dict[str, JSON] = {"range": {"start": position, "end": position}, "text": char}
        else:
            change = {"text": doc.text}
        sent = await self.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": doc.version}, "contentChanges": [change]},
        )
        return doc.version, sent

    async def close_document(self, uri: str) -> None:
        self.documents.pop(uri, None)
        await self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    async def shutdown(self, timeout: float = 5.0) -> None:
        """``shutdown`` + ``exit``, close stdin, wait; kill the process group if it lingers."""
        with contextlib.suppress(Exception):
            await self.request("shutdown", None, timeout=timeout)
        with contextlib.suppress(Exception):
            await self.notify("exit", None)
        with contextlib.suppress(Exception):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.kill()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.proc.wait(), 2)
        # Children (e.g. the proxied vscode-markdown server) go with their group.
        self.kill()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader

    def kill(self) -> None:
        # The server was started in its own session: its group id is its pid.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
