"""What one ``didChange`` costs the server's main thread, pygls' dispatch included.

    python -m bench.message [--stores 4500,paraphrase] [--edits 200]

The whole server (``create_server()``) in this process, its output written nowhere:
``initialize`` as the benchmark sends it, the store opened, the ``similar`` pass let
finish, then single characters typed as the benchmark types them, each one a framed
message's body read as the stdio loop reads it (``json.loads`` with the protocol's
object hook, then ``handle_message``). The figure is the main thread's CPU per message
(``time.thread_time``), p50: the background threads' work is not in it. What the
benchmark's latency adds to it is the pipe, the wake-ups of the two processes and the
client's own parse of the publish (a row of the report).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import time
from typing import Any

from bench import workload
from bench.servers import ServerSpec
from bench.session import TYPED, _initialize_params, _typing_target


class _Nowhere:
    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass


async def measure(store: str, edits: int) -> str:
    from memory_ls.server.server import create_server

    text = workload.store_text(store)
    ws = workload.make_workspace(text)
    saved = dict(os.environ)
    os.environ.update(ws.env({}))
    try:
        ls = create_server()
        ls.protocol.set_writer(_Nowhere())  # type: ignore[arg-type]
        protocol = ls.protocol

        def send(message: dict[str, Any]) -> None:
            body = json.dumps(message).encode()
            protocol.handle_message(json.loads(body, object_hook=protocol.structure_message))

        spec = ServerSpec(
            name="memory-ls", argv=[], is_memory_ls=True, init_options={"trusted": True}
        )
        params = _initialize_params(spec, ws, store)
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        await asyncio.sleep(0.1)
        item = {"uri": ws.store_uri, "languageId": "markdown", "version": 1, "text": text}
        send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": item}})
        await asyncio.sleep(3)  # the `similar` pass and the project look finish
        line, column = _typing_target(text)
        costs: list[float] = []
        for i in range(edits + 20):
            at = {"line": line, "character": column + i}
            change = {"range": {"start": at, "end": at}, "text": TYPED[i % len(TYPED)]}
            document = {"uri": ws.store_uri, "version": i + 2}
            message = {
                "jsonrpc": "2.0",
                "method": "textDocument/didChange",
                "params": {"textDocument": document, "contentChanges": [change]},
            }
            if i == 20:  # the first few warm the caches, as after start-up
                gc.collect()
                gc.freeze()
            started = time.thread_time()
            send(message)
            if i >= 20:
                costs.append(time.thread_time() - started)
            await asyncio.sleep(0)
        costs.sort()
        return f"| {store} | {costs[len(costs) // 2] * 1000:.2f} ms | {costs[int(len(costs) * 0.95)] * 1000:.2f} ms |"
    finally:
        os.environ.clear()
        os.environ.update(saved)
        workload.remove_workspace(ws)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.message", description=__doc__)
    parser.add_argument("--stores", default="4500,paraphrase")
    parser.add_argument("--edits", type=int, default=200)
    args = parser.parse_args(argv)
    print("| store | main thread CPU per didChange, p50 | p95 |")
    print("|---|---|---|")
    for store in args.stores.split(","):
        print(asyncio.run(measure(store, args.edits)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
