"""Concurrent writers lose nothing, and a killed writer never tears the store (SPEC §3)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from memory_ls.core.notes import parse_notes
from tests.conftest import Workspace

WRITER = """
import sys
from pathlib import Path
from memory_ls.store.runtime import MemoryRuntime
rt = MemoryRuntime(Path(sys.argv[1]))
for i in range(int(sys.argv[3])):
    r = rt.run("add", {"text": f"{sys.argv[2]} note {i}"})
    assert "error" not in r, r
"""


def test_six_processes_times_thirty_adds_lose_nothing(workspace: Workspace) -> None:
    project = workspace.root
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(project), f"writer{w}", "30"],
            env=workspace.env(),
            stderr=subprocess.PIPE,
        )
        for w in range(6)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    store = project / ".pi" / "memory.md"
    notes = parse_notes(store.read_text(encoding="utf-8"))
    expected = {f"writer{w} note {i}" for w in range(6) for i in range(30)}
    assert set(notes) == expected
    assert len(notes) == len(expected)
    assert sorted(os.listdir(project / ".pi")) == ["memory.md"]


def test_cli_processes_in_parallel_lose_nothing(workspace: Workspace, tmp_path: Path) -> None:
    project = workspace.root

    def add(w: int) -> subprocess.CompletedProcess[str]:
        return workspace.cli(
            "add", "--project", str(project), f"cli {w}", cwd=tmp_path, timeout=120
        )

    with ThreadPoolExecutor(max_workers=12) as pool:  # twelve processes at once
        for r in pool.map(add, range(12)):
            assert r.returncode == 0, r.stderr
    notes = parse_notes((project / ".pi" / "memory.md").read_text())
    assert sorted(notes) == sorted(f"cli {w}" for w in range(12))


def test_sigkilled_writers_never_tear_the_store(workspace: Workspace, tmp_path: Path) -> None:
    project = workspace.root
    store = workspace.project_store
    rng = random.Random(1234)
    long_tail = "x" * 300  # big notes make a torn write more likely to be visible
    script = WRITER.replace(
        'f"{sys.argv[2]} note {i}"', f'f"{{sys.argv[2]}} note {{i}} {long_tail}"'
    )
    for round_ in range(8):
        p = subprocess.Popen(
            # 90 notes a round: eight rounds stay under the store's cap (~230 kB) even when
            # a writer finishes before it is killed (writes got fast enough to fill it).
            [sys.executable, "-c", script, str(project), f"r{round_}", "90"],
            env=workspace.env(),
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.15, 0.6))
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
        if not store.exists():
            continue
        data = store.read_bytes()
        text = data.decode("utf-8")  # raises if torn mid-character
        assert text.endswith("\n")
        for line in text.split("\n")[2:-1]:
            assert line.startswith("- r") and line.endswith(long_tail), line[:80]
    # The next writer cleans up what a killed one left behind.
    r = workspace.cli("add", "--project", str(project), "after the storm", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(project / ".pi")) == ["memory.md"]
