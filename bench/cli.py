"""Wall time of the memory-ls command-line verbs an agent calls before every run.

Each command runs once to warm the page cache (discarded), then ``runs`` times; the median
and the minimum are reported.  For scale the same table times a bare interpreter
(``python -c pass``, the floor of any Python CLI) and ``rumdl check`` on the same file.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.servers import PEERS, VENV_BIN, python_for_pygls
from bench.workload import Workspace

IMPORT_FLOOR = "pygls + lsprotocol import (floor)"
"""What any pygls server pays before it can answer ``initialize``."""


@dataclass
class CliResult:
    label: str
    store: str
    times: list[float] = field(default_factory=list)
    exit_codes: list[int] = field(default_factory=list)
    error: str | None = None
    is_memory_ls: bool = True

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.times else None

    @property
    def best(self) -> float | None:
        return min(self.times) if self.times else None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["median"] = self.median
        data["best"] = self.best
        return data


def cli_executable() -> Path:
    """The ``memory-ls`` timed: ``BENCH_MEMORY_LS_CLI`` when set (a normal, non-editable
    install, whose start-up issue 11's targets are about), else the checkout's venv's."""
    override = os.environ.get("BENCH_MEMORY_LS_CLI")
    return Path(override) if override else VENV_BIN / "memory-ls"


def floor_python() -> str:
    """The interpreter whose bare start is the CLI's floor: the one beside the timed
    ``memory-ls`` (its venv's ``site`` and ``.pth`` files included). With
    ``BENCH_MEMORY_LS_CLI``, that is the normal install's, not the checkout's: the
    checkout's editable install adds an import finder to every start (``python -c
    pass`` there: 88 million instructions against 38 in a normal install's venv)."""
    beside = cli_executable().parent / "python"
    return str(beside) if beside.exists() else python_for_pygls()


def commands(ws: Workspace) -> list[tuple[str, list[str], bool]]:
    """(label, argv, is_memory_ls) for every command timed on a store."""
    exe = str(cli_executable())
    common = ["--project", str(ws.root), "--agent-dir", str(ws.agent_dir)]
    found: list[tuple[str, list[str], bool]] = [
        ("memory-ls inject", [exe, "inject", *common], True),
        ("memory-ls list --json", [exe, "list", "--json", *common], True),
        ("memory-ls check", [exe, "check", *common], True),
        ("python -c pass (floor)", [floor_python(), "-c", "pass"], False),
        (
            IMPORT_FLOOR,
            [python_for_pygls(), "-c", "import lsprotocol.types, pygls.lsp.server"],
            False,
        ),
    ]
    rumdl = PEERS / "venv" / "bin" / "rumdl"
    if rumdl.exists():
        found.append(
            ("rumdl check (peer)", [str(rumdl), "check", "--no-config", str(ws.store_path)], False)
        )
    return found


def time_command(label: str, argv: list[str], ws: Workspace, store: str, runs: int) -> CliResult:
    result = CliResult(label=label, store=store)
    env = ws.env(dict(os.environ))
    for i in range(runs + 1):
        start = time.perf_counter()
        try:
            done = subprocess.run(
                argv, cwd=ws.root, env=env, capture_output=True, timeout=60, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            result.error = f"{type(exc).__name__}: {exc}"[:300]
            return result
        elapsed = time.perf_counter() - start
        # 0 = fine, 1 = findings (check) or a refused action; 2+ = usage error / crash.
        if done.returncode not in (0, 1) or (label.endswith("inject") and not done.stdout):
            tail = (done.stderr or done.stdout).decode(errors="replace").strip().splitlines()
            result.error = f"exit {done.returncode}: {tail[-1] if tail else 'no output'}"[:300]
            return result
        if i:  # the first run only warms caches
            result.times.append(elapsed)
            result.exit_codes.append(done.returncode)
    return result


def memory_ls_cli_missing() -> str | None:
    exe = cli_executable()
    if not exe.exists():
        return f"{exe} not found"
    if os.environ.get("BENCH_MEMORY_LS_CLI"):
        return None  # another install: the checkout's import probe says nothing of it
    probe = subprocess.run(
        [python_for_pygls(), "-c", "import memory_ls.cli"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        return "memory_ls.cli not importable yet"
    return None


def time_store(ws: Workspace, store: str, runs: int) -> list[CliResult]:
    missing = memory_ls_cli_missing()
    results: list[CliResult] = []
    for label, argv, is_memory_ls in commands(ws):
        if is_memory_ls and missing:
            results.append(CliResult(label=label, store=store, error=missing))
            continue
        item = time_command(label, argv, ws, store, runs)
        item.is_memory_ls = is_memory_ls
        results.append(item)
    return results
