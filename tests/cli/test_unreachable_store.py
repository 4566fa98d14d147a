"""A store that cannot be reached because of its path, through a real CLI process (SPEC §8,
§9): an agent dir or a project's ``.pi`` that is a symlink loop (or a chain of 1,100
links), a file, or a symlink to nothing. ``check`` reported "0 files checked" and exited 0, as if the store were simply not
there, so CI passed; the doctor showed it as "missing (reads as empty)". A store that is
simply not there yet stays fine."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import Workspace, run_cli

BROKEN = ["a symlink loop", "a long chain", "a file", "a symlink to nothing"]
CASES = [
    (scope, how)
    for scope in ("global", "project")
    for how in BROKEN
    # (A looping or chained `.pi` is refused for it, `outside-project`:
    # test_loops_and_hard_links.py.)
    if (scope, how) not in (("project", "a symlink loop"), ("project", "a long chain"))
]


def break_folder(folder: Path, how: str) -> str:
    """Make ``folder`` (the agent dir or a ``.pi``) unreachable; what the messages say of it."""
    if folder.is_dir():
        shutil.rmtree(folder)
    if how == "a symlink loop":
        folder.symlink_to(folder.name)
        return f"{folder} is a symlink that leads back to itself"
    if how == "a long chain":  # more links than Python 3.11's realpath could follow
        (folder.parent / f"{folder.name}-real").mkdir()
        before = f"{folder.name}-real"
        for i in range(1099):
            (folder.parent / f"{folder.name}-link{i}").symlink_to(before)
            before = f"{folder.name}-link{i}"
        folder.symlink_to(before)
        return f"{folder} is a chain of more symlinks than the system follows"
    if how == "a file":
        folder.write_text("not a folder\n")
        return f"{folder} is not a directory"
    folder.symlink_to(folder.parent / "nowhere")
    return f"{folder} is a symlink to nothing (a dangling link)"


def broken_store(workspace: Workspace, scope: str, how: str) -> tuple[Path, str]:
    """Break ``scope``'s folder, the other store holding a note; the store and its message."""
    if scope == "global":
        workspace.write("project", ["a project note"])
        why = break_folder(workspace.agent_dir, how)
        store = workspace.global_store
    else:
        workspace.write("global", ["a global note"])
        why = break_folder(workspace.root / ".pi", how)
        store = workspace.project_store
    return store, f"Cannot read {store}: {why}"


@pytest.mark.parametrize(("scope", "how"), CASES)
def test_check_fails_naming_why(workspace: Workspace, scope: str, how: str) -> None:
    store, message = broken_store(workspace, scope, how)
    r = workspace.cli("check", "--trusted")
    assert r.returncode == 1, r.stderr
    assert r.stdout == ""
    assert r.stderr.splitlines() == [
        f"Error: {message}",
        "2 files checked: 1 errors, 0 warnings, 0 other",
    ]
    r = workspace.cli("check", "--trusted", "--json")
    assert r.returncode == 1, r.stderr
    assert json.loads(r.stdout) == [
        {
            "path": str(store),
            "line": 1,
            "column": 1,
            "endLine": 1,
            "endColumn": 1,
            "code": "unreadable",
            "severity": "error",
            "message": message,
        }
    ]
    r = workspace.cli("check", "--trusted", "--format", "sarif")
    assert r.returncode == 1
    (run,) = json.loads(r.stdout)["runs"]
    assert [(x["ruleId"], x["level"], x["message"]["text"]) for x in run["results"]] == [
        ("unreadable", "error", message)
    ]
    assert "unreadable" in {rule["id"] for rule in run["tool"]["driver"]["rules"]}


@pytest.mark.parametrize("how", BROKEN)
def test_check_of_the_store_file_names_why(workspace: Workspace, how: str) -> None:
    """``check <agent>/memory.md``: the bare 'Too many levels of symbolic links' or 'Not a
    directory' named no culprit."""
    store, message = broken_store(workspace, "global", how)
    r = workspace.cli("check", "--trusted", "--json", str(store))
    assert r.returncode == 1
    assert [row["message"] for row in json.loads(r.stdout)] == [message]
    assert f"Error: {message}" in r.stderr.splitlines()


@pytest.mark.parametrize(("scope", "how"), CASES)
def test_the_doctor_says_the_store_cannot_be_read(
    workspace: Workspace, scope: str, how: str
) -> None:
    store, message = broken_store(workspace, scope, how)
    why = message.removeprefix(f"Cannot read {store}: ")
    text = workspace.cli("doctor", "--trusted").stdout
    lines = text.splitlines()
    at = lines.index(f"{scope}: {store}")
    assert lines[at + 1] == f"  cannot be read: {why}"
    assert "missing (reads as empty)" not in text
    assert f"- {scope}: {message}" in lines  # and among the problems, whole
    report = json.loads(workspace.cli("doctor", "--trusted", "--json").stdout)
    assert (report[scope]["exists"], report[scope]["error"]) == (False, message)
    assert f"{scope}: {message}" in report["problems"]


def test_a_store_simply_not_there_is_fine(workspace: Workspace, tmp_path: Path) -> None:
    """No agent dir at all (nor its parent), and no ``.pi``: nothing to check, exit 0."""
    shutil.rmtree(workspace.agent_dir)
    env = {**workspace.env(), "PI_CODING_AGENT_DIR": str(tmp_path / "no" / "agent")}
    r = run_cli("check", "--trusted", "--json", cwd=workspace.root, env=env)
    assert (r.returncode, json.loads(r.stdout)) == (0, [])
    assert r.stderr == "0 files checked: 0 errors, 0 warnings, 0 other\n"
    text = run_cli("doctor", "--trusted", cwd=workspace.root, env=env).stdout
    assert text.count("missing (reads as empty)") == 2
    assert "cannot be read" not in text


@pytest.mark.parametrize("how", BROKEN)
@pytest.mark.parametrize(
    "verb",
    [
        ["clear", "--yes"],
        ["forget", "a global note"],
        ["update", "a global note", "--to", "another"],
        ["merge", "a global note", "another", "--to", "both"],
    ],
)
def test_a_change_that_writes_nothing_says_the_store_cannot_be_read(
    workspace: Workspace, how: str, verb: list[str]
) -> None:
    """A clear, forget, update or merge of an unreachable global store is refused with
    why, not "has no notes to clear" (exit 0) or "no note matches": it could not look
    (a file where the folder should be was already refused as a write that failed)."""
    store, message = broken_store(workspace, "global", how)
    done = workspace.cli(*verb, "--scope", "global")
    assert done.returncode == 1, done.stdout + done.stderr
    if how == "a file":
        assert done.stderr.startswith(f"Error: Cannot write the memory file {store}: ")
        message = message.split(": ", 1)[1]
    assert message in done.stderr
    assert "no notes to clear" not in done.stdout + done.stderr
    assert "matches" not in done.stderr
    assert not store.exists() and not store.is_symlink()
