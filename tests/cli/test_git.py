"""SPEC §14 against real git: the merge driver, git-setup and sync, driven as a user would.

Every repository lives in the test's tmp folder; ``HOME`` and ``GIT_CONFIG_GLOBAL`` point
there too (with a user name and e-mail), so neither the real home nor the real git
config is touched. ``memory-ls`` on ``PATH`` is this checkout's (git runs the driver by
that name). Under ``CI=true`` a missing git fails instead of skipping.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from memory_ls.core.text import HEADER
from tests.conftest import CLI_TIMEOUT, Workspace, run_cli, store_text
from tests.unit.test_schemas import validate

if shutil.which("git") is None:  # pragma: no cover - the CI image installs git
    if os.environ.get("CI") == "true":
        raise RuntimeError("git is required under CI=true (.ci/run installs it)")
    pytest.skip("git is not installed", allow_module_level=True)


def git_env(workspace: Workspace, agent_dir: Path | None = None) -> dict[str, str]:
    """The workspace's environment, with a private git config and this memory-ls on PATH."""
    config = workspace.home / ".gitconfig"
    if not config.exists():
        config.write_text(
            "[user]\n\tname = Test User\n\temail = test@example.com\n"
            "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
        )
    env = workspace.env()
    env.update(
        GIT_CONFIG_GLOBAL=str(config),
        GIT_CONFIG_NOSYSTEM="1",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
    )
    if agent_dir is not None:
        env["PI_CODING_AGENT_DIR"] = str(agent_dir)
    return env


def git(
    env: dict[str, str], cwd: Path, *args: str, ok: bool = True
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    if ok:
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done


def notes(path: Path) -> list[str]:
    return [line[2:] for line in path.read_text().splitlines() if line.startswith("- ")]


def in_git(
    workspace: Workspace,
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = CLI_TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """``memory-ls ARGS`` (the one CLI runner) in the project, or ``cwd``, with the private
    git config (:func:`git_env`, or ``env``) and this memory-ls on ``PATH``."""
    return run_cli(*args, cwd=cwd or workspace.root, env=env or git_env(workspace), timeout=timeout)


def sides(folder: Path, base: str, current: str, other: str) -> tuple[Path, Path, Path]:
    """The three files git hands the merge driver (``%O %A %B``), written in ``folder``."""
    paths = (folder / "base", folder / "current", folder / "other")
    for path, text in zip(paths, (base, current, other), strict=True):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return paths


def published(env: dict[str, str], remote: Path, clone: Path, name: str, text: str) -> None:
    """A bare ``remote`` and its ``clone`` on ``main``, whose first commit (the file ``name``
    holding ``text``) is pushed."""
    git(env, remote.parent, "init", "-q", "--bare", str(remote))
    git(env, remote.parent, "clone", "-q", str(remote), str(clone))
    (clone / name).write_text(text)
    git(env, clone, "add", name)
    git(env, clone, "commit", "-qm", "start")
    git(env, clone, "push", "-qu", "origin", "main")


# -- the merge driver on its own ----------------------------------------------------------


def test_merge_file_writes_the_clean_merge_into_current(workspace: Workspace) -> None:
    base, current, other = sides(
        workspace.root, store_text("a", "b"), store_text("a", "b", "c"), store_text("b", "Use pnpm")
    )
    r = workspace.cli("merge-file", str(base), str(current), str(other))
    assert r.returncode == 0, r.stderr
    assert current.read_text() == store_text("b", "c", "Use pnpm")


PROSE_CHANGED = tuple(f"{HEADER}\n\n{prose}\n\n- a\n" for prose in ("intro", "mine", "theirs"))
"""Merge-file inputs whose prose both sides changed: left to git, conflict markers."""


def test_merge_file_leaves_prose_changed_on_both_sides_to_git(workspace: Workspace) -> None:
    _, current, _ = sides(workspace.root, *PROSE_CHANGED)
    r = in_git(workspace, "merge-file", "base", "current", "other")
    assert r.returncode == 1
    assert "both sides changed the lines around the notes" in r.stderr
    text = current.read_text()
    assert "<<<<<<< current" in text and "mine" in text and "theirs" in text


def test_merge_file_with_relative_paths_in_a_folder_leaves_conflict_markers(
    workspace: Workspace,
) -> None:
    # Run by hand from elsewhere: git merge-file must get paths that still name the files,
    # and a git merge-file that failed must not pass for a conflict it never marked.
    _, current, _ = sides(workspace.root / "sub", *PROSE_CHANGED)
    r = in_git(workspace, "merge-file", "sub/base", "sub/current", "sub/other")
    assert r.returncode == 1, r.stderr
    text = current.read_text()
    assert "<<<<<<< current" in text and "theirs" in text and ">>>>>>> other" in text


def test_merge_file_over_the_cap_is_left_to_git(workspace: Workspace) -> None:
    big = ["n" * 400 + str(i) for i in range(340)]
    other_big = store_text(*(n.replace("n", "o") for n in big))
    base, current, other = sides(workspace.root, store_text(), store_text(*big), other_big)
    r = in_git(workspace, "merge-file", "base", "current", "other")
    assert r.returncode == 1
    assert "262144-byte limit" in r.stderr
    assert "<<<<<<<" in current.read_text()
    assert base.exists() and other.exists()


@pytest.mark.parametrize("which", ["base", "current", "other"])
def test_merge_file_refuses_a_fifo_or_a_device_without_hanging(
    workspace: Workspace, which: str
) -> None:
    # SPEC §8: a FIFO or device given to any verb is refused, never opened for reading.
    three = sides(workspace.root, *[store_text("a")] * 3)
    paths = dict(zip(("base", "current", "other"), three, strict=True))
    os.mkfifo(workspace.root / "fifo")
    for odd in (workspace.root / "fifo", Path("/dev/zero")):
        args = [str(odd) if name == which else str(path) for name, path in paths.items()]
        r = in_git(workspace, "merge-file", *args, timeout=20)
        assert r.returncode == 1, r.stderr
        assert "not a regular file" in r.stderr and "Traceback" not in r.stderr
    assert paths["current"].read_text() == store_text("a")


def test_merge_file_refuses_a_symlinked_current_and_writes_nothing_through_it(
    workspace: Workspace, tmp_path: Path
) -> None:
    # git hands the driver a temporary regular file; a link would make it write elsewhere.
    outside = tmp_path / "outside.txt"
    outside.write_text("not a memory file\n")
    base, current, other = sides(workspace.root, store_text("a"), "", store_text("a", "b"))
    current.unlink()
    current.symlink_to(outside)
    r = in_git(workspace, "merge-file", str(base), str(current), str(other))
    assert r.returncode == 1
    assert "symlink" in r.stderr and "Traceback" not in r.stderr
    assert outside.read_text() == "not a memory file\n"
    assert current.is_symlink()


def test_merge_file_names_a_missing_file_or_a_folder_plainly(workspace: Workspace) -> None:
    base = workspace.write(workspace.root / "base", store_text("a"))
    (workspace.root / "folder").mkdir()
    for current in ("missing", "folder"):
        r = in_git(workspace, "merge-file", str(base), current, str(base))
        assert r.returncode == 1
        assert current in r.stderr and "Traceback" not in r.stderr


# -- git-setup on odd repositories -------------------------------------------------------------


def fresh_repo(workspace: Workspace) -> dict[str, str]:
    env = git_env(workspace)
    shutil.rmtree(workspace.root / ".git")
    git(env, workspace.root, "init", "-q")
    return env


def test_git_setup_keeps_a_crlf_gitattributes_crlf(workspace: Workspace) -> None:
    env = fresh_repo(workspace)
    attributes = workspace.root / ".gitattributes"
    attributes.write_bytes(b"*.txt text\r\n*.png binary\r\n")
    r = in_git(workspace, "git-setup", env=env)
    assert r.returncode == 0, r.stderr
    assert attributes.read_bytes() == (
        b"*.txt text\r\n*.png binary\r\n"
        b".pi/memory.md merge=memory-ls\r\n.pi/memory.inbox.jsonl merge=union\r\n"
    )
    again = in_git(workspace, "git-setup", env=env)
    assert again.returncode == 0 and "nothing changed" in again.stdout


def test_git_setup_refuses_a_symlinked_or_fifo_gitattributes(
    workspace: Workspace, tmp_path: Path
) -> None:
    # A cloned repository can ship .gitattributes -> ~/.bashrc: writing through the
    # link would change a file outside the repository (git itself does not read a
    # symlinked .gitattributes in the work tree). A FIFO must not hang the command.
    env = fresh_repo(workspace)
    attributes = workspace.root / ".gitattributes"
    outside = tmp_path / "bashrc"
    outside.write_text("# rc\n")
    attributes.symlink_to(outside)
    r = in_git(workspace, "git-setup", env=env)
    assert r.returncode == 1 and "symlink" in r.stderr and "Traceback" not in r.stderr
    assert outside.read_text() == "# rc\n"
    assert (
        git(env, workspace.root, "config", "--get", "merge.memory-ls.driver", ok=False).stdout == ""
    )
    attributes.unlink()
    os.mkfifo(attributes)
    r = in_git(workspace, "git-setup", env=env, timeout=20)
    assert r.returncode == 1 and "not a regular file" in r.stderr


def test_git_setup_in_a_repository_whose_path_is_not_utf8(workspace: Workspace) -> None:
    env = git_env(workspace)
    root = Path(os.fsdecode(bytes(workspace.root.parent) + b"/caf\xe9 repo"))
    root.mkdir()
    git(env, root, "init", "-q")
    r = in_git(workspace, "git-setup", cwd=root, env=env)
    assert r.returncode == 0, r.stderr
    assert (root / ".gitattributes").read_text().startswith(".pi/memory.md merge=memory-ls\n")
    check = git(env, root, "check-attr", "merge", ".pi/memory.md")
    assert check.stdout.strip() == ".pi/memory.md: merge: memory-ls"


# -- a project merged on two branches -------------------------------------------------------


@pytest.fixture
def project_repo(workspace: Workspace) -> dict[str, str]:
    """The workspace's project as a real repository with git-setup done and a first store."""
    env = fresh_repo(workspace)
    r = in_git(workspace, "git-setup", env=env)
    assert r.returncode == 0, r.stderr
    assert ".pi/memory.md merge=memory-ls" in r.stdout
    assert "merge.memory-ls.driver 'memory-ls merge-file %O %A %B'" in r.stdout
    again = in_git(workspace, "git-setup", env=env)
    assert again.returncode == 0 and "nothing changed" in again.stdout
    assert (workspace.root / ".gitattributes").read_text() == (
        ".pi/memory.md merge=memory-ls\n.pi/memory.inbox.jsonl merge=union\n"
    )
    workspace.write("project", [*"abc"])
    git(env, workspace.root, "add", "-A")
    git(env, workspace.root, "commit", "-qm", "base")
    return env


def cli_in(workspace: Workspace, env: dict[str, str], *args: str) -> None:
    r = in_git(workspace, *args, env=env)
    assert r.returncode == 0, (args, r.stderr)


def test_a_project_merged_on_two_branches_is_clean(
    workspace: Workspace, project_repo: dict[str, str]
) -> None:
    env = project_repo
    git(env, workspace.root, "checkout", "-qb", "feature")
    cli_in(workspace, env, "add", "x")
    cli_in(workspace, env, "forget", "b")
    cli_in(workspace, env, "add", "Use pnpm")
    git(env, workspace.root, "commit", "-qam", "feature notes")
    git(env, workspace.root, "checkout", "-q", "main")
    cli_in(workspace, env, "add", "y")
    cli_in(workspace, env, "add", "use pnpm.")
    git(env, workspace.root, "commit", "-qam", "main notes")
    merged = git(env, workspace.root, "merge", "--no-edit", "feature", ok=False)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert notes(workspace.project_store) == ["a", "c", "y", "use pnpm.", "x"]
    assert workspace.text("project").startswith(HEADER + "\n\n")
    assert git(env, workspace.root, "status", "--porcelain").stdout == ""


def test_both_branches_changing_the_prose_conflict_as_git_reports_it(
    workspace: Workspace, project_repo: dict[str, str]
) -> None:
    env = project_repo
    start = workspace.text("project")
    git(env, workspace.root, "checkout", "-qb", "feature")
    workspace.write("project", start.replace(HEADER, HEADER + "\n\nOurs: read me."))
    git(env, workspace.root, "commit", "-qam", "feature prose")
    git(env, workspace.root, "checkout", "-q", "main")
    workspace.write("project", start.replace(HEADER, HEADER + "\n\nTheirs: no, me."))
    git(env, workspace.root, "commit", "-qam", "main prose")
    merged = git(env, workspace.root, "merge", "--no-edit", "feature", ok=False)
    assert merged.returncode == 1
    assert "CONFLICT (content): Merge conflict in .pi/memory.md" in merged.stdout
    text = workspace.text("project")
    assert "<<<<<<<" in text and "Ours: read me." in text and "Theirs: no, me." in text


# -- the global store on two machines ------------------------------------------------------


@dataclass
class Machine:
    """One clone of the dotfiles repository, its agent dir inside it."""

    workspace: Workspace
    clone: Path
    env: dict[str, str]

    @property
    def agent_dir(self) -> Path:
        return self.clone / "agent"

    @property
    def store(self) -> Path:
        return self.agent_dir / "memory.md"

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return in_git(self.workspace, *args, cwd=self.clone, env=self.env)

    def add(self, *texts: str) -> None:
        for text in texts:
            r = self.cli("add", "--scope", "global", text)
            assert r.returncode == 0, r.stderr

    def forget(self, text: str) -> None:
        r = self.cli("forget", "--scope", "global", text)
        assert r.returncode == 0, r.stderr

    def sync(self, ok: bool = True) -> dict[str, object]:
        r = self.cli("sync", "--json")
        result: dict[str, object] = json.loads(r.stdout)
        validate("sync-result", result)
        assert (r.returncode == 0) == ok, (r.stdout, r.stderr)
        return result

    def notes(self) -> list[str]:
        return notes(self.store) if self.store.exists() else []


@pytest.fixture
def machines(workspace: Workspace, tmp_path: Path) -> tuple[Machine, Machine]:
    """A bare remote and two clones of it, each a machine with its agent dir in the clone."""
    env = git_env(workspace)
    remote, first = tmp_path / "remote.git", tmp_path / "laptop"
    published(env, remote, first, "README", "dotfiles\n")
    (first / "agent").mkdir()
    second = tmp_path / "desktop"
    git(env, tmp_path, "clone", "-q", str(remote), str(second))
    (second / "agent").mkdir(exist_ok=True)
    return (
        Machine(workspace, first, git_env(workspace, first / "agent")),
        Machine(workspace, second, git_env(workspace, second / "agent")),
    )


def test_two_machines_interleaving_adds_forgets_and_syncs_agree(
    machines: tuple[Machine, Machine],
) -> None:
    laptop, desktop = machines
    laptop.add("use pnpm", "tests need DATABASE_URL")
    first = laptop.sync()
    assert first["commit"] == f"memory: +2 -0 on {first_host(first)}"
    assert first["pushed"] is True and first["arrived"] == [] and first["left"] == []
    assert any("merge=memory-ls" in line for line in first["setup"])  # type: ignore[union-attr]

    desktop.add("prefer ripgrep")
    got = desktop.sync()
    assert got["arrived"] == ["use pnpm", "tests need DATABASE_URL"] and got["left"] == []
    assert desktop.notes() == ["prefer ripgrep", "use pnpm", "tests need DATABASE_URL"]

    laptop.add("laptop only")
    laptop.forget("use pnpm")
    desktop.add("Laptop only.")  # the same note, worded differently, on both
    desktop.forget("tests need DATABASE_URL")
    laptop.sync()
    got = desktop.sync()
    assert set(got["left"]) == {"use pnpm"}  # type: ignore[arg-type]
    laptop_result = laptop.sync()
    assert "tests need DATABASE_URL" in laptop_result["left"]  # type: ignore[operator]
    assert laptop.notes() == desktop.notes()
    assert set(laptop.notes()) == {"prefer ripgrep", "Laptop only."} or set(laptop.notes()) == {
        "prefer ripgrep",
        "laptop only",
    }
    # Nothing left to do: a sync on each commits nothing and moves nothing.
    for machine in (laptop, desktop):
        quiet = machine.sync()
        assert "commit" not in quiet and quiet["arrived"] == [] and quiet["left"] == []


def first_host(result: dict[str, object]) -> str:
    commit = str(result["commit"])
    return commit.rsplit(" on ", 1)[1]


def test_sync_while_another_process_adds_loses_nothing(machines: tuple[Machine, Machine]) -> None:
    laptop, desktop = machines
    laptop.add("seed")
    laptop.sync()
    desktop.add("from the desktop")
    desktop.sync()  # the laptop's next pull merges into its store
    adders = [
        subprocess.Popen(
            [sys.executable, "-m", "memory_ls", "add", "--scope", "global", f"concurrent {i}"],
            cwd=laptop.clone,
            env=laptop.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for i in range(8)
    ]
    laptop.sync()
    for adder in adders:
        assert adder.wait(timeout=60) == 0, adder.stderr.read() if adder.stderr else ""
    expected = {"seed", "from the desktop", *(f"concurrent {i}" for i in range(8))}
    assert set(laptop.notes()) == expected
    laptop.sync()
    desktop.sync()
    assert set(desktop.notes()) == expected
    assert set(laptop.notes()) == expected


def test_a_push_rejected_because_the_remote_moved_recovers_on_the_next_sync(
    machines: tuple[Machine, Machine],
) -> None:
    laptop, desktop = machines
    laptop.add("base")
    laptop.sync()
    desktop.sync()
    # While the laptop syncs, the desktop pushes between the laptop's pull and its push.
    hook = laptop.clone / ".git" / "hooks" / "pre-push"
    flag = laptop.clone.parent / "moved"
    hook.write_text(
        "#!/bin/sh\n"
        f'[ -e "{flag}" ] && exit 0\n'
        f'touch "{flag}"\n'
        f"printf -- '- pushed meanwhile\\n' >> '{desktop.store}'\n"
        f"git -C '{desktop.clone}' commit -qam meanwhile && git -C '{desktop.clone}' push -q\n"
    )
    hook.chmod(0o755)
    laptop.add("laptop note")
    failed = laptop.sync(ok=False)
    assert "git push failed" in str(failed["error"])
    assert "committed locally" in str(failed["error"]) and "nothing is lost" in str(failed["error"])
    assert "laptop note" in laptop.notes()
    log = git(laptop.env, laptop.clone, "log", "-3", "--format=%s").stdout.splitlines()
    assert any(subject.startswith("memory: +1 -0 on ") for subject in log), log
    assert "laptop note" in git(laptop.env, laptop.clone, "show", "HEAD:agent/memory.md").stdout
    recovered = laptop.sync()
    assert recovered["pushed"] is True and recovered["arrived"] == ["pushed meanwhile"]
    desktop.sync()
    assert (
        set(desktop.notes()) == set(laptop.notes()) == {"base", "laptop note", "pushed meanwhile"}
    )


def test_a_failed_pull_leaves_the_store_and_the_local_commit_as_they_were(
    machines: tuple[Machine, Machine],
) -> None:
    laptop, desktop = machines
    laptop.add("base")
    laptop.sync()
    desktop.sync()
    desktop.store.write_text(
        desktop.store.read_text().replace(HEADER, HEADER + "\n\nDesktop says.")
    )
    desktop.sync()
    laptop.store.write_text(laptop.store.read_text().replace(HEADER, HEADER + "\n\nLaptop says."))
    laptop.add("laptop note")
    before = laptop.store.read_bytes()
    failed = laptop.sync(ok=False)
    error = str(failed["error"])
    assert "git pull failed" in error and "CONFLICT" in error
    assert "Your notes and your local commit are as they were" in error
    assert laptop.store.read_bytes() == before
    head = git(laptop.env, laptop.clone, "log", "-1", "--format=%s").stdout
    assert head.startswith("memory: +1 -0 on ")
    status = git(laptop.env, laptop.clone, "status", "--porcelain").stdout
    assert status == "", status


def test_sync_merges_diverged_notes_even_with_merge_ff_only(
    machines: tuple[Machine, Machine],
) -> None:
    # A common setting (merge.ff = only, or pull.ff = only) must not make every sync
    # after the machines diverge fail with "Not possible to fast-forward".
    laptop, desktop = machines
    laptop.add("base")
    laptop.sync()
    desktop.sync()
    git(laptop.env, laptop.clone, "config", "merge.ff", "only")
    git(laptop.env, laptop.clone, "config", "pull.ff", "only")
    desktop.add("desktop note")
    desktop.sync()
    laptop.add("laptop note")
    result = laptop.sync()
    assert result["arrived"] == ["desktop note"]
    assert sorted(laptop.notes()) == ["base", "desktop note", "laptop note"]


def test_a_commit_refused_by_a_hook_leaves_the_index_as_it_was(
    machines: tuple[Machine, Machine],
) -> None:
    laptop, _ = machines
    laptop.add("base")
    laptop.sync()
    hook = laptop.clone / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho the hook says no >&2\nexit 1\n")
    hook.chmod(0o755)
    laptop.add("blocked note")
    before = laptop.store.read_bytes()
    failed = laptop.sync(ok=False)
    assert "the hook says no" in str(failed["error"])
    assert "Nothing was changed" in str(failed["error"])
    assert laptop.store.read_bytes() == before
    # "Nothing was changed" holds for the index too: the store is not left staged.
    staged = git(laptop.env, laptop.clone, "diff", "--cached", "--name-only").stdout
    assert staged == "", staged
    status = git(laptop.env, laptop.clone, "status", "--porcelain").stdout
    assert status == " M agent/memory.md\n", status


# -- refusals ---------------------------------------------------------------------------------


def test_sync_refuses_without_a_work_tree_quoting_git(workspace: Workspace) -> None:
    r = in_git(workspace, "sync", cwd=workspace.home)
    assert r.returncode == 1
    assert "Cannot sync the global store" in r.stderr
    assert "is not in a git work tree" in r.stderr and "not a git repository" in r.stderr


def test_sync_refuses_without_an_upstream_quoting_git(workspace: Workspace) -> None:
    env = git_env(workspace)
    git(env, workspace.agent_dir, "init", "-q")
    git(env, workspace.agent_dir, "commit", "-q", "--allow-empty", "-m", "start")
    workspace.write("global", ["kept"])
    r = in_git(workspace, "sync", cwd=workspace.home, env=env)
    assert r.returncode == 1
    assert "has no upstream" in r.stderr and "no upstream configured" in r.stderr
    assert workspace.text("global") == store_text("kept")
    assert git(env, workspace.agent_dir, "log", "--format=%s").stdout == "start\n"


def test_sync_of_an_untrusted_project_is_refused(workspace: Workspace) -> None:
    r = in_git(workspace, "sync", "--scope", "project", "--untrusted")
    assert r.returncode == 1
    assert "untrusted project" in r.stderr


def test_sync_of_the_project_store_commits_only_its_store(
    workspace: Workspace, tmp_path: Path
) -> None:
    env = git_env(workspace)
    remote = tmp_path / "project.git"
    shutil.rmtree(workspace.root)
    published(env, remote, workspace.root, "README", "hello\n")
    (workspace.root / "README").write_text("work in progress\n")
    git(env, workspace.root, "add", "README")  # staged, and not the store's business
    cli_in(workspace, env, "add", "project fact")
    r = in_git(workspace, "sync", "--scope", "project", "--trusted", "--json", env=env)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["scope"] == "project" and result["pushed"] is True
    committed = git(env, workspace.root, "show", "--name-only", "--format=%s", "HEAD").stdout
    assert committed.split() == [*result["commit"].split(), ".pi/memory.md"]
    assert (
        git(env, workspace.root, "status", "--porcelain").stdout == "M  README\n?? .gitattributes\n"
    )
    pushed = git(env, tmp_path, "--git-dir", str(remote), "show", "main:.pi/memory.md").stdout
    assert pushed == store_text("project fact")


def a_pull_waiting(machines: tuple[Machine, Machine]) -> Machine:
    """The laptop, synced once, with a note from the desktop waiting in the remote: its
    next sync's pull brings notes (and so would replace its store)."""
    laptop, desktop = machines
    laptop.add("base")
    laptop.sync()
    desktop.sync()
    desktop.add("desktop note")
    desktop.sync()
    return laptop


def test_sync_never_cuts_a_hard_link_to_the_store(
    machines: tuple[Machine, Machine], tmp_path: Path
) -> None:
    # A store with other names is never replaced (a write is refused for it): git's pull
    # would replace it all the same (a checkout writes a new file), leaving the other
    # names the old notes without a word.
    laptop = a_pull_waiting(machines)
    other = tmp_path / "other-name.md"
    os.link(laptop.store, other)
    before = laptop.store.read_bytes()
    head = git(laptop.env, laptop.clone, "rev-parse", "HEAD").stdout
    failed = laptop.sync(ok=False)
    assert str(failed["error"]) == (
        "Cannot sync the global store: Memory file has 2 hard links (other names for the "
        "same file); replacing it would leave the others with the old notes. Remove the "
        f"other names, or make this one a copy of its own, to change it: {laptop.store}"
    )
    assert laptop.store.read_bytes() == other.read_bytes() == before
    assert os.stat(laptop.store).st_nlink == 2
    assert git(laptop.env, laptop.clone, "rev-parse", "HEAD").stdout == head


def test_sync_never_replaces_a_read_only_store(
    machines: tuple[Machine, Machine], tmp_path: Path
) -> None:
    """A read-only store is refused by every write: a pull that brings notes would replace
    it all the same (git's checkout writes a new file, with git's mode)."""
    from memory_ls.store.files import read_only_message

    laptop = a_pull_waiting(machines)
    laptop.store.chmod(0o444)
    before = laptop.store.read_bytes()
    head = git(laptop.env, laptop.clone, "rev-parse", "HEAD").stdout
    failed = laptop.sync(ok=False)
    assert str(failed["error"]) == (
        f"Cannot sync the global store: {read_only_message(laptop.store)}"
    )
    assert laptop.store.read_bytes() == before
    assert os.stat(laptop.store).st_mode & 0o777 == 0o444
    assert git(laptop.env, laptop.clone, "rev-parse", "HEAD").stdout == head
