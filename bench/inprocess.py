"""What a keystroke costs memory-ls itself, without pygls or a transport.

    python -m bench.inprocess [--stores 4500,paraphrase,10000] [--memory] [--tree]

For each store: open the document (parse, analyse, encode the first publish), run the
full ``similar`` pass as the server's background thread does, then time 100 characters
typed at the end of the middle note (apply the change, bring the diagnostics up to
date, build the ``publishDiagnostics`` bytes) and 10 lines added and removed there.
Next to each figure: the diagnostics the publish carries. ``--memory`` also reports
what the open document's state holds (``tracemalloc``; it slows everything down, so
the times of that run are not comparable).

``--tree`` measures each store twice: as above, then in a real-sized project (issue 13:
3,000 files, a package.json with scripts, a Makefile, AGENTS.md and CLAUDE.md of ~100
lines) with ``stale-path``, ``stale-script`` and ``instruction-duplicate`` judged. The
look at the project runs in the server's background thread; its time is shown apart
(``look``), and ``open`` adds the publish that follows it on the event loop.

The difference between these figures and the benchmark's edit latency is what pygls,
the pipe and the client add (BENCH-NOTES: ~1.3-2.8 ms per message).

``--adds N`` measures ``memory.add`` instead: ``N`` notes added to each store through
the runtime, as the server's worker thread runs them (validation, trust, the lock, the
read under it, the atomic write with both fsyncs, the new view, the result with every
note), after ``gc.freeze()`` as ``serve`` does; CPU time of the thread (``sys`` time of
the fsyncs included) and wall time, p50. What the benchmark's round trip adds to it is
the request and the 270 KB answer through pygls and the pipe.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time
import tracemalloc

from bench import workload
from bench.session import TYPED, _typing_target


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[round(q * (len(ordered) - 1))]


def measure(store: str, memory: bool, tree: bool = False) -> str:
    text = workload.store_text(store)
    ws = workload.make_workspace(text)
    if tree:
        workload.add_project_tree(ws.root, workload.store_notes(store))
    os.environ["PI_CODING_AGENT_DIR"] = str(ws.agent_dir)
    try:
        from memory_ls.server.diagnostics import Analysis, DocState
        from memory_ls.server.documents import MemoryDocument, Span
        from memory_ls.server.publishing import publish_message
        from memory_ls.server.settings import Settings
        from memory_ls.server.workspace import Projects

        if memory:
            tracemalloc.start()
        projects = Projects()
        projects.configure(Settings(trusted=True, agent_dir=str(ws.agent_dir)), [ws.root])
        analysis = Analysis(projects)
        started = time.perf_counter()
        doc = MemoryDocument(ws.store_uri, ws.store_path, text, 0)
        projects.open(doc)
        info = projects.describe(ws.store_path)
        assert info is not None
        state = DocState(info)
        analysis.states[doc.uri] = state
        body = publish_message(doc.uri, 0, analysis.encoded(doc))
        opened = time.perf_counter() - started
        look = 0.0
        if tree:
            from memory_ls.server import project_watch

            key = analysis.files.key_of(info)
            assert key is not None
            texts = [doc.lines[b.line][b.start : b.end] for b in doc.note_bullets() if not b.blank]
            started = time.perf_counter()
            judge = project_watch.build_judge(key, texts, list(doc.key_lines), None)
            look = time.perf_counter() - started
            judge.ready = {doc.uri}
            analysis.files.entries[key] = project_watch._Entry(judge)
            started = time.perf_counter()
            body = publish_message(doc.uri, 0, analysis.encoded(doc))
            opened += time.perf_counter() - started
        on_open = len(json.loads(body)["params"]["diagnostics"])
        started = time.perf_counter()
        keys = analysis.similar_snapshot(doc)
        state.set_similar(analysis.all_pairs(keys, analysis.similar_threshold()))
        state.similar_ready = True
        similar = time.perf_counter() - started
        body = publish_message(doc.uri, 0, analysis.encoded(doc))
        count = len(json.loads(body)["params"]["diagnostics"])
        held = ""
        if memory:
            gc.collect()
            current, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            held = f"; state held {current / 1e6:.1f} MB (peak {peak / 1e6:.1f} MB)"
        line, column = _typing_target(text)
        typed: list[float] = []
        for i in range(110):
            started = time.perf_counter()
            doc.apply_change(
                Span(line, column + i, line, column + i), TYPED[i % len(TYPED)], "utf-16"
            )
            publish_message(doc.uri, i, analysis.encoded(doc))
            if i >= 10:  # the first few warm the caches
                typed.append(time.perf_counter() - started)
        analysis.similar_incremental(doc)
        analysis.encoded(doc)
        shifted: list[float] = []
        for i in range(10):
            end = len(doc.lines[line])
            started = time.perf_counter()
            doc.apply_change(Span(line, end, line, end), "\n", "utf-16")
            publish_message(doc.uri, i, analysis.encoded(doc))
            doc.apply_change(Span(line, end, line + 1, 0), "", "utf-16")
            publish_message(doc.uri, i, analysis.encoded(doc))
            shifted.append((time.perf_counter() - started) / 2)
        name = f"{store}+tree (look {look * 1000:.0f} ms, in a thread)" if tree else store
        return (
            f"| {name} | {opened * 1000:.1f} ms [{on_open}] | {similar * 1000:.0f} ms "
            f"| {quantile(typed, 0.5) * 1000:.2f} / {quantile(typed, 0.95) * 1000:.2f} ms "
            f"[{count}, {len(body) // 1024} KiB] | {quantile(shifted, 0.5) * 1000:.1f} ms "
            f"| {held.lstrip('; ') or '—'} |"
        )
    finally:
        workload.remove_workspace(ws)


def measure_adds(store: str, count: int) -> str:
    """``count`` adds to ``store`` through the runtime: thread CPU and wall p50."""
    from memory_ls.store.runtime import MemoryRuntime

    ws = workload.make_store_workspace(store)
    try:
        runtime = MemoryRuntime(ws.root, agent_dir=str(ws.agent_dir), trusted=True)
        runtime.list()
        gc.collect()
        gc.freeze()
        cpu, wall = [], []
        for i in range(count):
            argument = {"text": f"Bench note {i}: rotate the {TYPED.split()[i % 9]} key"}
            started, cpu_started = time.perf_counter(), time.thread_time()
            result = runtime.run("add", argument)
            cpu.append(time.thread_time() - cpu_started)
            wall.append(time.perf_counter() - started)
            if "error" in result:
                raise SystemExit(f"memory.add failed on {store}: {result['error']}")
        gc.unfreeze()
        return (
            f"| {store} | {count} | {quantile(cpu, 0.5) * 1e3:.2f} ms | "
            f"{quantile(wall, 0.5) * 1e3:.2f} ms | {quantile(wall, 0.95) * 1e3:.2f} ms |"
        )
    finally:
        workload.remove_workspace(ws)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", default="4500,paraphrase,10000")
    parser.add_argument("--memory", action="store_true", help="also trace the state's memory")
    parser.add_argument(
        "--tree", action="store_true", help="also each store in a real-sized project (issue 13)"
    )
    parser.add_argument(
        "--adds", type=int, default=0, help="time this many memory.add instead (the runtime)"
    )
    args = parser.parse_args(argv)
    if args.adds:
        print("| store | adds | CPU p50 | wall p50 | wall p95 |")
        print("|---|---|---|---|---|")
        for store in args.stores.split(","):
            print(measure_adds(store, args.adds), flush=True)
        return 0
    print(
        "| store | open [diagnostics] | similar pass | keystroke p50 / p95 [diagnostics, "
        "publish size] | line added or removed p50 | memory |"
    )
    print("|---|---|---|---|---|---|")
    for store in args.stores.split(","):
        print(measure(store, args.memory), flush=True)
        if args.tree:
            print(measure(store, args.memory, tree=True), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
