"""Review findings against SPEC §1-§6, §8, §9: each test failed before its fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from memory_ls.core.text import HEADER
from memory_ls.store.lint import lint_path, render_reports
from memory_ls.store.runtime import MemoryRuntime
from tests.conftest import Workspace


def cli(ws: Workspace, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(ws.agent_dir)}
    return subprocess.run(
        [sys.executable, "-m", "memory_ls", *args],
        cwd=cwd or ws.root,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


# -- check --format sarif ---------------------------------------------------------


def test_sarif_for_a_relative_file_path_does_not_crash(workspace: Workspace) -> None:
    """SPEC §8: ``check [FILE…] --format sarif``; a FILE is usually given relative."""
    (workspace.root / "notes.md").write_text("- a\n- a\n")
    r = cli(workspace, "check", "--format", "sarif", "notes.md")
    assert r.returncode == 1, r.stderr
    sarif = json.loads(r.stdout)
    location = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "notes.md"
    assert location["region"]["startLine"] == 2


def test_sarif_uri_is_a_file_uri_for_an_absolute_path(tmp_path: Path) -> None:
    lone = tmp_path / "a b.md"
    lone.write_text("- x\n- x\n")
    out, failing = render_reports([lint_path(lone, str(tmp_path / "agent"), True)], "sarif")
    uri = json.loads(out)["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert uri["artifactLocation"]["uri"] == lone.as_uri()
    assert failing


# -- clear ------------------------------------------------------------------------


def test_clear_without_yes_off_a_terminal_prints_a_json_result(workspace: Workspace) -> None:
    """SPEC §8: ``clear`` prints a MemoryResult with ``--json``; off a terminal it needs --yes."""
    workspace.write("project", "- a\n")
    r = cli(workspace, "clear", "--json")
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert data["action"] == "clear" and data["changed"] is False
    assert data["project"] == ["a"]
    assert data["error"] == "clear needs --yes when not run on a terminal."
    assert workspace.read("project") == b"- a\n"


def test_clear_without_yes_in_text_mode_says_why_on_stderr(workspace: Workspace) -> None:
    workspace.write("project", "- a\n")
    r = cli(workspace, "clear")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == "Error: clear needs --yes when not run on a terminal.\n"


def test_clear_of_an_untrusted_project_is_refused_before_asking(workspace: Workspace) -> None:
    """An untrusted project can never be cleared, so there is nothing to confirm."""
    workspace.write("project", "- a\n")
    r = cli(workspace, "clear", "--untrusted", "--json")
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert data["error"] == (
        'Project memory is unavailable for an untrusted project; use scope "global".'
    )
    assert data["project"] == []
    assert workspace.read("project") == b"- a\n"


def test_clear_with_yes_still_works(workspace: Workspace) -> None:
    workspace.write("project", "# notes\n\n- a\n")
    r = cli(workspace, "clear", "--yes", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["changed"] is True
    assert workspace.read("project") == b"# notes\n"


# -- list echoes its scope ----------------------------------------------------------


def test_list_result_carries_the_requested_scope(workspace: Workspace) -> None:
    rt = workspace.runtime()
    assert rt.run("list", {"scope": "global"})["scope"] == "global"
    assert rt.run("list", {})["scope"] == "project"
    r = cli(workspace, "list", "--scope", "global", "--json")
    assert json.loads(r.stdout)["scope"] == "global"


# -- move between two scopes that are one file -------------------------------------------


def test_move_when_both_scopes_are_one_file_keeps_the_note(workspace: Workspace) -> None:
    """SPEC §3 move: "the note is in both scopes, never in none"."""
    agent = workspace.root / ".pi"
    rt = MemoryRuntime(workspace.root, agent_dir=str(agent), trusted=True)
    rt.add("keep me")
    before = workspace.read("project")
    result = rt.move("keep me", "project")
    assert result["changed"] is False
    assert result["error"] == (
        "The project and global memory are the same file, so a note cannot move: "
        f"{workspace.project_store}"
    )
    assert workspace.read("project") == before == f"{HEADER}\n\n- keep me\n".encode()


def test_runtime_sees_trust_and_config_changes_between_calls(tmp_path: Path) -> None:
    """The runtime caches trust and config, but never past a change of their files."""
    from memory_ls.store.runtime import MemoryRuntime

    root = tmp_path / "p"
    (root / ".git").mkdir(parents=True)
    agent = tmp_path / "agent"
    agent.mkdir()
    rt = MemoryRuntime(root, agent_dir=str(agent))
    assert rt.trust().trusted and rt.config().max_inject_bytes == 8192
    (root / ".pi").mkdir()
    (root / ".pi" / "settings.json").write_text("{}")
    assert not rt.trust().trusted  # a trust-requiring resource appeared
    (agent / "trust.json").write_text(json.dumps({str(root.resolve()): True}))
    assert rt.trust().trusted and rt.trust().rule == "trust.json"
    (agent / "bytefly.json").write_text(json.dumps({"memory": {"maxInjectBytes": 1000}}))
    assert rt.config().max_inject_bytes == 1000
