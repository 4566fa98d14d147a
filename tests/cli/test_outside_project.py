"""A hostile clone's ``.pi`` symlink and a typo'd project, through a real CLI process (SPEC §1)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_ls.store.runtime import MemoryRuntime
from tests.conftest import Workspace, run_cli

HEADER = "<!-- Pi memory: one note per bullet; written by the memory tool and /memory -->"


class Clone:
    """A repository whose ``.pi`` is a symlink, an agent dir holding a global note."""

    def __init__(self, workspace: Workspace, tmp_path: Path, target: str) -> None:
        self.workspace = workspace
        self.project = workspace.root
        self.agent = workspace.agent_dir
        self.global_store = workspace.global_store
        self.global_text = f"{HEADER}\n\n- global note\n"
        self.global_store.write_text(self.global_text)
        self.elsewhere = (tmp_path / "elsewhere").resolve()
        self.elsewhere.mkdir()
        self.target = self.agent if target == "agent" else self.elsewhere
        (self.project / ".pi").symlink_to(self.target)
        self.message = (
            f"Refusing to use {self.project}/.pi: it resolves outside the project ({self.target})."
        )

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.workspace.cli(*args)

    def outside_untouched(self) -> None:
        assert self.global_store.read_text() == self.global_text
        assert sorted(p.name for p in self.agent.iterdir()) == ["memory.md"]
        assert list(self.elsewhere.iterdir()) == []


@pytest.fixture(params=["agent", "elsewhere"])
def clone(request: pytest.FixtureRequest, workspace: Workspace, tmp_path: Path) -> Clone:
    return Clone(workspace, tmp_path, request.param)


@pytest.mark.parametrize("trust", [[], ["--trusted"], ["--untrusted"]])
def test_add_is_refused_with_the_exact_message(clone: Clone, trust: list[str]) -> None:
    r = clone.run("add", *trust, "planted note")
    assert r.returncode == 1
    assert r.stdout == ""
    assert r.stderr == f"Error: {clone.message}\n"
    clone.outside_untouched()


def test_a_project_forget_cannot_delete_the_global_note(clone: Clone) -> None:
    r = clone.run("forget", "--trusted", "global note")
    assert (r.returncode, r.stderr) == (1, f"Error: {clone.message}\n")
    r = clone.run("clear", "--trusted", "--yes")
    assert (r.returncode, r.stderr) == (1, f"Error: {clone.message}\n")
    clone.outside_untouched()


def test_every_verb_refuses_or_leaves_the_project_out(clone: Clone) -> None:
    for args in (
        ["update", "global note", "--to", "changed"],
        ["merge", "global note", "other", "--to", "both"],
        ["move", "global note"],
        ["move", "--scope", "global", "global note"],
    ):
        r = clone.run(*args, "--trusted", "--json")
        assert r.returncode == 1, args
        data = json.loads(r.stdout)
        assert data["error"] == clone.message, args
        assert (data["project"], data["global"]) == ([], ["global note"])
    r = clone.run("list", "--trusted", "--json")
    assert r.returncode == 1
    data = json.loads(r.stdout)
    assert (data["project"], data["global"], data["error"]) == ([], ["global note"], clone.message)
    r = clone.run("inject", "--trusted")
    # Like `list`, an unreadable store is an error (exit 1) while the body still prints.
    assert r.returncode == 1 and f"Error: {clone.message}" in r.stderr
    assert "project:" not in r.stdout and r.stdout.count("- global note") == 1
    r = clone.run("doctor", "--trusted", "--json")
    assert f"project: {clone.message}" in json.loads(r.stdout)["problems"]
    clone.outside_untouched()


def test_the_global_scope_still_works(clone: Clone) -> None:
    r = clone.run("add", "--scope", "global", "another global note")
    assert r.returncode == 0, r.stderr
    assert clone.global_store.read_text() == f"{clone.global_text}- another global note\n"


def test_a_pi_symlink_inside_the_project_is_used(workspace: Workspace) -> None:
    project = workspace.root
    (project / "tools" / "pi").mkdir(parents=True)
    (project / ".pi").symlink_to("tools/pi")
    r = workspace.cli("add", "kept inside")
    assert r.returncode == 0, r.stderr
    assert (project / "tools" / "pi" / "memory.md").read_text() == f"{HEADER}\n\n- kept inside\n"


def test_a_missing_project_directory_is_never_created(workspace: Workspace, tmp_path: Path) -> None:
    """Whatever the exit code (the CLI refuses the option itself), no tree appears."""
    typo = tmp_path / "typo" / "deep" / "dir"
    for verb in (["add", "x"], ["clear", "--yes"], ["add", "--trusted", "x"]):
        r = workspace.cli(*verb, "--project", str(typo), cwd=tmp_path)
        assert r.returncode in (1, 2), verb
        assert str(typo) in r.stderr
        assert not (tmp_path / "typo").exists(), verb


def test_check_reports_outside_project_without_reading_the_store(clone: Clone) -> None:
    store = f"{clone.project}/.pi/memory.md"
    clone.global_store.write_text(f"{HEADER}\n\n- same\n- same\n")  # a duplicate, if read
    for args in ([], [store]):
        r = clone.run("check", *args)
        assert r.returncode == 1, args
        project_lines = [line for line in r.stdout.splitlines() if line.startswith(store)]
        assert project_lines == [f"{store}:1:1: outside-project {clone.message}"], args


def test_the_doctor_says_the_project_store_is_refused_and_why_not_missing(clone: Clone) -> None:
    """A refused store is never read, but it is not "missing (reads as empty)": the doctor
    says it is refused, with the refusal's own words, and whether a file is there."""
    r = clone.run("doctor", "--trusted")
    project_part = r.stdout.split("global: ", 1)[0]
    assert "missing" not in project_part, r.stdout
    assert f"  refused: never read, recalled or written\n  ERROR: {clone.message}\n" in project_part
    r = clone.run("doctor", "--trusted", "--json")
    project = json.loads(r.stdout)["project"]
    assert project["refused"] == clone.message
    # Through the link to the agent dir it is the global store's file; elsewhere, nothing.
    assert project["exists"] is (clone.target == clone.agent)
    assert (project["bytes"], project["notes"]) == (0, 0)
    clone.outside_untouched()


class SharedStore:
    """An agent dir whose ``memory.md`` is the project store's file (SPEC §1: the two
    scopes never become one file), named as ``how`` says."""

    def __init__(self, workspace: Workspace, tmp_path: Path, how: str) -> None:
        self.workspace = workspace
        self.root = workspace.root
        pi = self.root / ".pi"
        self.env = workspace.env()
        self.flags: list[str] = []
        self.leads_out = leads_out = how.startswith("pi leads out")
        if leads_out:  # `.pi` leads out of the project, and the agent dir is `<root>/.pi`
            (tmp_path / "elsewhere").mkdir()
            pi.symlink_to(tmp_path / "elsewhere")
            how = how.removeprefix("pi leads out, ")
        if how == "--agent-dir":
            self.flags = ["--agent-dir", str(pi)]
        elif how == "root through a link":  # `<link to root>/.pi`: the `.pi` entry itself
            (tmp_path / "root-link").symlink_to(self.root, target_is_directory=True)
            self.env["PI_CODING_AGENT_DIR"] = str(tmp_path / "root-link" / ".pi")
        elif how == "env":
            self.env["PI_CODING_AGENT_DIR"] = str(pi)
        elif how == "linked agent dir":  # the agent dir is a link to the project's .pi
            (tmp_path / "agent-link").symlink_to(pi, target_is_directory=True)
            self.env["PI_CODING_AGENT_DIR"] = str(tmp_path / "agent-link")
        else:  # `.pi` links to the agent dir, which lies inside the project
            (self.root / "agent").mkdir()
            pi.symlink_to("agent")
            self.env["PI_CODING_AGENT_DIR"] = str(self.root / "agent")
        pi.mkdir(exist_ok=True)
        self.text = f"{HEADER}\n\n- shared note\n"
        self.store = self.root / ".pi" / "memory.md"
        self.store.write_text(self.text)
        agent = self.env["PI_CODING_AGENT_DIR"] if not self.flags else self.flags[1]
        self.message = (
            f"Refusing to use {self.root}/.pi: its memory.md is the global memory file "
            f"({agent}/memory.md); project and global memory must be two files."
        )
        if leads_out:  # the project scope's refusal is the `.pi`'s own, as for any clone's
            self.message = (
                f"Refusing to use {self.root}/.pi: it resolves outside the project "
                f"({(tmp_path / 'elsewhere').resolve()})."
            )

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, *self.flags, cwd=self.root, env=self.env)


@pytest.fixture(
    params=[
        "--agent-dir",
        "env",
        "linked agent dir",
        "pi links to it",
        "pi leads out, --agent-dir",
        "pi leads out, env",
        "pi leads out, root through a link",
    ]
)
def shared(request: pytest.FixtureRequest, workspace: Workspace, tmp_path: Path) -> SharedStore:
    return SharedStore(workspace, tmp_path, request.param)


def test_an_agent_dir_in_the_projects_pi_refuses_the_project_scope(shared: SharedStore) -> None:
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
        r = shared.run(*args, "--trusted", "--json")
        assert r.returncode == 1, args
        data = json.loads(r.stdout)
        assert data["error"] == shared.message, args
        assert (data["project"], data["global"]) == ([], ["shared note"]), args
    assert shared.store.read_text() == shared.text  # nothing written, nothing lost
    assert sorted(p.name for p in shared.store.parent.iterdir()) == ["memory.md"]


def test_an_agent_dir_in_the_projects_pi_keeps_the_file_as_global_memory(
    shared: SharedStore,
) -> None:
    r = shared.run("add", "--scope", "global", "global note")
    assert r.returncode == 0, r.stderr
    assert shared.store.read_text() == f"{shared.text}- global note\n"  # written once
    r = shared.run("list", "--trusted", "--json")
    data = json.loads(r.stdout)
    assert r.returncode == 1
    assert (data["project"], data["global"]) == ([], ["shared note", "global note"])
    assert data["error"] == shared.message
    r = shared.run("inject", "--trusted")
    assert f"Error: {shared.message}" in r.stderr
    assert r.stdout.endswith("global:\n- shared note\n- global note\n")
    assert "project:" not in r.stdout and r.stdout.count("- shared note") == 1  # recalled once
    r = shared.run("doctor", "--trusted", "--json")
    report = json.loads(r.stdout)
    assert f"project: {shared.message}" in report["problems"]
    # The file exists (it is global memory): refused, never "missing".
    assert (report["project"]["refused"], report["project"]["exists"]) == (shared.message, True)
    assert "refused" not in report["global"]
    r = shared.run("doctor", "--trusted")
    assert f"  refused: never read, recalled or written\n  ERROR: {shared.message}\n" in r.stdout
    assert "missing (reads as empty)" not in r.stdout.split("global: ", 1)[0]
    r = shared.run("check", "--trusted")
    assert r.returncode == 1
    assert f"{shared.root}/.pi/memory.md:1:1: outside-project {shared.message}" in r.stdout


def test_check_of_the_shared_file_reports_the_refusal_as_check_of_the_project_does(
    shared: SharedStore,
) -> None:
    """``check FILE`` of the file that is both stores, spelled as the project's store or
    through the agent dir (a link either way round), finds what ``check`` of the project
    finds for it: the project scope's refusal and the global store's own findings."""
    shared.store.write_text(f"{shared.text}- shared note\n")  # a duplicate, as global
    agent = Path(shared.flags[1] if shared.flags else shared.env["PI_CODING_AGENT_DIR"])

    def rows(*files: str) -> list[tuple[object, ...]]:
        r = shared.run("check", "--trusted", "--format", "json", *files)
        assert r.returncode == 1, r.stderr
        return sorted((f["code"], f["line"], f["message"]) for f in json.loads(r.stdout))

    whole = rows()
    assert ("outside-project", 1, shared.message) in whole
    assert [row[0] for row in whole] == ["duplicate", "outside-project"]
    for spelled in (shared.store, agent / "memory.md", shared.store.resolve()):
        assert rows(str(spelled)) == whole, spelled
    if shared.leads_out:
        # Named as the agent dir names it and by its real path, out there: one file of one
        # project's (the agent dir's `<root>/.pi` names it), so one report.
        both = shared.run("check", "--trusted", str(shared.store), str(shared.store.resolve()))
        assert both.stderr.startswith("1 files checked"), both.stderr


def test_check_reports_the_one_file_once_and_its_refusal_once(shared: SharedStore) -> None:
    """Both stores are one file: ``check`` reports it once (not the project store's
    refusal, then the same file again as the global store), the refusal said once, under
    the project store's path it is about."""
    shared.store.write_text(f"{shared.text}- shared note\n")  # a duplicate, as global
    r = shared.run("check", "--trusted")
    assert r.returncode == 1, r.stderr
    assert r.stderr == "1 files checked: 1 errors, 1 warnings, 0 other\n"
    store = f"{shared.root}/.pi/memory.md"
    assert r.stdout.splitlines() == [
        f"{store}:1:1: outside-project {shared.message}",
        f"{store}:4:3: duplicate Duplicate of the note on line 3: shared note",
    ]


def test_the_doctor_lists_the_one_bytefly_json_once_and_the_refusal_once(
    shared: SharedStore,
) -> None:
    """The agent dir is the project's ``.pi``: its ``bytefly.json`` is one file, the
    global layer, listed once (not again as the project layer); the project scope's
    refusal is one problem (its inbox, refused with it, is not a second)."""
    (shared.store.parent / "bytefly.json").write_text('{"memory": {"maxInjectBytes": 600}}')
    report = json.loads(shared.run("doctor", "--trusted", "--json").stdout)
    sources = report["config"]["sources"]
    assert [s["status"] for s in sources] == ["used"], sources
    assert report["config"]["maxInjectBytes"] == 600
    assert report["problems"] == [f"project: {shared.message}"]
    text = shared.run("doctor", "--trusted").stdout
    assert text.count("bytefly.json") == 1, text
    assert text.count(shared.message) == 2, text  # the project's ERROR line, its problem


@pytest.fixture
def bind_mounted_agent_dir(workspace: Workspace, tmp_path: Path) -> Iterator[Path]:
    """The project's ``.pi`` bind-mounted as the agent dir: one folder under two paths
    that no symlink explains (as ``.PI`` is ``.pi`` on a case-insensitive disk)."""
    pi = workspace.root / ".pi"
    pi.mkdir(exist_ok=True)
    agent = tmp_path / "agent-mount"
    agent.mkdir()
    done = subprocess.run(
        ["mount", "--bind", str(pi), str(agent)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot bind-mount here (needs privileges): {done.stderr.strip()}")
    try:
        yield agent
    finally:
        subprocess.run(["umount", str(agent)], check=True)


def test_an_agent_dir_that_is_the_projects_pi_by_a_bind_mount_refuses_the_project_scope(
    workspace: Workspace, bind_mounted_agent_dir: Path
) -> None:
    store = workspace.root / ".pi" / "memory.md"
    text = f"{HEADER}\n\n- shared note\n"
    store.write_text(text)
    env = {**workspace.env(), "PI_CODING_AGENT_DIR": str(bind_mounted_agent_dir)}
    message = (
        f"Refusing to use {workspace.root}/.pi: its memory.md is the global memory file "
        f"({bind_mounted_agent_dir}/memory.md); project and global memory must be two files."
    )
    for args in (["forget", "shared note"], ["add", "planted"], ["move", "shared note"]):
        r = run_cli(*args, "--trusted", "--json", cwd=workspace.root, env=env)
        assert r.returncode == 1, args
        assert json.loads(r.stdout)["error"] == message, args
    assert store.read_text() == text  # a project forget did not empty global memory
    r = run_cli("list", "--trusted", "--json", cwd=workspace.root, env=env)
    assert json.loads(r.stdout)["global"] == ["shared note"]  # listed once, as global
    # The editor's global document says why project memory is refused.
    runtime = MemoryRuntime(workspace.root, agent_dir=str(bind_mounted_agent_dir))
    assert runtime.shared_store_refusal("global") == message
    # `check FILE` under either path: the global store's file, with the project's refusal
    # (not checked as the project store, whose notes were "also in global memory").
    for spelled in (store, bind_mounted_agent_dir / "memory.md"):
        r = run_cli("check", "--trusted", str(spelled), cwd=workspace.root, env=env)
        assert r.stdout == f"{spelled}:1:1: outside-project {message}\n", spelled


@pytest.mark.parametrize("inside", [".pi", ".pi/sub/.."])
def test_a_project_named_inside_its_pi_that_leads_out_is_refused(clone: Clone, inside: str) -> None:
    """``--project`` naming the ``.pi`` that leads out (or a path through it) names that
    project, whose store is refused: it named the folder the link leads to, and ``add``
    created a store there."""
    if inside != ".pi":
        (clone.target / "sub").mkdir()
    r = clone.run("add", "--trusted", "planted note", "--project", str(clone.project / inside))
    assert (r.returncode, r.stderr) == (1, f"Error: {clone.message}\n")
    if inside != ".pi":
        (clone.target / "sub").rmdir()
    clone.outside_untouched()
