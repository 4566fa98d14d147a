"""``check`` and the doctor report SPEC §13's codes on a real project, through a real CLI
process: ``stale-path``, ``stale-script``, ``instruction-duplicate`` and ``conflict``.

Hostile trees (a symlink loop, a FIFO where a build file should be, a 50 MB AGENTS.md, a
Makefile of binary junk) must neither hang nor crash either verb.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Workspace, store_text
from tests.stale_project import NOTES, project


def check_json(ws: Workspace, *flags: str) -> list[dict[str, object]]:
    r = ws.cli("check", "--trusted", "--format", "json", *flags)
    assert r.returncode == 1, r.stderr  # the same-scope conflict is a warning
    rows: list[dict[str, object]] = json.loads(r.stdout)
    return [row for row in rows if row["code"] != "similar"]


def by_code(rows: list[dict[str, object]], code: str) -> list[dict[str, object]]:
    return [r for r in rows if r["code"] == code]


def test_check_reports_each_code_on_its_line(workspace: Workspace) -> None:
    project(workspace)
    rows = [r for r in check_json(workspace) if str(r["path"]).endswith(".pi/memory.md")]
    found = sorted((r["line"], r["code"], r["severity"]) for r in rows)
    assert found == [
        (3, "stale-path", "information"),
        (4, "stale-script", "information"),
        (5, "instruction-duplicate", "information"),
        (6, "conflict", "warning"),
        (7, "conflict", "warning"),
        (8, "conflict", "information"),  # across scopes: Information, project note only
    ]
    (path,) = by_code(rows, "stale-path")
    # The range is the mention itself (what the edit fix will select).
    line = workspace.text("project").splitlines()[2]
    assert line[int(path["column"]) - 1 : int(path["endColumn"]) - 1] == "src/old_name.py"
    (script,) = by_code(rows, "stale-script")
    assert "gone" in str(script["message"])
    (dup,) = by_code(rows, "instruction-duplicate")
    assert "AGENTS.md line 3" in str(dup["message"])
    cross = [r for r in by_code(rows, "conflict") if r["line"] == 8]
    assert "global note" in str(cross[0]["message"])
    # The global store's own note is not flagged for a cross-scope conflict.
    assert not [r for r in check_json(workspace) if str(r["path"]).endswith("agent/memory.md")]


def test_renaming_back_clears_stale_path_and_defining_the_script_clears_stale_script(
    workspace: Workspace,
) -> None:
    project(workspace)
    (workspace.root / "src" / "old_name.py").write_text("")
    (workspace.root / "package.json").write_text('{"scripts": {"build": "b", "gone": "g"}}')
    codes = {r["code"] for r in check_json(workspace)}
    assert "stale-path" not in codes and "stale-script" not in codes
    assert "conflict" in codes


def test_global_store_against_the_users_instruction_files(workspace: Workspace) -> None:
    (workspace.home / ".claude").mkdir()
    (workspace.home / ".claude" / "CLAUDE.md").write_text("Prefer small functions.\n")
    workspace.write("global", store_text("Prefer small functions."))
    r = workspace.cli("check", "--trusted", "--format", "json")
    assert r.returncode == 0, r.stderr
    (row,) = [x for x in json.loads(r.stdout) if x["code"] == "instruction-duplicate"]
    assert str(row["path"]).endswith("agent/memory.md")
    assert ".claude/CLAUDE.md line 1" in str(row["message"])


def test_text_and_sarif(workspace: Workspace) -> None:
    project(workspace)
    text = workspace.cli("check", "--trusted")
    assert text.returncode == 1, text.stderr
    assert ".pi/memory.md:3:" in text.stdout and "stale-path `src/old_name.py`" in text.stdout
    sarif = workspace.cli("check", "--trusted", "--format", "sarif")
    assert sarif.returncode == 1, sarif.stderr
    run = json.loads(sarif.stdout)["runs"][0]
    rules = {r["id"]: r["defaultConfiguration"]["level"] for r in run["tool"]["driver"]["rules"]}
    assert rules["stale-path"] == rules["stale-script"] == "note"
    assert rules["instruction-duplicate"] == "note" and rules["conflict"] == "warning"
    levels = sorted(
        (r["locations"][0]["physicalLocation"]["region"]["startLine"], r["ruleId"], r["level"])
        for r in run["results"]
        if r["ruleId"] in rules and r["ruleId"] != "similar"
    )
    assert (8, "conflict", "note") in levels and (6, "conflict", "warning") in levels
    assert {r["ruleId"] for r in run["results"]} <= set(rules)


def test_doctor_text_and_json(workspace: Workspace) -> None:
    project(workspace)
    r = workspace.cli("doctor", "--trusted", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    rows = report["project"]["staleAndConflicts"]
    assert [(x["line"], x["code"]) for x in rows] == [
        (3, "stale-path"),
        (4, "stale-script"),
        (5, "instruction-duplicate"),
        (6, "conflict"),
        (7, "conflict"),
        (8, "conflict"),
    ]
    assert rows[-1]["severity"] == "information" and rows[-2]["severity"] == "warning"
    assert report["global"]["staleAndConflicts"] == []
    assert "project: 3 conflicting note(s)" in report["problems"]
    assert "project: 1 note(s) naming a path that does not exist" in report["problems"]
    text = workspace.cli("doctor", "--trusted")
    assert text.returncode == 0, text.stderr
    # Word for word what `check` says on that line.
    check = workspace.cli("check", "--trusted").stdout
    said = next(x for x in check.splitlines() if ":3:" in x and "stale-path" in x)
    assert f"  line 3: stale-path {said.split('stale-path ', 1)[1]}" in text.stdout
    assert "- project: 1 note(s) an instruction file already says" in text.stdout


def test_untrusted_project_leaks_no_note_text(workspace: Workspace) -> None:
    project(workspace)
    secrets = ["old_name", "gone", "small and focused", "pnpm for installs", "tabs for"]
    for flags in (["--untrusted"], ["--untrusted", "--json"]):
        r = workspace.cli("doctor", *flags)
        assert r.returncode == 0, r.stderr
        for s in secrets[:-1]:
            assert s not in r.stdout, (flags, s)
    report = json.loads(workspace.cli("doctor", "--untrusted", "--json").stdout)
    rows = report["project"]["staleAndConflicts"]
    assert len(rows) == 6
    assert {x["message"] for x in rows} == {"(text withheld: the project is untrusted)"}


def test_severity_setting_accepts_the_new_codes() -> None:
    from memory_ls.server.settings import parse_settings

    settings, problems = parse_settings(
        {"severity": {c: "off" for c in ("stale-path", "stale-script", "conflict")}}
    )
    assert problems == []
    assert settings.severity["conflict"] == "off"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_hostile_trees_never_hang_or_crash(workspace: Workspace) -> None:
    workspace.write("project", store_text(*NOTES, "Run `make gone` then `just gone`."))
    root = workspace.root
    (root / "loop").symlink_to(root, target_is_directory=True)  # a symlink loop
    (root / "deep").mkdir()
    (root / "deep" / "up").symlink_to("../deep", target_is_directory=True)
    (root / "GEMINI.md").symlink_to("GEMINI.md")  # a symlink to itself
    os.mkfifo(root / "package.json")  # a FIFO named package.json
    os.mkfifo(root / "justfile")
    with open(root / "AGENTS.md", "wb") as f:  # 50 MB
        f.write(b"- Keep commits small and focused.\n" * (50 * 1024 * 1024 // 34))
    (root / "Makefile").write_bytes(os.urandom(4096) + b"\0\xff\xfe build:\n\0")
    (root / ".claude").mkdir()
    os.mkfifo(root / ".claude" / "CLAUDE.md")
    for verb in (["check", "--trusted", "--format", "json"], ["doctor", "--trusted", "--json"]):
        try:
            r = workspace.cli(*verb, timeout=60)
        except subprocess.TimeoutExpired:  # pragma: no cover - the failure being tested
            pytest.fail(f"{verb[0]} hung on a hostile tree")
        assert r.returncode in (0, 1), r.stderr
        assert "Traceback" not in r.stderr
        json.loads(r.stdout)
    rows = json.loads(workspace.cli("check", "--trusted", "--format", "json").stdout)
    codes = {r["code"] for r in rows}
    # The 50 MB AGENTS.md is over the read limit: not compared, not half read.
    assert "instruction-duplicate" not in codes
    # No package.json could be read: package scripts are not judged.
    assert not [r for r in rows if r["code"] == "stale-script" and "pnpm" in str(r["message"])]
    assert "stale-path" in codes  # the walk still saw the tree


def test_symlinked_instruction_folder_out_of_the_project_is_not_read(
    workspace: Workspace, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "CLAUDE.md").write_text("- Keep commits small and focused.\n")
    (workspace.root / ".claude").symlink_to(outside, target_is_directory=True)
    workspace.write("project", store_text("Keep commits small and focused."))
    r = workspace.cli("check", "--trusted", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert not [x for x in json.loads(r.stdout) if x["code"] == "instruction-duplicate"]


def test_instruction_file_symlinked_inside_the_project_is_read(workspace: Workspace) -> None:
    (workspace.root / "docs").mkdir()
    (workspace.root / "docs" / "agents.md").write_text("- Keep commits small and focused.\n")
    (workspace.root / "AGENTS.md").symlink_to("docs/agents.md")
    (workspace.root / "CLAUDE.md").symlink_to("AGENTS.md")  # the same file: read once
    workspace.write("project", store_text("Keep commits small and focused."))
    r = workspace.cli("check", "--trusted", "--format", "json")
    assert r.returncode == 0, r.stderr
    (row,) = [x for x in json.loads(r.stdout) if x["code"] == "instruction-duplicate"]
    assert "AGENTS.md line 1" in str(row["message"])
