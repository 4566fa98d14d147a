"""Review findings against SPEC §1-§6, §8, §9: each test failed before its fix."""

from __future__ import annotations

import json

from tests.conftest import Workspace

# -- check --format sarif ---------------------------------------------------------


def test_sarif_for_a_relative_file_path_does_not_crash(workspace: Workspace) -> None:
    """SPEC §8: ``check [FILE…] --format sarif``; a FILE is usually given relative."""
    (workspace.root / "notes.md").write_text("- a\n- a\n")
    r = workspace.cli("check", "--format", "sarif", "notes.md")
    assert r.returncode == 1, r.stderr
    sarif = json.loads(r.stdout)
    location = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "notes.md"
    assert location["region"]["startLine"] == 2


# -- clear ------------------------------------------------------------------------


def test_clear_without_yes_off_a_terminal_prints_a_json_result(workspace: Workspace) -> None:
    """SPEC §8: ``clear`` prints a MemoryResult with ``--json``; off a terminal it needs --yes."""
    workspace.write("project", "- a\n")
    r = workspace.cli("clear", "--json")
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert data["action"] == "clear" and data["changed"] is False
    assert data["project"] == ["a"]
    assert data["error"] == "clear needs --yes when not run on a terminal."
    assert workspace.read("project") == b"- a\n"


def test_clear_without_yes_in_text_mode_says_why_on_stderr(workspace: Workspace) -> None:
    workspace.write("project", "- a\n")
    r = workspace.cli("clear")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == "Error: clear needs --yes when not run on a terminal.\n"


def test_clear_of_an_untrusted_project_is_refused_before_asking(workspace: Workspace) -> None:
    """An untrusted project can never be cleared, so there is nothing to confirm."""
    workspace.write("project", "- a\n")
    r = workspace.cli("clear", "--untrusted", "--json")
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert data["error"] == (
        'Project memory is unavailable for an untrusted project; use scope "global".'
    )
    assert data["project"] == []
    assert workspace.read("project") == b"- a\n"


def test_clear_with_yes_still_works(workspace: Workspace) -> None:
    workspace.write("project", "# notes\n\n- a\n")
    r = workspace.cli("clear", "--yes", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["changed"] is True
    assert workspace.read("project") == b"# notes\n"


# -- list echoes its scope ----------------------------------------------------------


def test_list_result_carries_the_requested_scope(workspace: Workspace) -> None:
    rt = workspace.runtime()
    assert rt.run("list", {"scope": "global"})["scope"] == "global"
    assert rt.run("list", {})["scope"] == "project"
    r = workspace.cli("list", "--scope", "global", "--json")
    assert json.loads(r.stdout)["scope"] == "global"
