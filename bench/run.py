"""Run the whole benchmark and write the report.

    python -m bench.run [--quick] [--out FILE] [--json FILE] [--stores 100,4500]
                        [--servers memory-ls,rumdl] [--sessions N] [--no-floor]

For each store (100, 1,000 and 4,500 notes; 4,500 paraphrase-heavy notes; 10,000 short
notes; and, when asked for, ``4500tree``: the 4,500 store in a real-sized project, issue
13) the servers' sessions are interleaved (session 1 of every server, then session 2,
... with the order rotated each round), each
on a fresh copy of the store, so that drift on a shared machine hits every server alike.
Then the CLI verbs are timed on the same store.  The report has one table per store with
every figure and the ratio memory-ls / peer, then memory-ls on each tree scenario next to
the store it repeats (with the difference), then the memory-ls targets of issue 11.

On each store memory-ls runs on, ``publish-floor`` runs in the same rounds: memory-ls's
own publish of a keystroke on that store, captured in this process, served by a stub
that does nothing else (:mod:`bench.floor`). What memory-ls's edit latency is above it
is memory-ls's own; the floor is what no Python server publishing those diagnostics to
this client avoids (issue 11: a target that cannot be met is written down with it).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench import cli, servers, workload
from bench.session import SessionParams, SessionResult, median, quantile, run_session

DEFAULT_OUT = servers.BENCH / "out" / "report.md"


@dataclass
class Config:
    sessions: int
    params: SessionParams
    cli_runs: int
    stores: list[str]
    server_names: list[str] | None
    quick: bool
    floor: bool = True
    """Also time the publish floor (:mod:`bench.floor`) on each store memory-ls runs on."""


@dataclass
class Summary:
    """One server's figures on one store (sessions pooled)."""

    server: str
    cold_start: float | None
    cold_start_via_proxy: float | None
    open_diagnostics: float | None
    open_count: int | None
    similar: float | None
    similar_count: int | None
    checks: float | None
    checks_count: int | None
    edit_diagnostics: int | None
    """Median diagnostics per publish over the timed edits."""
    edit_p50: float | None
    edit_parse_p50: float | None
    """The client's own parse of the publish, p50: part of the edit's latency."""
    edit_bytes: int | None
    """Median bytes of an edit's publish."""
    edit_p95: float | None
    edit_max: float | None
    edit_count: int
    edit_timeouts: int
    unpublished: int
    add_p50: float | None
    add_p95: float | None
    add_errors: int
    peak_rss: int | None
    sync: str
    errors: list[str]


def summarise(name: str, results: list[SessionResult]) -> Summary:
    ok = [r for r in results if r.cold_start is not None]
    edits = [e for r in ok for e in r.edits]
    adds = [a for r in ok for a in r.adds]
    similar = [r.similar for r in ok if r.similar is not None]
    rss = [r.peak_rss for r in results if r.peak_rss]
    return Summary(
        server=name,
        cold_start=median([r.cold_start for r in ok if r.cold_start is not None]),
        cold_start_via_proxy=median(
            [r.cold_start_via_proxy for r in ok if r.cold_start_via_proxy is not None]
        ),
        open_diagnostics=median([r.open_diagnostics for r in ok if r.open_diagnostics is not None]),
        open_count=ok[0].open_diagnostic_count if ok else None,
        similar=median(similar),
        similar_count=next((r.similar_count for r in ok if r.similar_count is not None), None),
        checks=median([r.checks for r in ok if r.checks is not None]),
        checks_count=next((r.checks_count for r in ok if r.checks_count is not None), None),
        edit_diagnostics=_median_int([c for r in ok for c in r.edit_counts]),
        edit_p50=quantile(edits, 0.5),
        edit_parse_p50=quantile([p for r in ok for p in r.edit_parses], 0.5),
        edit_bytes=_median_int([b for r in ok for b in r.edit_sizes]),
        edit_p95=quantile(edits, 0.95),
        edit_max=max(edits) if edits else None,
        edit_count=len(edits),
        edit_timeouts=sum(r.edit_timeouts for r in results),
        unpublished=sum(r.unpublished_edits for r in results),
        add_p50=quantile(adds, 0.5),
        add_p95=quantile(adds, 0.95),
        add_errors=sum(len(r.add_errors) for r in results),
        peak_rss=max(rss) if rss else None,
        sync=f"{ok[0].mode}, {ok[0].sync}" if ok else "",
        errors=sorted({r.error for r in results if r.error}),
    )


def _median_int(values: list[int]) -> int | None:
    return int(statistics.median(values)) if values else None


# --- running ---------------------------------------------------------------------


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


async def run_store(
    store: str,
    specs: list[servers.ServerSpec],
    config: Config,
    also: str | None = None,
) -> dict[str, dict[str, list[SessionResult]]]:
    """Every server's sessions on ``store``, interleaved; with ``also`` (a
    :data:`workload.CHECKS_OFF` variant of ``store``), memory-ls's sessions on it too, in
    the same rounds, so that drift on a shared machine hits both alike. Results by store,
    then server."""
    runs = [(store, spec) for spec in specs]
    if also is not None:
        runs += [(also, spec) for spec in specs if spec.is_memory_ls]
    results: dict[str, dict[str, list[SessionResult]]] = {}
    for name, spec in runs:
        results.setdefault(name, {})[spec.name] = []
    broken: set[tuple[str, str]] = set()
    for number in range(1, config.sessions + 1):
        shift = (number - 1) % len(runs)
        for name, spec in runs[shift:] + runs[:shift]:
            if (name, spec.name) in broken:
                continue
            ws = workload.make_store_workspace(name)
            started = time.perf_counter()
            try:
                result = await run_session(spec, name, number, ws, config.params)
            finally:
                workload.remove_workspace(ws)
            results[name][spec.name].append(result)
            p50 = quantile(result.edits, 0.5)
            log(
                f"  {name:>8} #{number} {spec.name:<10} "
                f"start {_ms(result.cold_start)} open {_ms(result.open_diagnostics)} "
                f"edit p50 {_ms(p50)} ({time.perf_counter() - started:.1f} s)"
                + (f"  ERROR {result.error}" if result.error else "")
            )
            if result.cold_start is None:
                broken.add((name, spec.name))  # it did not even start: don't retry it here
    return results


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f} ms"


# --- report ----------------------------------------------------------------------


def _fmt_ms(value: float | None) -> str:
    if value is None:
        return "—"
    ms = value * 1000
    return f"{ms:.0f} ms" if ms >= 100 else f"{ms:.1f} ms"


def _fmt_mb(value: int | None) -> str:
    return "—" if value is None else f"{value / 1e6:.0f} MB"


def _ratio(mine: float | None, theirs: float | None) -> str:
    if mine is None or theirs is None or theirs <= 0:
        return "—"
    return f"{mine / theirs:.2f}×"


Row = tuple[
    str,
    Callable[[Summary], float | None],
    Callable[[float | None], str],
    Callable[[Summary], int | None] | None,
]
"""A figure: label, value, format, and the diagnostics per publish shown next to it."""

ROWS: list[Row] = [
    ("cold start (spawn → initialize)", lambda s: s.cold_start, _fmt_ms, None),
    ("cold start through its proxy", lambda s: s.cold_start_via_proxy, _fmt_ms, None),
    ("open → diagnostics", lambda s: s.open_diagnostics, _fmt_ms, lambda s: s.open_count),
    ("edit → diagnostics p50", lambda s: s.edit_p50, _fmt_ms, lambda s: s.edit_diagnostics),
    (
        "… of it, the client parsing the publish (p50)",
        lambda s: s.edit_parse_p50,
        _fmt_ms,
        None,
    ),
    (
        "publish per edit (median)",
        lambda s: None if s.edit_bytes is None else float(s.edit_bytes),
        lambda v: "—" if v is None else f"{v / 1000:.0f} kB",
        None,
    ),
    ("edit → diagnostics p95", lambda s: s.edit_p95, _fmt_ms, lambda s: s.edit_diagnostics),
    ("edit → diagnostics max", lambda s: s.edit_max, _fmt_ms, lambda s: s.edit_diagnostics),
    ("`similar` hints after open", lambda s: s.similar, _fmt_ms, lambda s: s.similar_count),
    (
        "§13 project findings after open",
        lambda s: s.checks,
        _fmt_ms,
        lambda s: s.checks_count,
    ),
    ("`memory.add` p50", lambda s: s.add_p50, _fmt_ms, None),
    ("`memory.add` p95", lambda s: s.add_p95, _fmt_ms, None),
    (
        "peak RSS (server tree)",
        lambda s: None if s.peak_rss is None else float(s.peak_rss),
        lambda v: _fmt_mb(None if v is None else int(v)),
        None,
    ),
]


def _cell(
    s: Summary,
    get: Callable[[Summary], float | None],
    fmt: Callable[[float | None], str],
    count: Callable[[Summary], int | None] | None,
) -> str:
    """A figure, with the number of diagnostics per publish it was measured on: latency
    without it says little (a publish of 1,500 diagnostics costs more than one of 10)."""
    text = fmt(get(s))
    n = count(s) if count is not None else None
    return text if n is None or text == "—" else f"{text} [{n}]"


def store_table(store: str, summaries: list[Summary]) -> list[str]:
    mine = next((s for s in summaries if s.server == "memory-ls"), None)
    peers = [s for s in summaries if s.server != "memory-ls"]
    names = [s.server for s in summaries]
    head = ["figure", *names] + ([f"memory-ls / {p.server}" for p in peers] if mine else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, get, fmt, count in ROWS:
        cells = [_cell(s, get, fmt, count) for s in summaries]
        if all(c == "—" for c in cells):
            continue
        ratios = [_ratio(get(mine), get(p)) for p in peers] if mine else []
        lines.append("| " + " | ".join([label, *cells, *ratios]) + " |")
    info: list[tuple[str, Callable[[Summary], str]]] = [
        ("diagnostics on open", lambda s: "—" if s.open_count is None else str(s.open_count)),
        (
            "edits measured / timed out / not published",
            lambda s: f"{s.edit_count} / {s.edit_timeouts} / {s.unpublished}",
        ),
        ("diagnostics mode, sync", lambda s: s.sync or "—"),
    ]
    for label, show in info:
        lines.append(
            "| "
            + " | ".join([label, *[show(s) for s in summaries]] + ["" for _ in peers if mine])
            + " |"
        )
    return lines


TreeRow = tuple[str, Callable[[Summary], float | None], Callable[[Summary], int | None] | None]

TREE_ROWS: list[TreeRow] = [
    ("open → diagnostics", lambda s: s.open_diagnostics, lambda s: s.open_count),
    ("§13 project findings after open", lambda s: s.checks, lambda s: s.checks_count),
    ("edit → diagnostics p50", lambda s: s.edit_p50, lambda s: s.edit_diagnostics),
    ("edit → diagnostics p95", lambda s: s.edit_p95, lambda s: s.edit_diagnostics),
    ("edit → diagnostics max", lambda s: s.edit_max, lambda s: s.edit_diagnostics),
    ("`memory.add` p50", lambda s: s.add_p50, None),
]


def _difference(base: float | None, tree: float | None) -> str:
    if base is None or tree is None:
        return "—"
    ms = (tree - base) * 1000
    return f"{ms:+.0f} ms" if abs(ms) >= 100 else f"{ms:+.1f} ms"


def tree_table(
    base: str,
    tree: str,
    summaries: dict[str, list[Summary]],
    cli_results: dict[str, list[cli.CliResult]],
) -> list[str]:
    """memory-ls on a tree scenario next to the store it repeats: each figure of both
    (with the diagnostics per publish), the difference and the ratio. Empty when either
    was not measured."""
    mine = {
        store: next((s for s in summaries.get(store, []) if s.server == "memory-ls"), None)
        for store in (base, tree)
    }
    b, t = mine[base], mine[tree]
    if b is None or t is None:
        return []
    lines = [
        f"| figure | {base} | {tree} | difference | {tree} / {base} |",
        "|---|---|---|---|---|",
    ]
    for label, get, count in TREE_ROWS:
        cells = [_cell(s, get, _fmt_ms, count) for s in (b, t)]
        if all(c == "—" for c in cells):
            continue
        lines.append(
            f"| {label} | {cells[0]} | {cells[1]} | {_difference(get(b), get(t))} "
            f"| {_ratio(get(t), get(b))} |"
        )
    check = [
        next((r.median for r in cli_results.get(store, []) if r.label == "memory-ls check"), None)
        for store in (base, tree)
    ]
    if any(c is not None for c in check):
        lines.append(
            f"| `memory-ls check` wall | {_fmt_ms(check[0])} | {_fmt_ms(check[1])} "
            f"| {_difference(check[0], check[1])} | {_ratio(check[1], check[0])} |"
        )
    return lines


def cli_table(results: list[cli.CliResult]) -> list[str]:
    lines = ["| command | median | best | runs | note |", "|---|---|---|---|---|"]
    for r in results:
        note = r.error or ("exit " + "/".join(sorted({str(c) for c in r.exit_codes})))
        lines.append(
            f"| `{r.label}` | {_fmt_ms(r.median)} | {_fmt_ms(r.best)} | {len(r.times)} | {note} |"
        )
    return lines


def targets_table(
    stores: list[str],
    summaries: dict[str, list[Summary]],
    cli_results: dict[str, list[cli.CliResult]],
) -> list[str]:
    """memory-ls against the targets of issue 11, on each store that was measured."""
    lines = ["| target | store | goal | measured | met |", "|---|---|---|---|---|"]

    def mine(store: str) -> Summary | None:
        return next((s for s in summaries.get(store, []) if s.server == "memory-ls"), None)

    def peer(store: str, name: str) -> Summary | None:
        return next((s for s in summaries.get(store, []) if s.server == name), None)

    def row(
        label: str,
        store: str,
        goal: str,
        value: float | None,
        limit: float | None,
        fmt: Callable[[float | None], str] = _fmt_ms,
        extra: str = "",
    ) -> None:
        if value is None and limit is None:
            return
        met = "—" if value is None or limit is None else ("yes" if value <= limit else "**no**")
        lines.append(f"| {label} | {store} | {goal} | {fmt(value)}{extra} | {met} |")

    def cli_median(store: str, label: str) -> float | None:
        return next((r.median for r in cli_results.get(store, []) if r.label == label), None)

    for store in ("4500", "paraphrase"):
        m = mine(store)
        if m is None:
            continue
        count = f" [{m.edit_diagnostics} diagnostics]" if m.edit_diagnostics is not None else ""
        rumdl = peer(store, "rumdl")
        ratio = f", {_ratio(m.edit_p50, rumdl.edit_p50)} rumdl" if rumdl else ""
        stub = peer(store, "publish-floor")
        floor = f"; publish floor {_fmt_ms(stub.edit_p50)}" if stub else ""
        row(
            "edit → diagnostics p50",
            store,
            "≤ 3 ms",
            m.edit_p50,
            0.003,
            extra=count + ratio + floor,
        )
        floor = f"; publish floor {_fmt_ms(stub.edit_p95)}" if stub else ""
        row("edit → diagnostics p95", store, "≤ 6 ms", m.edit_p95, 0.006, extra=count + floor)
        if store == "paraphrase":
            hints = m.similar_count
            row(
                "`similar` hints published",
                store,
                "≥ 700",
                None if hints is None else float(hints),
                None,
                lambda v: "—" if v is None else f"{v:.0f}",
            )
            if hints is not None:
                lines[-1] = lines[-1].replace("| — |", "| yes |" if hints >= 700 else "| **no** |")
    m = mine("4500")
    if m is not None:
        row("open → first diagnostics", "4500", "≤ 25 ms", m.open_diagnostics, 0.025)
        row("`similar` hints after open", "4500", "≤ 500 ms", m.similar, 0.5)
        row("`memory.add` p50", "4500", "≤ 8 ms", m.add_p50, 0.008)
        rss = float(m.peak_rss) if m.peak_rss else None
        row(
            "peak RSS",
            "4500",
            "≤ 60 MB",
            rss,
            60e6,
            lambda v: _fmt_mb(None if v is None else int(v)),
        )
        floor = cli_median("4500", cli.IMPORT_FLOOR)
        limit = None if floor is None else floor + 0.1
        goal = "≤ pygls+lsprotocol import + 100 ms" + (
            f" ({_fmt_ms(limit)})" if limit is not None else ""
        )
        row("cold start", "4500", goal, m.cold_start, limit)
    for store, verbs in (
        ("4500", (("inject", 0.06), ("list --json", 0.06), ("check", 0.15))),
        ("10000", (("check", 0.5),)),
    ):
        for verb, limit in verbs:
            value = cli_median(store, f"memory-ls {verb}")
            if value is not None:
                row(f"`{verb}` wall", store, f"≤ {limit * 1000:.0f} ms", value, limit)
    return lines


def machine() -> dict[str, str]:
    model = ""
    try:
        with open("/proc/cpuinfo") as fh:
            model = next(
                (line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), ""
            )
    except OSError:
        pass
    node = shutil.which("node")
    node_version = (
        subprocess.run(
            [node, "--version"], capture_output=True, text=True, check=False
        ).stdout.strip()
        if node
        else "none"
    )
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": str(len(os.sched_getaffinity(0))),
        "cpu": model,
        "os": platform.platform(),
        "python": platform.python_version(),
        "node": node_version,
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def render(
    config: Config,
    info: dict[str, str],
    specs: list[servers.ServerSpec],
    skipped: list[servers.ServerSpec],
    summaries: dict[str, list[Summary]],
    cli_results: dict[str, list[cli.CliResult]],
    elapsed: float,
    project_files: dict[str, int] | None = None,
) -> str:
    project_files = project_files or {}
    out = [
        "# memory-ls benchmark",
        "",
        f"{info['date']} · {info['cores']} cores ({info['cpu']}) · {info['os']} · "
        f"Python {info['python']} · Node {info['node']} · load average at start {info['load']}, at end {info.get('load_end', '?')} · "
        f"{config.sessions} session(s) per server per store, {config.params.edits} edits each"
        f"{' · --quick' if config.quick else ''} · took {elapsed:.0f} s",
        "",
        "Times are client-side wall clock. Ratios are memory-ls / peer in this run "
        "(below 1× means memory-ls is faster or smaller).",
        "",
        "Servers:",
        "",
    ]
    for spec in specs:
        out.append(
            f"- **{spec.name}**: `{' '.join(Path(a).name if '/' in a else a for a in spec.argv)}`"
            + (f" — {spec.note}" if spec.note else "")
        )
    for spec in skipped:
        out.append(f"- **{spec.name}**: skipped — {spec.missing}")
    for store in config.stores:
        text = workload.store_text(store)
        notes = sum(1 for line in text.split("\n") if line.startswith("- "))
        where = ""
        if store in workload.TREE_STORES:
            files = project_files.get(store)
            where = f", in a project of {files} files" if files is not None else ""
        out += ["", f"## Store {store}: {notes} notes, {len(text.encode())} bytes{where}", ""]
        out += store_table(store, summaries.get(store, []))
        errors = [f"- {s.server}: {e}" for s in summaries.get(store, []) for e in s.errors]
        if errors:
            out += ["", "Errors:", "", *errors]
        out += ["", "CLI (wall time, process spawn to exit):", ""]
        out += cli_table(cli_results.get(store, []))
    for tree, base in workload.TREE_STORES.items():
        off = workload.OFF_OF[tree]
        comparisons = [
            (
                off,
                f"## memory-ls in a real-sized project (issue 13): {tree} against {off}",
                f"{tree} is {base} with one note in a hundred running a script, in a project "
                "of source files, the paths the notes mention (but ~3%), a package.json, a "
                f"Makefile, AGENTS.md and CLAUDE.md. {off} is the same store in the same "
                "project with SPEC §13's four codes (stale-path, stale-script, "
                "instruction-duplicate, conflict) turned off: the difference is what those "
                "checks cost (the diagnostics each publish carried are in brackets). "
                f"`memory-ls check` has no severity setting, so it is timed on {tree} only.",
            ),
            (
                base,
                f"### {tree} against {base}",
                f"{base} is another store (no script notes, so fewer duplicates) in an empty "
                "project, with the checks that look at the project off: the difference "
                "also holds what the store's own notes add.",
            ),
        ]
        for against, heading, text in comparisons:
            table = tree_table(against, tree, summaries, cli_results)
            if table:
                out += ["", heading, "", text, "", *table]
    out += ["", "## memory-ls targets (issue 11)", ""]
    out += targets_table(config.stores, summaries, cli_results)
    return "\n".join(out) + "\n"


# --- main ------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> tuple[Config, Path, Path]:
    parser = argparse.ArgumentParser(
        prog="python -m bench.run", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="1 session, 20 edits, 3 CLI runs")
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="markdown report (%(default)s)"
    )
    parser.add_argument("--json", type=Path, help="raw results as JSON (default: next to --out)")
    parser.add_argument(
        "--stores",
        default=",".join(workload.STORE_SIZES),
        help=f"e.g. 100,4500 (default: every store; also {', '.join(workload.TREE_STORES)})",
    )
    parser.add_argument("--servers", help="subset, e.g. memory-ls,rumdl")
    parser.add_argument("--sessions", type=int, help="sessions per server per store (3)")
    parser.add_argument(
        "--no-floor",
        action="store_true",
        help="without the publish floor (memory-ls's own publish bytes served by a stub)",
    )
    args = parser.parse_args(argv)
    stores = [s for s in args.stores.split(",") if s]
    unknown = [s for s in stores if s not in workload.STORES]
    if unknown:
        parser.error(f"unknown store(s) {unknown}; choose from {list(workload.STORES)}")
    for off, tree in workload.CHECKS_OFF.items():
        if tree in stores and off not in stores:  # what the tree scenario is judged against
            stores.insert(stores.index(tree), off)
    if args.quick:
        params = SessionParams(edits=20, adds=10, similar_timeout=3.0)
        sessions, cli_runs = 1, 3
    else:
        params = SessionParams()
        sessions, cli_runs = 3, 7
    config = Config(
        sessions=args.sessions or sessions,
        params=params,
        cli_runs=cli_runs,
        stores=stores,
        server_names=args.servers.split(",") if args.servers else None,
        quick=args.quick,
        floor=not args.no_floor,
    )
    json_out = args.json or args.out.with_suffix(".json")
    return config, args.out, json_out


async def _floor(
    store: str, specs: list[servers.ServerSpec], config: Config, folder: Path
) -> list[servers.ServerSpec]:
    """The publish floor's server for ``store`` (:mod:`bench.floor`): memory-ls's own
    publish of a keystroke there, captured in this process, served by a stub that does
    nothing else. None when memory-ls is not measured, or the floor is not asked for."""
    if not config.floor or not any(s.is_memory_ls for s in specs):
        return []
    from bench import floor

    try:
        canned = await floor.capture(store, min(config.params.edits, 25))
    except Exception as exc:  # the floor is a reference: never the reason a run fails
        log(f"  no publish floor on {store}: {type(exc).__name__}: {exc}"[:300])
        return []
    path = folder / f"{store}.json"
    path.write_bytes(canned)
    return floor.floor_specs(path, ["publish-floor"])


def byte_compile_checkout() -> None:
    """Write the checkout's bytecode, as ``pip install`` does for an installed package.

    The checkout's venv is an editable install: a module whose ``.pyc`` is missing or
    older than its source is compiled at every start, and never written back when
    ``PYTHONDONTWRITEBYTECODE`` is set (as in some shells and CI images). Every
    ``serve`` and CLI run would then pay for compiling what the last edit touched.
    """
    import compileall

    compileall.compile_dir(str(Path(__file__).resolve().parent.parent / "memory_ls"), quiet=1)


async def amain(config: Config, out: Path, json_out: Path) -> int:
    started = time.perf_counter()
    byte_compile_checkout()
    info = machine()
    every = servers.all_servers()
    if config.server_names:
        every = [s for s in every if s.name in config.server_names]
    specs = [s for s in every if s.missing is None]
    skipped = [s for s in every if s.missing is not None]
    for spec in skipped:
        log(f"skipping {spec.name}: {spec.missing}")
    if not specs:
        log("no server to measure")
        return 1
    raw: dict[str, dict[str, list[SessionResult]]] = {}
    summaries: dict[str, list[Summary]] = {}
    cli_results: dict[str, list[cli.CliResult]] = {}
    project_files: dict[str, int] = {}
    floor_dir = Path(tempfile.mkdtemp(prefix="memory-ls-floor-"))
    shown = list(specs)
    for store in config.stores:
        if store in workload.CHECKS_OFF and workload.CHECKS_OFF[store] in config.stores:
            continue  # measured in the same rounds as the tree scenario it repeats
        off = workload.OFF_OF.get(store)
        also = off if off in config.stores else None
        store_specs = specs + await _floor(store, specs, config, floor_dir)
        shown += [s for s in store_specs if s.name not in {t.name for t in shown}]
        log(f"store {store}: {config.sessions} session(s) x {len(store_specs)} server(s)")
        for name, by_server in (await run_store(store, store_specs, config, also)).items():
            raw[name] = by_server
            summaries[name] = [summarise(spec, results) for spec, results in by_server.items()]
        if store in workload.CHECKS_OFF:
            continue  # the CLI has no severity setting: its figures are the tree scenario's
        ws = workload.make_store_workspace(store)
        try:
            if store in workload.TREE_STORES:
                project_files[store] = workload.project_files(ws.root)
            cli_results[store] = cli.time_store(ws, store, config.cli_runs)
        finally:
            workload.remove_workspace(ws)
    shutil.rmtree(floor_dir, ignore_errors=True)
    elapsed = time.perf_counter() - started
    info["load_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    report = render(config, info, shown, skipped, summaries, cli_results, elapsed, project_files)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report, encoding="utf-8")
    json_out.parent.mkdir(parents=True, exist_ok=True)
    json_out.write_text(
        json.dumps(
            {
                "machine": info,
                "sessions": {
                    st: {n: [r.to_json() for r in rs] for n, rs in by.items()}
                    for st, by in raw.items()
                },
                "cli": {st: [r.to_json() for r in rs] for st, rs in cli_results.items()},
                "skipped": {s.name: s.missing for s in skipped},
                "project_files": project_files,
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    print(report)
    log(f"report: {out}  raw: {json_out}  ({elapsed:.0f} s)")
    return 0


def main(argv: list[str] | None = None) -> int:
    config, out, json_out = parse_args(argv)
    return asyncio.run(amain(config, out, json_out))


if __name__ == "__main__":
    raise SystemExit(main())
