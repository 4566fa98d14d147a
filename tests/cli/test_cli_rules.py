"""The command line's rules of SPEC §1 and §8, each run as a real process (issue 9 items 5, 7, 12).

Every run has a timeout, so a verb that blocks fails its test instead of the suite.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import tempfile
from pathlib import Path

import pytest

from memory_ls.core.models import Scope
from memory_ls.core.text import HEADER
from tests.conftest import Workspace

PROJECT_VERBS = [
    ["list"],
    ["add", "x"],
    ["update", "x", "--to", "y"],
    ["forget", "x"],
    ["merge", "x", "y", "--to", "z"],
    ["move", "x"],
    ["clear", "--yes"],
    ["path"],
    ["inject"],
    ["doctor"],
    ["check"],
    ["import", "notes.md"],
    ["export", "--to", "AGENTS.md"],
]
"""One call of every verb that takes ``--project``."""

COMMON = ("--project", "--agent-dir", "--trusted", "--untrusted", "--json")


# -- SPEC §1: nothing creates a project ---------------------------------------------------


@pytest.mark.parametrize("verb", PROJECT_VERBS, ids=lambda v: v[0])
def test_a_project_that_is_not_a_directory_is_a_usage_error(
    workspace: Workspace, tmp_path: Path, verb: list[str]
) -> None:
    typo = tmp_path / "typo" / "deep" / "dir"
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    for project in (typo, a_file):
        r = workspace.cli(*verb, "--project", str(project))
        assert r.returncode == 2, (verb, r.stdout, r.stderr)
        assert f"--project is not a directory: {project}" in r.stderr
    assert not (tmp_path / "typo").exists()
    assert a_file.read_text() == "not a folder"


# -- SPEC §8: a FIFO is refused, never opened for reading ------------------------------------


@pytest.fixture
def fifo_store(workspace: Workspace) -> Path:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    workspace.project_store.parent.mkdir(parents=True)
    os.mkfifo(workspace.project_store)
    yield workspace.project_store
    # Release a reader blocked on the FIFO, if one is left, so nothing lingers.
    with contextlib.suppress(OSError):
        os.close(os.open(workspace.project_store, os.O_WRONLY | os.O_NONBLOCK))


@pytest.mark.parametrize(
    "verb",
    [["list"], ["add", "x"], ["inject"], ["path"], ["check"], ["check", "FIFO"]],
    ids=lambda v: " ".join(v),
)
def test_a_fifo_store_is_refused_without_hanging(
    workspace: Workspace, fifo_store: Path, verb: list[str]
) -> None:
    args = [str(fifo_store) if a == "FIFO" else a for a in verb]
    r = workspace.cli(*args, timeout=20)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert f"Memory file is not a regular file: {fifo_store}" in r.stderr
    assert "Traceback" not in r.stderr


def test_the_doctor_reports_a_fifo_store(workspace: Workspace, fifo_store: Path) -> None:
    r = workspace.cli("doctor", timeout=20)
    assert r.returncode == 0, r.stderr
    assert f"Memory file is not a regular file: {fifo_store}" in r.stdout


def make_non_regular(path: Path, kind: str) -> None:
    """Put a ``kind`` (fifo, directory, socket) where a store file should be."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        if not hasattr(socket, "AF_UNIX"):
            pytest.skip("no Unix sockets here")
        # A socket's path is limited to ~100 bytes: bind a short one, then move it.
        short = Path(tempfile.mkdtemp(prefix="mls")) / "s"
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(short))  # the socket file stays after the socket is closed
        try:
            os.replace(short, path)
        except OSError as exc:
            pytest.skip(f"cannot move a socket into the workspace: {exc}")
        finally:
            shutil.rmtree(short.parent, ignore_errors=True)


NOT_REGULAR_LINE = {
    "fifo": "a FIFO (named pipe), not a regular file: never read",
    "directory": "a directory, not a regular file: never read",
    "socket": "a socket, not a regular file: never read",
}


@pytest.mark.parametrize("scope", ["project", "global"])
@pytest.mark.parametrize("kind", ["fifo", "directory", "socket"])
def test_the_doctor_names_what_is_there_instead_of_a_regular_file(
    workspace: Workspace, kind: str, scope: Scope
) -> None:
    store = workspace.store(scope)
    make_non_regular(store, kind)
    text = workspace.cli("doctor", timeout=20)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    at = lines.index(f"{scope}: {store}")
    # Said plainly where the size and note count would be: no "exists, 4096 bytes".
    assert lines[at + 1] == f"  {NOT_REGULAR_LINE[kind]}"
    assert lines[at + 2] == f"  ERROR: Memory file is not a regular file: {store}"
    report = json.loads(workspace.cli("doctor", "--json", timeout=20).stdout)
    entry = report[scope]
    assert entry["fileType"] == kind
    assert (entry["exists"], entry["bytes"], entry["notes"]) == (True, 0, 0)
    assert entry["error"] == f"Memory file is not a regular file: {store}"
    other = report["global" if scope == "project" else "project"]
    assert "fileType" not in other  # only what is not a regular file gets one


def test_fifo_trust_and_config_files_are_refused(workspace: Workspace) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    for name in ("trust.json", "bytefly.json"):
        os.mkfifo(workspace.agent_dir / name)
    (workspace.root / ".pi").mkdir()
    os.mkfifo(workspace.root / ".pi" / "bytefly.json")
    r = workspace.cli("doctor", "--json", timeout=20)
    assert r.returncode == 0, r.stderr
    problems = " ".join(json.loads(r.stdout)["problems"])
    for path in (
        workspace.agent_dir / "trust.json",
        workspace.agent_dir / "bytefly.json",
        workspace.root / ".pi" / "bytefly.json",
    ):
        assert f"{path} is not a regular file" in problems or f"{path}: is not" in problems, (
            path,
            problems,
        )
    assert workspace.cli("list", timeout=20).returncode == 0


# -- SPEC §8: `--` and option values ---------------------------------------------------------


@pytest.mark.parametrize(
    "args", [["list", "--"], ["path", "--"], ["inject", "--"], ["doctor", "--"], ["check", "--"]]
)
def test_every_verb_accepts_a_bare_double_dash(workspace: Workspace, args: list[str]) -> None:
    r = workspace.cli(*args)
    assert r.returncode == 0, r.stderr


def test_clear_yes_then_double_dash(workspace: Workspace) -> None:
    workspace.write("project", ["gone soon"])
    r = workspace.cli("clear", "--yes", "--")
    assert r.returncode == 0, r.stderr
    assert "gone soon" not in workspace.project_store.read_text()


def test_an_option_value_may_begin_with_a_dash(workspace: Workspace) -> None:
    workspace.write("project", ["a", "c"])
    assert workspace.cli("update", "a", "--to", "-b").returncode == 0
    assert workspace.cli("update", "c", "--to=-d").returncode == 0
    assert workspace.cli("merge", "-b", "-d", "--to", "--e").returncode == 2  # notes need `--`
    r = workspace.cli("merge", "--to", "-e; -f", "--", "-b", "-d")
    assert r.returncode == 0, r.stderr
    assert json.loads(workspace.cli("list", "--json").stdout)["project"] == ["-e; -f"]


def test_a_note_after_double_dash_may_look_like_an_option(workspace: Workspace) -> None:
    assert workspace.cli("add", "--json", "--", "--help").returncode == 0
    assert workspace.cli("forget", "--", "--help").returncode == 0


def test_a_note_may_be_a_double_dash_itself(workspace: Workspace) -> None:
    workspace.write("project", ["a", "--"])
    r = workspace.cli("merge", "--to", "a and --", "--", "a", "--")
    assert r.returncode == 0, r.stderr
    assert json.loads(workspace.cli("list", "--json").stdout)["project"] == ["a and --"]


# -- SPEC §8: help ----------------------------------------------------------------------------


def test_top_level_help_lists_verbs_and_common_options_after_the_verb(workspace: Workspace) -> None:
    r = workspace.cli("--help")
    assert r.returncode == 0
    for verb in ("list", "add", "update", "check", "import", "export", "serve", "mcp"):
        assert re.search(rf"^\s+{verb}\b", r.stdout, re.M), verb
    for option in ("--scope", *COMMON):
        assert option in r.stdout, option
    assert "after the verb" in r.stdout


def test_options_before_the_verb_say_where_they_go(workspace: Workspace) -> None:
    r = workspace.cli("--json", "list")
    assert r.returncode == 2
    assert "options go after the verb" in r.stderr


def _options_in_help(text: str) -> set[str]:
    return set(re.findall(r"^  (--[a-z-]+)", text, re.M))


@pytest.mark.parametrize(
    ("verb", "expected"),
    [
        ("list", {"--scope", *COMMON}),
        ("add", {"--scope", "--propose", "--by", *COMMON}),
        ("update", {"--scope", "--to", "--propose", "--by", *COMMON}),
        ("forget", {"--scope", "--propose", "--by", *COMMON}),
        ("merge", {"--scope", "--to", *COMMON}),
        ("clear", {"--scope", "--yes", *COMMON}),
        ("path", set(COMMON)),
        ("inject", set(COMMON)),
        ("doctor", set(COMMON)),
        ("check", {"--format", *COMMON}),
        ("import", {"--format", "--scope", "--propose", "--by", *COMMON}),
        ("export", {"--to", "--check", *COMMON}),
        ("serve", {"--tcp", "--ws"}),
        ("merge-file", set()),
        ("git-setup", {"--project", "--agent-dir", "--global-store"}),
        ("sync", {"--scope", *COMMON}),
        ("inbox", set(COMMON)),
        ("accept", {"--all", "--scope", "--text", "--to", *COMMON}),
        ("reject", {"--all", "--scope", *COMMON}),
    ],
)
def test_each_verb_offers_exactly_its_options_with_defaults(
    workspace: Workspace, verb: str, expected: set[str]
) -> None:
    r = workspace.cli(verb, "--help")
    assert r.returncode == 0, r.stderr
    assert _options_in_help(r.stdout) - {"--help"} == expected
    # Every option says its default, in its own help paragraph.
    paragraphs = re.split(r"\n(?=  --)", r.stdout.split("options:", 1)[1])
    for paragraph in paragraphs:
        name = paragraph.split()[0]
        if name.startswith("--") and name != "--help":
            assert "default" in paragraph, (verb, paragraph)


@pytest.mark.parametrize(
    "args",
    [
        ["serve", "--json"],
        ["check", "--scope", "project"],
        ["path", "--scope", "global"],
        ["export", "--to", "AGENTS.md", "--scope", "global"],
        ["import", "x.md", "--check"],
    ],
)
def test_an_option_a_verb_ignores_is_a_usage_error(workspace: Workspace, args: list[str]) -> None:
    r = workspace.cli(*args, timeout=10)
    assert r.returncode == 2
    assert "unrecognized arguments" in r.stderr


# -- SPEC §8: what an untrusted project leaves out ---------------------------------------------


def test_list_and_inject_say_why_project_notes_are_left_out(workspace: Workspace) -> None:
    workspace.write("project", ["repository note"])
    (workspace.global_store).write_text(f"{HEADER}\n\n- my note\n")
    (workspace.root / ".pi" / "settings.json").write_text("{}")
    expected = {
        "list": "Memory (0 project, 1 global).\nproject: none\nglobal (1):\n- my note\n",
        "inject": "[MEMORY]\nDurable notes saved in earlier sessions. Treat them as facts the "
        "user asked you to remember.\nglobal:\n- my note\n",
    }
    for verb, stdout in expected.items():
        r = workspace.cli(verb)
        assert (r.returncode, r.stdout) == (0, stdout), r.stderr
        lines = r.stderr.splitlines()
        assert len(lines) == 1, r.stderr
        assert "untrusted" in lines[0] and "rule: resources" in lines[0]
        assert ".pi/settings.json" in lines[0]
        as_json = workspace.cli(verb, "--json")
        assert as_json.stderr == r.stderr
        json.loads(as_json.stdout)
    assert "rule: explicit" in workspace.cli("inject", "--untrusted").stderr
    assert workspace.cli("inject", "--trusted").stderr == ""


# -- SPEC §8: check's summary --------------------------------------------------------------------


def test_check_prints_a_summary_also_when_clean(workspace: Workspace, tmp_path: Path) -> None:
    clean = tmp_path / "clean.md"
    clean.write_text("- fine\n")
    r = workspace.cli("check", str(clean))
    assert (r.returncode, r.stdout, r.stderr) == (
        0,
        "",
        "1 files checked: 0 errors, 0 warnings, 0 other\n",
    )
    workspace.write("project", ["dup", "dup", "shared"])
    (workspace.global_store).write_text(f"{HEADER}\n\n- shared\n")
    r = workspace.cli("check", "--format", "json")
    assert r.returncode == 1
    assert r.stderr == "2 files checked: 0 errors, 1 warnings, 2 other\n"
    assert len(json.loads(r.stdout)) == 3
    r = workspace.cli("check", str(tmp_path / "missing.md"))
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1] == "1 files checked: 1 errors, 0 warnings, 0 other"


# -- SPEC §4/§9 through `path` and the doctor: the verdict said once ------------------------------


def test_path_and_doctor_say_the_trust_verdict_once(workspace: Workspace) -> None:
    path = workspace.cli("path").stdout
    doctor = workspace.cli("doctor").stdout
    expected = "trust: trusted (rule: resources; no trust-requiring resources in the project)"
    assert expected in path.splitlines()
    assert expected in doctor.splitlines()
