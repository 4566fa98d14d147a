"""The publish floor: memory-ls's edit latency next to a server that only publishes its bytes.

    python -m bench.floor [--store 4500] [--sessions 5] [--edits 50] [--servers ...]

Issue 11 asks that a target pygls cannot meet be written down with the measured floor
that proves it. This captures the ``publishDiagnostics`` memory-ls writes for a
keystroke on ``store`` (the whole server in this process, as :mod:`bench.message` runs
it, typing where the benchmark types), then runs the benchmark's own session
(:func:`bench.session.run_session`, the same client, typing and timing) against
memory-ls and against ``bench/peers/floor_publish.py`` serving those bytes, in rotated
rounds so that a shared machine's drift hits them alike:

- ``publish-floor``: asyncio and ``json`` only, no pygls: what any Python server pays to
  read the change and write this publish, and the client to read it;
- ``floor-pygls``: a pygls ``LanguageServer`` as shipped (its stdio reader thread);
- ``floor-pygls-loop``: the same, reading the pipe as memory-ls does (the event loop).

memory-ls's p50 minus ``publish-floor``'s is what memory-ls itself adds to a keystroke.
``--base CMD`` times another memory-ls (another checkout) in the same rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import shlex
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import servers, workload
from bench.servers import ServerSpec
from bench.session import (
    TYPED,
    SessionParams,
    SessionResult,
    _initialize_params,
    _typing_target,
    quantile,
    run_session,
)

FLOOR_STUB = servers.BENCH / "peers" / "floor_publish.py"
VARIANTS = {
    "publish-floor": [],
    "floor-pygls": ["--pygls"],
    "floor-pygls-loop": ["--pygls", "--loop-reader"],
}
"""The floor stub's ways of serving, by the name they are reported under."""


class _Recorder:
    """A writer that keeps the last message written (framed, as sent)."""

    def __init__(self) -> None:
        self.last = b""

    def write(self, data: bytes) -> None:
        self.last = data

    def close(self) -> None:
        pass


async def capture(store: str, typed: int = 25) -> bytes:
    """The body of the publish memory-ls writes for the ``typed``-th keystroke the
    benchmark types on ``store``, with the document's URI (wherever it appears) as
    ``@URI@`` and the version as ``@VERSION@``."""
    ws = workload.make_store_workspace(store)
    try:
        return await capture_in(ws, store, typed)
    finally:
        workload.remove_workspace(ws)


async def capture_in(
    ws: workload.Workspace, store: str, typed: int = 25, settle: float = 3.0
) -> bytes:
    """:func:`capture` on the workspace ``ws`` holding ``store`` (a name the session's
    initialize options depend on), ``settle`` seconds after the open (the ``similar``
    pass and the project look end)."""
    from memory_ls.server.server import create_server

    text = ws.store_path.read_text(encoding="utf-8")
    saved = dict(os.environ)
    os.environ.update(ws.env({}))
    try:
        ls = create_server()
        recorder = _Recorder()
        ls.protocol.set_writer(recorder)  # type: ignore[arg-type]
        protocol = ls.protocol

        def send(message: dict[str, Any]) -> None:
            body = json.dumps(message).encode()
            protocol.handle_message(json.loads(body, object_hook=protocol.structure_message))

        spec = servers.memory_ls()
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": _initialize_params(spec, ws, store),
            }
        )
        await asyncio.sleep(0.1)
        item = {"uri": ws.store_uri, "languageId": "markdown", "version": 0, "text": text}
        send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": item}})
        await asyncio.sleep(settle)
        line, column = _typing_target(text)
        for i in range(typed):
            at = {"line": line, "character": column + i}
            change = {"range": {"start": at, "end": at}, "text": TYPED[i % len(TYPED)]}
            params = {"textDocument": {"uri": ws.store_uri, "version": i + 1}}
            params["contentChanges"] = [change]
            send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": params})
            await asyncio.sleep(0.01)
        body = recorder.last.partition(b"\r\n\r\n")[2]
        head, marker, diagnostics = body.partition(b'"diagnostics": [')
        if not marker or b"publishDiagnostics" not in head:
            raise RuntimeError(f"the last message written was no publish: {body[:200]!r}")
        version = f'"version": {typed}'.encode()
        if version not in head:
            raise RuntimeError(f"the publish is not of version {typed}: {head!r}")
        template = head.replace(version, b'"version": @VERSION@') + marker + diagnostics
        return template.replace(json.dumps(ws.store_uri).encode(), b"@URI@")
    finally:
        os.environ.clear()
        os.environ.update(saved)


def floor_specs(canned: Path, names: list[str] | None = None) -> list[ServerSpec]:
    """The floor stub's servers, serving ``canned``."""
    python = servers.python_for_pygls()
    return [
        ServerSpec(
            name=name,
            argv=[python, str(FLOOR_STUB), str(canned), *flags],
            note="memory-ls's own publish of a keystroke on this store, served by a server "
            "that does nothing else (" + ("pygls" if flags else "asyncio, no pygls") + "): "
            "the floor of issue 11's edit target",
        )
        for name, flags in VARIANTS.items()
        if names is None or name in names
    ]


def _row(name: str, results: list[SessionResult]) -> str:
    edits = [e for r in results for e in r.edits]
    parses = [p for r in results for p in r.edit_parses]
    sizes = sorted(s for r in results for s in r.edit_sizes)
    counts = sorted(c for r in results for c in r.edit_counts)
    sessions = " / ".join(f"{(quantile(r.edits, 0.5) or 0) * 1000:.2f}" for r in results)

    def ms(value: float | None) -> str:
        return "–" if value is None else f"{value * 1000:.2f} ms"

    return (
        f"| {name} | {ms(quantile(edits, 0.5))} | {ms(quantile(edits, 0.95))} "
        f"| {ms(quantile(parses, 0.5))} | {counts[len(counts) // 2] if counts else '–'} "
        f"| {sizes[len(sizes) // 2] if sizes else '–'} | {sessions} |"
    )


async def amain(
    store: str, sessions: int, edits: int, names: list[str] | None, base: str | None = None
) -> int:
    from bench.run import byte_compile_checkout

    byte_compile_checkout()
    loads = [" ".join(f"{x:.2f}" for x in os.getloadavg())]
    with tempfile.TemporaryDirectory(prefix="memory-ls-floor-") as tmp:
        canned = Path(tmp) / "publish.json"
        canned.write_bytes(await capture(store, min(edits, 25)))
        specs = [servers.memory_ls(), *floor_specs(canned)]
        if base:  # another checkout's memory-ls, in the same rounds (an A/B comparison)
            mine = specs[0]
            specs.insert(
                1, dataclasses.replace(mine, name="memory-ls-base", argv=shlex.split(base))
            )
        specs = [s for s in specs if names is None or s.name in names]
        params = SessionParams(edits=edits, adds=0, checks_timeout=1.0)
        results: dict[str, list[SessionResult]] = {s.name: [] for s in specs}
        for number in range(1, sessions + 1):
            shift = (number - 1) % len(specs)
            for spec in specs[shift:] + specs[:shift]:
                ws = workload.make_store_workspace(store)
                started = time.perf_counter()
                try:
                    result = await run_session(spec, store, number, ws, params)
                finally:
                    workload.remove_workspace(ws)
                results[spec.name].append(result)
                p50 = quantile(result.edits, 0.5)
                print(
                    f"  #{number} {spec.name:<16} edit p50 "
                    f"{(p50 or 0) * 1000:.2f} ms ({time.perf_counter() - started:.1f} s)"
                    + (f"  ERROR {result.error}" if result.error else ""),
                    flush=True,
                )
    loads.append(" ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(
        f"\nstore {store}, {sessions} sessions x {edits} edits each, load {loads[0]} → {loads[1]}"
    )
    print(
        "| server | edit p50 | p95 | client parse p50 | diagnostics | bytes | session p50s (ms) |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, found in results.items():
        print(_row(name, found))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.floor", description=__doc__)
    parser.add_argument("--store", default="4500", choices=list(workload.STORES))
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--servers", help="subset, e.g. memory-ls,publish-floor")
    parser.add_argument(
        "--base",
        metavar="CMD",
        help="also time this memory-ls command line as memory-ls-base, e.g. "
        "'env PYTHONPATH=../base .venv/bin/memory-ls serve' (an A/B comparison)",
    )
    args = parser.parse_args(argv)
    names = args.servers.split(",") if args.servers else None
    return asyncio.run(amain(args.store, args.sessions, args.edits, names, args.base))


if __name__ == "__main__":
    raise SystemExit(main())
