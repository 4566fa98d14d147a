"""``check FILE…`` reports each file once, whatever spellings name it (SPEC §8; docs/cli.md).

Two arguments are one file when they name one file on disk (device and inode, the last
component not followed: a symlink is a file of its own, refused as one) and the path
implies one context for it (the same store of the same project, or a lone file). The
first spelling's report is kept, in the arguments' order.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import Workspace, run_cli

DUPLICATE = ["same", "same"]


def reports(workspace: Workspace, *files: str, cwd: Path | None = None) -> list[str]:
    """The paths of ``check``'s reports, in order (one per file with a finding)."""
    r = workspace.cli("check", "--trusted", "--format", "json", *files, cwd=cwd)
    seen: list[str] = []
    for row in json.loads(r.stdout):
        if row["path"] not in seen:
            seen.append(row["path"])
    return seen


def summary(workspace: Workspace, *files: str, cwd: Path | None = None) -> str:
    return workspace.cli("check", "--trusted", *files, cwd=cwd).stderr


def test_two_spellings_of_the_project_store_are_one_report(workspace: Workspace) -> None:
    workspace.write("project", DUPLICATE)
    (workspace.root / "b").symlink_to(".", target_is_directory=True)  # a folder link to it
    first = ".pi/memory.md"
    for other in (
        "./.pi/../.pi/memory.md",
        str(workspace.project_store),
        "b/.pi/memory.md",
        "b/b/.pi/../.pi/memory.md",
    ):
        assert reports(workspace, first, other) == [first], other
        assert summary(workspace, first, other).startswith("1 files checked"), other
        assert reports(workspace, other, first) == [str(Path(other))], other  # the first kept


def test_the_first_spellings_order_is_kept(workspace: Workspace) -> None:
    workspace.write("project", DUPLICATE)
    workspace.write("global", DUPLICATE)
    lone = workspace.write(workspace.root / "notes.md", DUPLICATE)
    project, global_ = ".pi/memory.md", str(workspace.global_store)
    again = str(workspace.agent_dir / ".." / workspace.agent_dir.name / "memory.md")
    got = reports(workspace, "notes.md", global_, project, again, str(lone), "./.pi/memory.md")
    assert got == ["notes.md", global_, project]


def test_a_hard_link_is_one_file_only_in_one_context(workspace: Workspace) -> None:
    """A hard link of the project store elsewhere in the project is a lone file there (the
    file-only checks): a different check of the same bytes, so it keeps its own report; two
    hard-linked lone files are one file, one check."""
    store = workspace.write("project", DUPLICATE)
    os.link(store, workspace.root / "hard.md")
    os.link(store, workspace.root / "hard2.md")
    assert reports(workspace, ".pi/memory.md", "hard.md", "hard2.md") == [
        ".pi/memory.md",
        "hard.md",
    ]


def test_a_symlink_to_the_store_is_its_own_report(workspace: Workspace) -> None:
    """A symlink as the last component is not followed (a memory file is never a symlink):
    its report is its refusal, and dropping the store's findings for it (or it for them)
    would hide one of the two."""
    workspace.write("project", DUPLICATE)
    (workspace.root / "link.md").symlink_to(".pi/memory.md")
    r = workspace.cli("check", "--trusted", ".pi/memory.md", "link.md", "./link.md")
    assert r.stdout.splitlines() == [
        ".pi/memory.md:4:3: duplicate Duplicate of the note on line 3: same",
        "link.md:1:1: symlink The memory file is a symlink: memory-ls and Pi refuse to use it.",
    ]


def test_missing_files_and_loops_are_reported_once(workspace: Workspace) -> None:
    (workspace.root / "loop").symlink_to("loop")
    (workspace.root / "x").mkdir()
    r = workspace.cli("check", "gone.md", "./gone.md", "x/../gone.md", "loop", "./loop")
    assert r.returncode == 1
    assert r.stderr.count("Error: Cannot read") == 1, r.stderr
    assert r.stdout.splitlines() == [
        "loop:1:1: symlink The memory file is a symlink: memory-ls and Pi refuse to use it."
    ]
    assert r.stderr.endswith("2 files checked: 2 errors, 0 warnings, 0 other\n"), r.stderr


@pytest.fixture
def leading_to_the_agent_dir(workspace: Workspace) -> Workspace:
    """The project's ``.pi`` is a symlink to the agent dir, outside the project."""
    workspace.write("global", DUPLICATE)
    (workspace.root / ".pi").symlink_to(workspace.agent_dir)
    return workspace


def test_a_pi_leading_to_the_agent_dir_reports_the_refusal_and_the_global_store_once(
    leading_to_the_agent_dir: Workspace,
) -> None:
    """The project's store is refused (never read), and the file the link reaches is the
    global store: two reports, as ``check`` without FILE gives them, never the global
    store's findings twice or under the project's path."""
    w = leading_to_the_agent_dir
    store, global_ = f"{w.root}/.pi/memory.md", str(w.global_store)
    message = f"Refusing to use {w.root}/.pi: it resolves outside the project ({w.agent_dir})."
    expected = [
        f"{store}:1:1: outside-project {message}",
        f"{global_}:4:3: duplicate Duplicate of the note on line 3: same",
    ]
    r = w.cli("check", "--trusted")
    assert r.stdout.splitlines() == expected
    assert r.stderr == "2 files checked: 1 errors, 1 warnings, 0 other\n"
    for files in (
        [store, global_],
        [store, global_, store, global_],
        [store, global_, f"{w.agent_dir}/./memory.md", f"{w.root}/.pi/./memory.md"],
    ):
        r = w.cli("check", "--trusted", *files)
        assert r.stdout.splitlines() == expected, files
        assert r.stderr == "2 files checked: 1 errors, 1 warnings, 0 other\n", files


def test_dot_dot_after_a_link_is_where_the_kernel_takes_it(
    leading_to_the_agent_dir: Workspace, tmp_path: Path
) -> None:
    """``.pi/../.pi/memory.md`` with ``.pi`` a link inside the project is not the project
    store: the ``..`` leaves the folder the link leads to (as ``cat`` would read it). But
    a ``..`` inside a refused ``.pi`` never leads the path out of it to the project the
    link leads to: the path is judged in that ``.pi``, refused."""
    w = leading_to_the_agent_dir
    far = w.agent_dir / "x"
    (far / ".git").mkdir(parents=True)
    w.write(far / ".pi" / "memory.md", DUPLICATE)
    r = w.cli(
        "check",
        "--trusted",
        f"{w.root}/.pi/memory.md",
        f"{w.root}/.pi/../.pi/memory.md",
        f"{w.root}/.pi/x/../x/.pi/memory.md",
        f"{w.root}/.pi/x/.pi/memory.md",
    )
    assert r.stdout.count("outside-project") == 1, r.stdout
    assert "duplicate" not in r.stdout
    assert r.stderr == "1 files checked: 1 errors, 0 warnings, 0 other\n"
    (w.root / ".pi").unlink()
    (w.root / "inside" / "deep").mkdir(parents=True)
    (w.root / ".pi").symlink_to("inside/deep")  # inside the project: its store, through a link
    w.write(w.root / "inside" / "deep" / "memory.md", ["y"])
    w.write(w.root / "inside" / ".pi" / "memory.md", ["x", "x"])
    r = w.cli("check", "--trusted", ".pi/memory.md", ".pi/../.pi/memory.md")
    # The second is `inside/.pi/memory.md`: a `.pi/memory.md` below the root, not the store
    # (it was checked as the store, its text in the store's context).
    assert r.stdout.splitlines() == [
        ".pi/../.pi/memory.md:1:1: not-the-store This is not the project's memory store; "
        f"the agent reads {w.root}/inside/deep/memory.md",
        ".pi/../.pi/memory.md:4:3: duplicate Duplicate of the note on line 3: x",
    ]


def test_a_store_under_a_refused_pi_is_checked_as_that_refusal(
    workspace: Workspace, tmp_path: Path
) -> None:
    """``check <root>/.pi/x/.pi/memory.md`` where ``<root>/.pi`` leads out: the refusal of
    this project's ``.pi`` (as the editor and commands judge the path), never the store of
    the project out there, read and checked through the link."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "x" / ".git").mkdir(parents=True)
    workspace.write(elsewhere / "x" / ".pi" / "memory.md", DUPLICATE)
    (workspace.root / ".pi").symlink_to(elsewhere)
    message = (
        f"Refusing to use {workspace.root}/.pi: it resolves outside the project ({elsewhere})."
    )
    nested = f"{workspace.root}/.pi/x/.pi/memory.md"
    r = workspace.cli("check", "--trusted", nested, f"{workspace.root}/.pi/memory.md")
    assert r.stdout.splitlines() == [f"{nested}:1:1: outside-project {message}"]
    assert r.stderr == "1 files checked: 1 errors, 0 warnings, 0 other\n"


def test_an_agent_dir_named_pi_deeper_in_a_refused_pi_is_the_global_store(
    workspace: Workspace, tmp_path: Path
) -> None:
    """An agent dir ``<root>/.pi/x/.pi`` where ``<root>/.pi`` leads out: its store, named as
    the agent dir names it, is the global store (``list``, ``add`` and ``doctor`` use it).
    ``check`` of another project refused it as ``<root>``'s store and checked nothing in
    it, and ``check`` of that path did too."""
    other, elsewhere = tmp_path / "other", tmp_path / "elsewhere"
    (other / ".git").mkdir(parents=True)
    (elsewhere / "x" / ".pi").mkdir(parents=True)
    (workspace.root / ".pi").symlink_to(elsewhere)
    agent = workspace.root / ".pi" / "x" / ".pi"
    workspace.write(agent / "memory.md", DUPLICATE)
    env = {**workspace.env(), "PI_CODING_AGENT_DIR": str(agent)}
    listed = run_cli("list", cwd=other, env=env)
    assert "- same" in listed.stdout, listed.stderr
    r = run_cli("check", "--trusted", "--format", "json", cwd=other, env=env)
    assert [row["code"] for row in json.loads(r.stdout)] == ["duplicate"], r.stdout
    named = run_cli(
        "check", "--trusted", "--format", "json", str(agent / "memory.md"), cwd=other, env=env
    )
    codes = [row["code"] for row in json.loads(named.stdout)]
    assert "duplicate" in codes, named.stdout
    assert f"{workspace.root}/.pi: it resolves outside" not in named.stdout
