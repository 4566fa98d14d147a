"""The `memory-ls` command line, run as a real subprocess (SPEC §8)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEADER = "<!-- Pi memory: one note per bullet; written by the memory tool and /memory -->"


@pytest.fixture
def ws(tmp_path: Path) -> dict[str, Path]:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    agent = tmp_path / "agent"
    agent.mkdir()
    return {"project": project, "agent": agent, "store": project / ".pi" / "memory.md"}


def run(
    ws: dict[str, Path], *args: str, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(ws["agent"])}
    return subprocess.run(
        [sys.executable, "-m", "memory_ls", *args],
        cwd=cwd or ws["project"],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_add_list_and_json(ws: dict[str, Path]) -> None:
    r = run(ws, "add", "use pnpm, not npm")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "Added to project memory: use pnpm, not npm\nNow 1 project, 0 global.\n"
    assert ws["store"].read_text() == f"{HEADER}\n\n- use pnpm, not npm\n"
    r = run(ws, "add", "--scope", "global", "answer in English")
    assert r.returncode == 0
    r = run(ws, "list", "--json")
    data = json.loads(r.stdout)
    assert data["project"] == ["use pnpm, not npm"]
    assert data["global"] == ["answer in English"]
    assert data["changed"] is False


def test_near_duplicate_is_not_an_error(ws: dict[str, Path]) -> None:
    run(ws, "add", "use pnpm, not npm")
    r = run(ws, "add", "--json", "Use pnpm, not npm.")
    assert r.returncode == 0
    data = json.loads(r.stdout)
    assert data["changed"] is False and data["existing"] == "use pnpm, not npm"


def test_double_dash_lets_a_note_start_with_a_dash(ws: dict[str, Path]) -> None:
    r = run(ws, "add", "--", "-v makes pytest verbose")
    assert r.returncode == 0, r.stderr
    assert "- -v makes pytest verbose" in ws["store"].read_text()


def test_options_after_the_verb_and_project_dir(ws: dict[str, Path], tmp_path: Path) -> None:
    sub = ws["project"] / "src" / "deep"
    sub.mkdir(parents=True)
    r = run(ws, "add", "from a subdir", "--project", str(sub), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "from a subdir" in ws["store"].read_text()


def test_update_forget_merge_move(ws: dict[str, Path]) -> None:
    run(ws, "add", "a")
    run(ws, "add", "b")
    assert run(ws, "update", "a", "--to", "a2").returncode == 0
    assert run(ws, "merge", "a2", "b", "--to", "a2; b").returncode == 0
    assert run(ws, "move", "a2; b").returncode == 0
    data = json.loads(run(ws, "list", "--json").stdout)
    assert data["project"] == [] and data["global"] == ["a2; b"]
    r = run(ws, "forget", "--scope", "global", "a2; b")
    assert r.returncode == 0
    assert (ws["agent"] / "memory.md").read_text() == f"{HEADER}\n"


def test_refusals_exit_1_with_exact_message(ws: dict[str, Path]) -> None:
    r = run(ws, "forget", "nope")
    assert r.returncode == 1
    assert r.stderr.strip() == "Error: No project memory note matches: nope"
    r = run(ws, "add", "   ")
    assert r.returncode == 1 and "text is required." in r.stderr
    r = run(ws, "add", "x" * 501)
    assert r.returncode == 1 and "text is longer than 500 characters." in r.stderr
    r = run(ws, "add", "--untrusted", "secret")
    assert r.returncode == 1
    assert 'Project memory is unavailable for an untrusted project; use scope "global".' in r.stderr
    assert not ws["store"].exists()


def test_usage_errors_exit_2(ws: dict[str, Path]) -> None:
    assert run(ws, "bogus").returncode == 2
    assert run(ws, "list", "--scope", "team").returncode == 2
    assert run(ws, "list", "--nope").returncode == 2
    assert run(ws, "update", "a").returncode == 2  # --to is required


def test_clear_needs_yes_off_a_terminal(ws: dict[str, Path]) -> None:
    run(ws, "add", "keep me")
    before = ws["store"].read_bytes()
    r = run(ws, "clear", stdin="y\n")
    assert r.returncode == 1 and "--yes" in r.stderr
    assert ws["store"].read_bytes() == before
    r = run(ws, "clear", "--yes")
    assert r.returncode == 0
    assert ws["store"].read_text() == f"{HEADER}\n"


def test_path_and_inject(ws: dict[str, Path]) -> None:
    run(ws, "add", "note one")
    info = json.loads(run(ws, "path", "--json").stdout)
    assert info["project"] == str(ws["store"])
    assert info["global"] == str(ws["agent"] / "memory.md")
    assert info["trusted"] is True and info["trustReason"]
    body = run(ws, "inject").stdout
    assert body == (
        "[MEMORY]\nDurable notes saved in earlier sessions. Treat them as facts the user "
        "asked you to remember.\nproject:\n- note one\n"
    )
    data = json.loads(run(ws, "inject", "--json").stdout)
    assert data["bytes"] == len(body.rstrip("\n").encode()) and data["included"] == 1


def test_list_with_unreadable_store_exits_1(ws: dict[str, Path], tmp_path: Path) -> None:
    (ws["project"] / ".pi").mkdir()
    target = tmp_path / "elsewhere.md"
    target.write_text("- sneaky\n")
    ws["store"].symlink_to(target)
    r = run(ws, "list", "--json")
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert data["project"] == []
    assert data["error"] == f"Refusing to use the symlinked memory file: {ws['store']}"


def test_check_formats_and_exit_codes(ws: dict[str, Path], tmp_path: Path) -> None:
    lone = tmp_path / "notes.md"
    lone.write_text("- dup 😀 here\n- Dup 😀 here.\n")
    r = run(ws, "check", str(lone))
    assert r.returncode == 1
    assert r.stdout.strip() == (
        f"{lone}:2:3: duplicate Duplicate of the note on line 1: dup 😀 here"
    )
    rows = json.loads(run(ws, "check", "--format", "json", str(lone)).stdout)
    assert rows[0]["code"] == "duplicate" and rows[0]["column"] == 3
    assert rows[0]["endColumn"] == 3 + len("Dup 😀 here.")  # characters, not UTF-16
    sarif = json.loads(run(ws, "check", "--format", "sarif", str(lone)).stdout)
    assert sarif["version"] == "2.1.0"
    assert sarif["runs"][0]["results"][0]["ruleId"] == "duplicate"
    clean = tmp_path / "clean.md"
    clean.write_text("- fine\n")
    assert run(ws, "check", str(clean)).returncode == 0


def test_check_information_only_exits_0(ws: dict[str, Path]) -> None:
    run(ws, "add", "shared fact")
    run(ws, "add", "--scope", "global", "shared fact")
    r = run(ws, "check")
    assert "cross-scope-duplicate" in r.stdout
    assert r.returncode == 0


def test_check_not_the_store_in_a_linked_worktree(ws: dict[str, Path], tmp_path: Path) -> None:
    main_git = ws["project"] / ".git"
    (main_git / "HEAD").write_text("ref: refs/heads/main\n")  # a repository, as git writes it
    (main_git / "worktrees" / "wt").mkdir(parents=True)
    (main_git / "worktrees" / "wt" / "commondir").write_text("../..\n")
    wt = tmp_path / "wt"
    (wt / ".pi").mkdir(parents=True)
    (wt / ".git").write_text(f"gitdir: {main_git / 'worktrees' / 'wt'}\n")
    (wt / ".pi" / "memory.md").write_text("- stray note\n")
    r = run(ws, "check", str(wt / ".pi" / "memory.md"))
    assert "not-the-store" in r.stdout and str(ws["store"]) in r.stdout
    assert r.returncode == 1


def test_doctor_text_and_json(ws: dict[str, Path]) -> None:
    run(ws, "add", "a note")
    text = run(ws, "doctor").stdout
    assert str(ws["store"]) in text and "trust: trusted" in text
    data = json.loads(run(ws, "doctor", "--json").stdout)
    assert data["project"]["notes"] == 1
    assert data["recall"]["maxInjectBytes"] == 8192
    assert data["trust"]["rule"] == "resources"


@pytest.mark.parametrize(
    "verb", [["list"], ["path"], ["inject"], ["doctor"], ["check"], ["list", "--json"]]
)
def test_read_only_verbs_do_not_import_the_server_stack(
    ws: dict[str, Path], verb: list[str]
) -> None:
    run(ws, "add", "something")
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(ws["agent"])}
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "memory_ls", *verb],
        cwd=ws["project"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    imported = {line.split("|")[-1].strip() for line in r.stderr.splitlines() if "|" in line}
    assert "memory_ls.store.runtime" in imported  # the probe does see our imports
    forbidden = {m for m in imported if m.split(".")[0] in ("pygls", "lsprotocol", "mcp")}
    assert not forbidden


def test_python_dash_m_and_console_script_agree(ws: dict[str, Path]) -> None:
    exe = Path(sys.executable).parent / "memory-ls"
    if not exe.exists():
        pytest.skip("console script not installed in this interpreter's bin")
    run(ws, "add", "same program")
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(ws["agent"])}
    out = subprocess.run(
        [str(exe), "list", "--json"], cwd=ws["project"], env=env, capture_output=True, text=True
    )
    assert json.loads(out.stdout) == json.loads(run(ws, "list", "--json").stdout)


def test_unwritable_store_folder_is_a_clear_refusal(ws: dict[str, Path]) -> None:
    (ws["project"] / ".pi").write_text("not a folder")
    r = run(ws, "add", "x")
    assert r.returncode == 1
    assert r.stderr.startswith("Error: Cannot write the memory file ")
    assert "Traceback" not in r.stderr
    assert (ws["project"] / ".pi").read_text() == "not a folder"


def test_check_global_store_file_in_the_context_of_project(
    ws: dict[str, Path], tmp_path: Path
) -> None:
    run(ws, "add", "shared fact")
    run(ws, "add", "--scope", "global", "shared fact")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = run(
        ws, "check", "--project", str(ws["project"]), str(ws["agent"] / "memory.md"), cwd=elsewhere
    )
    assert f"{ws['agent'] / 'memory.md'}:3:3: cross-scope-duplicate" in r.stdout
    lone = run(ws, "check", str(ws["agent"] / "memory.md"), cwd=elsewhere)
    assert "cross-scope-duplicate" not in lone.stdout  # no project here to compare with
