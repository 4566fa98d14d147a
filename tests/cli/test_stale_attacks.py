"""SPEC §13's checks against a hostile repository and a hostile store, through a real
``check`` / ``doctor`` process: what the attack on ``stale-path``, ``stale-script``,
``instruction-duplicate`` and ``conflict`` found (each test failed before its fix).

A cloned repository controls its Makefile, justfile, package.json, pnpm-workspace.yaml,
instruction files and its own ``.pi/memory.md``: none of them may make a verb hang, and
nothing in them may reach a terminal or a model unescaped.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from memory_ls.core.conflicts import MAX_CONFLICTS_PER_NOTE
from tests.conftest import Workspace, store_text

QUICK = 30.0
"""Seconds a verb may take on a hostile file (each took minutes or forever before)."""


def timed_check(ws: Workspace, *flags: str) -> list[dict[str, object]]:
    """``check --format json`` rows, failing the test when the process does not finish."""
    started = time.monotonic()
    try:
        r = ws.cli("check", "--trusted", "--format", "json", *flags, timeout=QUICK)
    except subprocess.TimeoutExpired:
        pytest.fail(f"check took over {QUICK:.0f} s")
    assert r.returncode in (0, 1), r.stderr
    assert time.monotonic() - started < QUICK
    rows: list[dict[str, object]] = json.loads(r.stdout)
    return rows


def scripts_flagged(rows: list[dict[str, object]]) -> set[str]:
    return {str(r["message"]).split("`")[1] for r in rows if r["code"] == "stale-script"}


# -- build files whose one long line made a regex backtrack ------------------------------


@pytest.mark.parametrize(
    ("name", "text"),
    [
        # A repeated group inside a repeated group: exponential in the run of "=".
        ("justfile", "build:\n    cargo build\na" + "=" * 80 + "\n"),
        # A lazy group before `\s*`: quadratic in a line without a colon (300 KB).
        ("justfile", "build:\n    cargo build\na" + " " * 300_000 + "x\n"),
        ("Makefile", "build:\n\tcc\na" + " " * 300_000 + "x\n"),
    ],
    ids=["justfile-equals", "justfile-spaces", "makefile-spaces"],
)
def test_a_hostile_build_file_line_is_read_in_linear_time(
    workspace: Workspace, name: str, text: str
) -> None:
    (workspace.root / name).write_text(text)
    tool = "just" if name == "justfile" else "make"
    workspace.write("project", store_text(f"Run `{tool} build` then `{tool} deploy`."))
    rows = timed_check(workspace)
    # Still read: the real recipe is found, the missing one flagged.
    assert scripts_flagged(rows) == {f"{tool} deploy"}


def test_a_hostile_pnpm_workspace_line_is_read_in_linear_time(workspace: Workspace) -> None:
    (workspace.root / "package.json").write_text('{"scripts": {"build": "vite"}}')
    (workspace.root / "apps" / "web").mkdir(parents=True)
    (workspace.root / "apps" / "web" / "package.json").write_text('{"scripts": {"dev": "x"}}')
    (workspace.root / "pnpm-workspace.yaml").write_text(
        "packages:\n  - 'apps/*'\n  - a" + " " * 300_000 + "'\n"
    )
    workspace.write("project", store_text("Run `pnpm run dev` and `pnpm run gone`."))
    assert scripts_flagged(timed_check(workspace)) == {"pnpm gone"}


# -- notes whose backticks made the mention readers quadratic ------------------------------


def test_a_note_of_unclosed_backticks_is_read_in_linear_time(workspace: Workspace) -> None:
    workspace.write("project", store_text("See `src/gone.py` " + "`" * 200_000))
    rows = timed_check(workspace)
    assert [r["code"] for r in rows if r["code"] == "stale-path"] == ["stale-path"]


def test_a_note_of_many_code_spans_is_read_in_linear_time(workspace: Workspace) -> None:
    (workspace.root / "package.json").write_text('{"scripts": {"build": "vite"}}')
    workspace.write("project", store_text("`a` npm " * 30_000 + "`npm run gone`"))
    assert scripts_flagged(timed_check(workspace)) == {"npm gone"}


# -- a store that disagrees with itself thousands of times ---------------------------------


def test_thousands_of_conflicting_notes_are_linear_work(workspace: Workspace) -> None:
    # 6,000 notes: 9 million conflicting pairs, minutes of work and gigabytes of findings
    # before each note's conflicts were capped.
    notes = ["Use pnpm." if i % 2 else "Never use pnpm." for i in range(6000)]
    workspace.write("project", store_text(*notes))
    rows = [r for r in timed_check(workspace) if r["code"] == "conflict"]
    assert {r["line"] for r in rows} == set(range(3, 6003))  # every note is flagged
    assert len(rows) == 6000 * MAX_CONFLICTS_PER_NOTE
    started = time.monotonic()
    r = workspace.cli("doctor", "--trusted", "--json", timeout=QUICK)
    assert r.returncode == 0 and time.monotonic() - started < QUICK, r.stderr
    assert "project: 6000 conflicting note(s)" in json.loads(r.stdout)["problems"]


def test_the_doctor_counts_notes_not_findings(workspace: Workspace) -> None:
    workspace.write(
        "project",
        store_text("See `src/a.py` and `src/b.py`.", "Use pnpm.", "Never use pnpm.", "No pnpm."),
    )
    (workspace.root / "src").mkdir()
    r = workspace.cli("doctor", "--trusted", "--json")
    assert r.returncode == 0, r.stderr
    problems = json.loads(r.stdout)["problems"]
    assert "project: 1 note(s) naming a path that does not exist" in problems  # not 2
    assert "project: 3 conflicting note(s)" in problems  # not 4 (line 4 conflicts twice)


# -- what a message quotes cannot forge or hide text ---------------------------------------


def test_messages_escape_controls_and_bidi_in_what_they_quote(workspace: Workspace) -> None:
    (workspace.root / "src").mkdir()
    # ESC c resets a terminal; U+202E reverses what follows it.
    (workspace.root / "AGENTS.md").write_text("- Keep every commit small and focused\u202e.\n")
    workspace.write(
        "project",
        store_text(
            "See `src/\x1bcx.py` first.",
            "Use pnpm\u202e.",
            "Never use pnpm\u202e.",
            "Keep every commit small and focused.",
        ),
    )
    r = workspace.cli("check", "--trusted")
    assert r.returncode == 1, r.stderr
    review = [x for x in r.stdout.splitlines() if " stale-path " in x or " conflict " in x]
    review += [x for x in r.stdout.splitlines() if " instruction-duplicate " in x]
    assert len(review) == 4, r.stdout
    assert "\x1b" not in r.stdout and "\u202e" not in r.stdout
    assert any("`src/\\x1bcx.py` does not exist" in x for x in review)
    assert any("about pnpm\\u202e: Never use pnpm\\u202e." in x for x in review)
    assert any("small and focused\\u202e." in x for x in review)
    doctor = workspace.cli("doctor", "--trusted")
    assert doctor.returncode == 0, doctor.stderr
    lines = [x for x in doctor.stdout.splitlines() if x.startswith("  line ")]
    assert len(lines) == 4 and not any("\x1b" in x or "\u202e" in x for x in lines)


# -- workspaces ---------------------------------------------------------------------------


def test_tens_of_thousands_of_workspace_globs_leave_the_scripts_unknown(
    workspace: Workspace,
) -> None:
    root = workspace.root
    globs = [f"p{i}*" for i in range(30_000)]
    (root / "package.json").write_text(json.dumps({"scripts": {"a": "b"}, "workspaces": globs}))
    (root / "pnpm-workspace.yaml").write_text(
        "packages:\n" + "".join(f"  - 'q{i}/*'\n" for i in range(30_000))
    )
    for i in range(2000):
        (root / "pk" / f"p{i}").mkdir(parents=True)
        (root / "pk" / f"p{i}" / "package.json").write_text('{"scripts": {"x": "y"}}')
    workspace.write("project", store_text("Run `npm run gone`."))
    # 60,000 globs against 2,000 folders: a minute of fnmatch. Too many to know the
    # scripts, so none is judged (precision first).
    assert scripts_flagged(timed_check(workspace)) == set()


def test_workspace_globs_never_reach_out_of_the_project(workspace: Workspace) -> None:
    root = workspace.root
    (root / "package.json").write_text(
        json.dumps({"scripts": {"a": "b"}, "workspaces": ["../..", "/etc", "**/**", "~/x"]})
    )
    (root / "apps" / "web").mkdir(parents=True)
    (root / "apps" / "web" / "package.json").write_text('{"scripts": {"dev": "vite"}}')
    workspace.write("project", store_text("Run `npm run dev` and `npm run passwd`."))
    # `**/**` finds apps/web; `../..` and `/etc` find nothing outside.
    assert scripts_flagged(timed_check(workspace)) == {"npm passwd"}
