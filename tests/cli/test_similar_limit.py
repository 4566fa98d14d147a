"""``memory-ls check`` on stores of near-identical notes: its ``similar`` hints are capped as
the editor's are (``SIMILAR_LIMIT`` pairs, the same pairs), and the pass stays small.

Before the cap, 10,000 near-identical notes (within the store cap) took ``check`` ~231 s
and 13.4 GB: every one of tens of millions of close pairs was built and scored.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from memory_ls.core.notes import parse_lines
from memory_ls.core.similar import (
    DEFAULT_THRESHOLD,
    SIMILAR_LIMIT,
    compared_keys,
    compared_notes,
    pair_findings,
    similar_pairs,
)
from memory_ls.core.text import split_text
from memory_ls.server.diagnostics import Analysis
from tests.conftest import Workspace


def similar_rows(workspace: Workspace) -> list[tuple[int, str]]:
    """``(line, message)`` of each ``similar`` hint ``check --format json`` reports."""
    done = workspace.cli("check", "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    rows = json.loads(done.stdout)
    return [(row["line"], row["message"]) for row in rows if row["code"] == "similar"]


def test_check_reports_the_editor_s_capped_hints(workspace: Workspace) -> None:
    # 300 near-identical notes: 44,850 close pairs. The editor keeps SIMILAR_LIMIT of them
    # (the first rows of the length order); `check` reports the hints of those pairs.
    notes = [f"run cache step {i:05d}" for i in range(300)]
    workspace.write("project", notes)
    bullets = parse_lines(split_text(workspace.text("project")).lines).bullets
    firsts = compared_notes([b for b in bullets if b.note])
    keys = compared_keys(firsts)
    assert len(similar_pairs(keys, DEFAULT_THRESHOLD)) > 20 * SIMILAR_LIMIT
    # The server's pairs, by key, as its pass after open finds them.
    index = {key: i for i, key in enumerate(keys)}
    served = Analysis.all_pairs(keys, DEFAULT_THRESHOLD)
    assert len(served) == SIMILAR_LIMIT
    pairs = sorted((index[a], index[b], score) for (a, b), score in served.items())
    pairs = [(min(i, j), max(i, j), score) for i, j, score in pairs]
    assert sorted(pairs) == similar_pairs(keys, DEFAULT_THRESHOLD, SIMILAR_LIMIT)
    expected = [(f.line + 1, f.message) for f in pair_findings(firsts, sorted(pairs))]
    uncapped = pair_findings(firsts, similar_pairs(keys, DEFAULT_THRESHOLD))
    assert expected != [(f.line + 1, f.message) for f in uncapped]  # the cap shows
    assert similar_rows(workspace) == expected


RSS_SCRIPT = textwrap.dedent(
    """
    import resource, subprocess, sys
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    done = subprocess.run(
        [sys.executable, "-m", "memory_ls", "check", "--format", "json"],
        capture_output=True, timeout=120,
    )
    print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    """
)


def test_check_of_10000_near_identical_notes_stays_small(workspace: Workspace) -> None:
    # The store of the report (230,000 bytes, under the store cap). The peak RSS of `check`
    # and its worker (every descendant, reaped): ~25 MB after the cap, 13.4 GB before.
    # (Run under a 3 GB address-space limit, so that a regression fails instead of
    # eating the machine.)
    workspace.write("project", "".join(f"- run cache step {i:05d}\n" for i in range(10_000)))
    assert workspace.project_store.stat().st_size < 256 * 1024
    done = subprocess.run(
        [sys.executable, "-c", RSS_SCRIPT],
        cwd=workspace.root,
        env=workspace.env(),
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    code, peak = (int(word) for word in done.stdout.split())
    assert code in (0, 1)
    # ru_maxrss is in kilobytes on Linux, bytes on macOS.
    peak_mb = peak / (1 << 20) if sys.platform == "darwin" else peak / 1024
    assert peak_mb < 200, f"check peaked at {peak_mb:.0f} MB"
