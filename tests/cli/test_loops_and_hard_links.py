"""A ``.pi`` (or agent dir) that is a symlink loop, and a store that is a hard link, through
a real CLI process (SPEC §1, §3): every verb says what is wrong, and nothing is split."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Workspace, run_cli, store_text


def loop_message(root: Path) -> str:
    return (
        f"Refusing to use {root}/.pi: it is a symlink that leads round in a loop, "
        "never to a folder."
    )


def make_loop(root: Path, shape: str) -> None:
    if shape == "self":
        (root / ".pi").symlink_to(".pi")
    elif shape == "two links":
        (root / ".pi").symlink_to(".pj")
        (root / ".pj").symlink_to(".pi")
    else:
        (root / ".pi").symlink_to("a")
        (root / "a").symlink_to("a")


@pytest.mark.parametrize("shape", ["self", "two links", "into a loop"])
def test_every_verb_names_the_loop(workspace: Workspace, shape: str) -> None:
    make_loop(workspace.root, shape)
    workspace.write("global", ["global note"])
    message = loop_message(workspace.root)
    for args in (
        ["add", "planted"],
        ["forget", "global note"],
        ["move", "--scope", "global", "global note"],
        ["clear", "--yes"],
        ["add", "--propose", "proposed"],
    ):
        r = workspace.cli(*args, "--trusted", "--json")
        assert r.returncode == 1, args
        data = json.loads(r.stdout)
        assert data["error"] == message, args
        assert (data["project"], data["global"]) == ([], ["global note"]), args
    r = workspace.cli("add", "--trusted", "planted")
    assert (r.returncode, r.stdout, r.stderr) == (1, "", f"Error: {message}\n")
    r = workspace.cli("inject", "--trusted")
    assert r.returncode == 1 and f"Error: {message}" in r.stderr
    assert r.stdout.count("- global note") == 1
    report = json.loads(workspace.cli("doctor", "--trusted", "--json").stdout)
    assert f"project: {message}" in report["problems"]
    assert report["project"]["refused"] == message
    r = workspace.cli("check", "--trusted")
    store = f"{workspace.root}/.pi/memory.md"
    assert r.stdout.splitlines() == [f"{store}:1:1: outside-project {message}"]
    r = workspace.cli("check", "--trusted", store)
    assert r.stdout.splitlines() == [f"{store}:1:1: outside-project {message}"]
    r = workspace.cli("add", "--scope", "global", "another global note")
    assert r.returncode == 0, r.stderr  # the global scope is not concerned
    assert "resolves outside" not in workspace.cli("list", "--trusted").stderr


def test_a_store_that_is_a_self_loop_is_a_symlinked_store(workspace: Workspace) -> None:
    """``.pi/memory.md -> memory.md``: the store path is a symlink, refused with SPEC §1's
    exact words (dangling or not, a loop or not)."""
    (workspace.root / ".pi").mkdir()
    workspace.project_store.symlink_to("memory.md")
    message = f"Refusing to use the symlinked memory file: {workspace.project_store}"
    r = workspace.cli("add", "--trusted", "x")
    assert (r.returncode, r.stderr) == (1, f"Error: {message}\n")
    r = workspace.cli("check", "--trusted")
    assert r.returncode == 1
    assert r.stdout.startswith(f"{workspace.project_store}:1:1: symlink ")


@pytest.mark.parametrize("shape", ["self", "two links"])
def test_an_agent_dir_that_loops_is_named(workspace: Workspace, tmp_path: Path, shape: str) -> None:
    agent = tmp_path / "looping-agent"
    if shape == "self":
        agent.symlink_to(agent.name)
    else:
        agent.symlink_to("other-agent")
        (tmp_path / "other-agent").symlink_to(agent.name)
    env = {**workspace.env(), "PI_CODING_AGENT_DIR": str(agent)}
    why = f"{agent} is a symlink that leads back to itself"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, cwd=workspace.root, env=env)

    r = run("add", "--scope", "global", "x")
    assert (r.returncode, r.stderr) == (
        1,
        f"Error: Cannot write the memory file {agent}/memory.md: {why}\n",
    )
    r = run("list", "--json")
    assert json.loads(r.stdout)["error"] == f"Cannot read {agent}/memory.md: {why}"
    assert f"global: Cannot read {agent}/memory.md: {why}" in run("doctor").stdout
    r = run("add", "--trusted", "a project note")
    assert r.returncode == 0, r.stderr  # the project scope is not concerned


def make_chain(folder: Path, links: int = 45) -> Path:
    """``folder`` leads to a real folder (returned) through ``links`` symlinks, each named
    once: more than the system follows (40 on Linux, 32 on macOS), and no loop."""
    real = folder.parent / f"{folder.name}-real"
    real.mkdir()
    before = real.name
    for i in range(links - 1):
        (folder.parent / f"{folder.name}-link{i}").symlink_to(before)
        before = f"{folder.name}-link{i}"
    folder.symlink_to(before)
    return real


def test_a_pi_through_too_many_links_is_named_a_chain(workspace: Workspace) -> None:
    """The system cannot open it (ELOOP), so it is refused as a loop is, but it is no loop."""
    real = make_chain(workspace.root / ".pi")
    workspace.write("global", ["global note"])
    message = (
        f"Refusing to use {workspace.root}/.pi: it is a chain of more symlinks than the system "
        "follows, so it cannot be opened."
    )
    r = workspace.cli("add", "--trusted", "planted")
    assert (r.returncode, r.stdout, r.stderr) == (1, "", f"Error: {message}\n")
    report = json.loads(workspace.cli("doctor", "--trusted", "--json").stdout)
    assert report["project"]["refused"] == message
    r = workspace.cli("check", "--trusted")
    store = f"{workspace.root}/.pi/memory.md"
    assert r.stdout.splitlines() == [f"{store}:1:1: outside-project {message}"]
    assert "loop" not in r.stdout + r.stderr
    assert os.listdir(real) == []


def test_an_agent_dir_through_too_many_links_is_named_a_chain(
    workspace: Workspace, tmp_path: Path
) -> None:
    agent = tmp_path / "chained-agent"
    make_chain(agent)
    env = {**workspace.env(), "PI_CODING_AGENT_DIR": str(agent)}
    why = f"{agent} is a chain of more symlinks than the system follows"
    r = run_cli("add", "--scope", "global", "x", cwd=workspace.root, env=env)
    assert (r.returncode, r.stderr) == (
        1,
        f"Error: Cannot write the memory file {agent}/memory.md: {why}\n",
    )
    r = run_cli("doctor", cwd=workspace.root, env=env)
    assert f"global: Cannot read {agent}/memory.md: {why}" in r.stdout


LONG = 1100
"""Links in a long chain: more than Python 3.11's realpath can follow (it recursed once
per link, and every verb that resolved such a path ended with ``RecursionError``)."""

CHAIN = "is a chain of more symlinks than the system follows"


def chain_to(name: Path, end: str, links: int = LONG) -> None:
    """``name`` leads to ``end`` (as a link's target) through ``links`` symlinks, no loop."""
    before = end
    for i in range(links - 1):
        (name.parent / f"{name.name}-link{i}").symlink_to(before)
        before = f"{name.name}-link{i}"
    name.symlink_to(before)


@pytest.mark.parametrize("links", [45, LONG])
def test_export_into_a_chain_is_refused(workspace: Workspace, links: int) -> None:
    """Nothing can open it; export followed it to its end and wrote there (45 links) or
    ended with RecursionError (1,100)."""
    workspace.write("global", ["global note"])
    end = workspace.root / "AGENTS-real.md"
    end.write_text("# Agents\n")
    chain_to(workspace.root / "AGENTS.md", end.name, links)
    message = f"Refusing to export to {workspace.root}/AGENTS.md: it {CHAIN}."
    r = workspace.cli("export", "--to", "AGENTS.md")
    assert (r.returncode, r.stdout, r.stderr) == (1, "", f"Error: {message}\n")
    r = workspace.cli("export", "--to", "AGENTS.md", "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["error"] == message
    assert end.read_text() == "# Agents\n"


def test_export_into_a_loop_is_named_a_loop(workspace: Workspace) -> None:
    (workspace.root / "AGENTS.md").symlink_to("AGENTS.md")
    r = workspace.cli("export", "--to", "AGENTS.md")
    assert (r.returncode, r.stderr) == (
        1,
        f"Error: Refusing to export to {workspace.root}/AGENTS.md: it is a symlink that "
        "leads back to itself.\n",
    )


def test_every_verb_names_an_agent_dir_behind_a_long_chain(
    workspace: Workspace, tmp_path: Path
) -> None:
    agent = tmp_path / "chained-agent"
    (tmp_path / "agent-real").mkdir()
    chain_to(agent, "agent-real")
    env = {**workspace.env(), "PI_CODING_AGENT_DIR": str(agent)}
    why = f"{agent} {CHAIN}"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, cwd=workspace.root, env=env)

    r = run("add", "--scope", "global", "x")
    assert (r.returncode, r.stdout, r.stderr) == (
        1,
        "",
        f"Error: Cannot write the memory file {agent}/memory.md: {why}\n",
    )
    for verb in ("list", "inject", "check"):
        r = run(verb, "--trusted")
        assert (r.returncode, r.stderr.splitlines()[0]) == (
            1,
            f"Error: Cannot read {agent}/memory.md: {why}",
        ), verb
    r = run("doctor", "--trusted")
    assert f"global: Cannot read {agent}/memory.md: {why}" in r.stdout
    assert "Traceback" not in r.stderr
    r = run("sync", "--scope", "global")  # (it said the agent dir does not exist)
    assert (r.returncode, r.stderr) == (1, f"Error: Cannot sync the global store: {why}.\n")
    r = run("add", "--trusted", "a project note")
    assert r.returncode == 0, r.stderr  # the project scope is not concerned
    assert os.listdir(tmp_path / "agent-real") == []


def test_a_pi_behind_a_long_chain_is_refused_by_export_too(workspace: Workspace) -> None:
    """Export resolved every store, the project's through its ``.pi``: RecursionError."""
    real = workspace.root / "pi-real"
    real.mkdir()
    chain_to(workspace.root / ".pi", real.name)
    workspace.write("global", ["global note"])
    message = f"Refusing to use {workspace.root}/.pi: it {CHAIN}, so it cannot be opened."
    r = workspace.cli("export", "--trusted", "--to", "AGENTS.md")
    assert (r.returncode, r.stdout, r.stderr) == (1, "", f"Error: {message}\n")
    r = workspace.cli("add", "--trusted", "planted")
    assert (r.returncode, r.stderr) == (1, f"Error: {message}\n")
    assert os.listdir(real) == []
    assert not (workspace.root / "AGENTS.md").exists()


@pytest.mark.parametrize("verb", ["list", "add", "check", "export"])
def test_a_project_behind_a_chain_is_named(workspace: Workspace, tmp_path: Path, verb: str) -> None:
    real = tmp_path / "project-real"
    (real / ".git").mkdir(parents=True)
    chain_to(tmp_path / "chained-project", real.name)
    args = {"add": ["x"], "export": ["--to", "AGENTS.md"]}.get(verb, [])
    r = workspace.cli(verb, "--project", str(tmp_path / "chained-project"), *args)
    assert r.returncode == 2
    assert r.stderr.splitlines()[-1] == (
        f"memory-ls {verb}: error: --project {CHAIN}: {tmp_path}/chained-project"
    )
    assert os.listdir(real) == [".git"]


class Linked:
    """``<root>/.pi/memory.md`` is a hard link to ``<agent>/memory.md``: one file."""

    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace
        self.global_store = workspace.write("global", ["shared note"])
        (workspace.root / ".pi").mkdir()
        self.store = workspace.project_store
        os.link(self.global_store, self.store)
        self.text = self.global_store.read_text()
        self.message = (
            f"Refusing to use {workspace.root}/.pi: its memory.md is a hard link to the global "
            f"memory file ({self.global_store}); project and global memory must be two files."
        )
        self.split = (
            "Memory file has 2 hard links (other names for the same file); replacing it "
            "would leave the others with the old notes. Remove the other names, or make "
            f"this one a copy of its own, to change it: {self.global_store}"
        )

    def still_one_file(self) -> None:
        assert os.stat(self.store).st_ino == os.stat(self.global_store).st_ino
        assert self.global_store.read_text() == self.text
        assert sorted(os.listdir(self.store.parent)) == ["memory.md"]
        assert sorted(os.listdir(self.global_store.parent)) == ["memory.md"]


@pytest.fixture
def linked(workspace: Workspace) -> Linked:
    return Linked(workspace)


def test_the_project_scope_of_a_hard_linked_store_is_refused(linked: Linked) -> None:
    ws = linked.ws
    for args in (
        ["add", "planted"],
        ["forget", "shared note"],
        ["update", "shared note", "--to", "changed"],
        ["merge", "shared note", "x", "--to", "both"],
        ["move", "shared note"],
        ["move", "--scope", "global", "shared note"],
        ["clear", "--yes"],
        ["add", "--propose", "proposed"],
    ):
        r = ws.cli(*args, "--trusted", "--json")
        assert r.returncode == 1, args
        data = json.loads(r.stdout)
        assert data["error"] == linked.message, args
        assert (data["project"], data["global"]) == ([], ["shared note"]), args
    linked.still_one_file()


def test_the_file_is_global_memory_read_once_and_never_split(linked: Linked) -> None:
    ws = linked.ws
    r = ws.cli("list", "--trusted", "--json")
    data = json.loads(r.stdout)
    assert (data["project"], data["global"], data["error"]) == (
        [],
        ["shared note"],
        linked.message,
    )
    r = ws.cli("inject", "--trusted")
    assert f"Error: {linked.message}" in r.stderr
    assert "project:" not in r.stdout and r.stdout.count("- shared note") == 1
    r = ws.cli("add", "--scope", "global", "--trusted", "global note")
    assert (r.returncode, r.stderr) == (1, f"Error: {linked.split}\n")
    r = ws.cli("doctor", "--trusted", "--json")
    report = json.loads(r.stdout)
    # The project scope is refused; the global store, why a write would be refused.
    assert report["problems"] == [f"project: {linked.message}", f"global: {linked.split}"]
    assert (report["project"]["refused"], report["project"]["exists"]) == (linked.message, True)
    assert report["global"]["readOnlyReason"] == linked.split
    linked.still_one_file()


def test_check_reports_the_one_file_once_with_the_refusal(linked: Linked) -> None:
    ws = linked.ws
    linked.global_store.write_text(store_text("shared note", "shared note"))  # in place
    store = f"{ws.root}/.pi/memory.md"
    r = ws.cli("check", "--trusted")
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        f"{store}:1:1: outside-project {linked.message}",
        f"{store}:4:3: duplicate Duplicate of the note on line 3: shared note",
    ]
    assert r.stderr == "1 files checked: 1 errors, 1 warnings, 0 other\n"
    for spelled in (store, str(linked.global_store)):
        r = ws.cli("check", "--trusted", spelled)
        assert f"{spelled}:1:1: outside-project {linked.message}" in r.stdout.splitlines()


def test_once_unlinked_both_scopes_work(linked: Linked) -> None:
    ws = linked.ws
    linked.store.unlink()
    linked.store.write_text(store_text("a project note"))  # the user's own copy
    assert ws.cli("add", "--trusted", "another project note").returncode == 0
    assert ws.cli("add", "--scope", "global", "a global note").returncode == 0
    data = json.loads(ws.cli("list", "--trusted", "--json").stdout)
    assert data["project"] == ["a project note", "another project note"]
    assert data["global"] == ["shared note", "a global note"]


def test_inbox_warns_of_an_inbox_with_other_names(workspace: Workspace, tmp_path: Path) -> None:
    """As the doctor does: every propose, accept and reject on it is refused, and the
    listing said nothing of it."""
    from memory_ls.store.files import hard_links_message
    from memory_ls.store.paths import INBOX_FILE_NAME

    workspace.write("project", ["use pnpm"])
    assert workspace.cli("add", "--trusted", "--propose", "a proposal").returncode == 0
    inbox = workspace.root / ".pi" / INBOX_FILE_NAME
    r = workspace.cli("inbox", "--trusted")
    assert (r.returncode, r.stderr) == (0, "")
    os.link(inbox, tmp_path / "other.jsonl")
    warning = f"Warning: {hard_links_message(inbox, 2)}\n"
    r = workspace.cli("inbox", "--trusted")
    assert (r.returncode, r.stderr) == (0, warning)
    assert "a proposal" in r.stdout
    r = workspace.cli("inbox", "--trusted", "--json")
    assert r.stderr == warning and json.loads(r.stdout)["project"][0]["text"] == "a proposal"
    r = workspace.cli("doctor", "--trusted")
    assert r.stdout.count("hard links") == 1  # (said once: the doctor reads the listing)


@pytest.mark.parametrize("shape", ["chain", "loop"])
def test_import_from_a_chain_or_a_loop_names_it(workspace: Workspace, shape: str) -> None:
    """The system's 'Too many levels of symbolic links' named no culprit."""
    notes = workspace.root / "notes.md"
    if shape == "chain":
        (workspace.root / "notes-real.md").write_text("- imported\n")
        chain_to(notes, "notes-real.md")
        why = CHAIN
    else:
        notes.symlink_to(notes.name)
        why = "is a symlink that leads back to itself"
    r = workspace.cli("import", "--trusted", "--scope", "global", "notes.md")
    assert (r.returncode, r.stderr) == (
        1,
        f"Error: Cannot read the import file notes.md: it {why}\n",
    )
    assert not workspace.global_store.exists()


def test_inbox_warns_of_a_read_only_inbox(workspace: Workspace) -> None:
    """A read-only inbox is refused as a linked one is (the store's safe path): ``inbox``
    and the doctor say so once, before a propose, accept or reject fails."""
    from memory_ls.store.files import read_only_message
    from memory_ls.store.paths import INBOX_FILE_NAME

    workspace.write("project", ["use pnpm"])
    assert workspace.cli("add", "--trusted", "--propose", "a proposal").returncode == 0
    inbox = workspace.root / ".pi" / INBOX_FILE_NAME
    inbox.chmod(0o444)
    warning = f"Warning: {read_only_message(inbox)}\n"
    r = workspace.cli("inbox", "--trusted")
    assert (r.returncode, r.stderr) == (0, warning)
    r = workspace.cli("doctor", "--trusted")
    assert r.stdout.count(read_only_message(inbox)) == 1, r.stdout
    r = workspace.cli("accept", "--trusted", "--all")
    assert r.returncode == 1 and read_only_message(inbox) in r.stderr
