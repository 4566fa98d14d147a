"""The publish floor: a server that does nothing but publish memory-ls's own bytes.

    python bench/peers/floor_publish.py CANNED [--pygls] [--loop-reader]

``CANNED`` is a ``publishDiagnostics`` body captured from memory-ls (``bench.floor``
writes it), with ``@URI@`` where the document's URI was and ``@VERSION@`` where its
version was. On every ``didOpen`` and ``didChange`` this server writes that body with
the document's URI and version spliced in: the same bytes memory-ls publishes for that
keystroke, at no cost of analysis. What an edit costs here is what any Python server
pays to read a change and publish those diagnostics over a pipe to the benchmark's
client (the client's own parse of the publish included), so memory-ls's edit latency
minus this one's is memory-ls's own share.

- default: plain asyncio, no pygls (the pipe read by the event loop, ``json.loads``,
  one write of header and body): the floor of a Python server;
- ``--pygls``: a pygls ``LanguageServer`` whose ``didOpen``/``didChange`` handlers write
  the canned bytes, read through pygls' stdio reader (a worker thread), as shipped;
- ``--pygls --loop-reader``: the same, reading the pipe through memory-ls's own
  ``protocol.start_stdio`` (the event loop), as memory-ls reads it.

It answers ``initialize`` with memory-ls's text synchronisation (incremental), ``shutdown``
with ``null``, any other request with ``MethodNotFound`` (the benchmark's barrier).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

CAPABILITIES: dict[str, Any] = {
    "positionEncoding": "utf-16",
    "textDocumentSync": {"openClose": True, "change": 2, "save": {"includeText": False}},
}
"""What the benchmark reads of memory-ls's capabilities: incremental sync."""
SERVER_INFO = {"name": "publish-floor", "version": "1"}


class Canned:
    """The captured publish, with a document's URI and version spliced in."""

    def __init__(self, template: bytes) -> None:
        if template.count(b"@VERSION@") != 1 or b"@URI@" not in template:
            raise SystemExit("the canned publish needs one @VERSION@ and its @URI@")
        self.template = template

    def framed(self, uri: str, version: object) -> bytes:
        """Header and body of the publish for ``uri`` at ``version``."""
        body = self.template.replace(b"@VERSION@", json.dumps(version).encode(), 1)
        body = body.replace(b"@URI@", json.dumps(uri).encode())
        return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


async def _serve_plain(canned: Canned) -> None:
    """Read framed messages from stdin with the event loop; answer as described above."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 26)
    pipe = os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=0)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    out = sys.stdout.fileno()
    os.set_blocking(out, True)

    def write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(out, view) :]

    while True:
        length = -1
        while True:
            line = await reader.readline()
            if not line:
                return
            if not line.strip():
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length < 0:
            continue
        message = json.loads(await reader.readexactly(length))
        method = message.get("method")
        params = message.get("params") or {}
        if method in ("textDocument/didOpen", "textDocument/didChange"):
            document = params["textDocument"]
            write(canned.framed(document["uri"], document.get("version")))
        elif method == "exit":
            return
        elif "id" in message and method is not None:
            answer: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
            if method == "initialize":
                answer["result"] = {"capabilities": CAPABILITIES, "serverInfo": SERVER_INFO}
            elif method == "shutdown":
                answer["result"] = None
            else:
                answer["error"] = {"code": -32601, "message": f"no method {method}"}
            write(_frame(answer))


def _serve_pygls(canned: Canned, loop_reader: bool) -> None:
    from lsprotocol import types
    from pygls.lsp.server import LanguageServer

    server = LanguageServer(SERVER_INFO["name"], SERVER_INFO["version"])

    def publish(ls: LanguageServer, uri: str, version: int) -> None:
        writer = ls.protocol.writer
        assert writer is not None
        writer.write(canned.framed(uri, version))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: LanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        publish(ls, params.text_document.uri, params.text_document.version)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: LanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        publish(ls, params.text_document.uri, params.text_document.version)

    if loop_reader:
        from memory_ls.server.protocol import start_stdio

        start_stdio(server)
    else:
        server.start_io()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("canned", type=Path, help="the captured publish (bench.floor writes it)")
    parser.add_argument("--pygls", action="store_true", help="a pygls LanguageServer")
    parser.add_argument(
        "--loop-reader", action="store_true", help="with --pygls: memory-ls's stdio reader"
    )
    args = parser.parse_args(argv)
    canned = Canned(args.canned.read_bytes())
    if args.pygls:
        _serve_pygls(canned, args.loop_reader)
    else:
        asyncio.run(_serve_plain(canned))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
