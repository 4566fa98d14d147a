"""The agent dir, the project root and the store paths (SPEC §1).

The trees are built by hand exactly as git writes them, so these tests need
no git; one extra test checks the same answers against a real git if present.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from memory_ls.store import paths
from memory_ls.store.paths import (
    StorePath,
    agent_dir_for,
    canonical_path,
    classify_store_path,
    git_config_value,
    global_store_path,
    is_pi_memory,
    outside_project_message,
    project_root_for,
    project_store_path,
    read_small_text,
    shared_file_refusal,
    shared_store_message,
)


def make_repo(root: Path) -> Path:
    """A normal repository: ``<root>/.git`` is a directory."""
    git = root / ".git"
    (git / "objects").mkdir(parents=True)
    (git / "refs").mkdir()
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = false\n")
    return root.resolve()


def make_worktree(main: Path, wt: Path, name: str = "wt") -> Path:
    """A linked worktree, as ``git worktree add`` writes it (absolute gitdir)."""
    admin = main / ".git" / "worktrees" / name
    admin.mkdir(parents=True)
    (admin / "commondir").write_text("../..\n")
    (admin / "gitdir").write_text(f"{wt}/.git\n")
    (admin / "HEAD").write_text("ref: refs/heads/wt\n")
    wt.mkdir(parents=True)
    (wt / ".git").write_text(f"gitdir: {admin}\n")
    return wt


def make_submodule(superproject: Path, name: str = "sub") -> Path:
    """A submodule, as ``git submodule add`` writes it (relative gitdir, no commondir)."""
    modules = superproject / ".git" / "modules" / name
    modules.mkdir(parents=True)
    (modules / "HEAD").write_text("ref: refs/heads/main\n")
    (modules / "config").write_text(
        f"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ../../../{name}\n"
    )
    sub = superproject / name
    sub.mkdir()
    (sub / ".git").write_text(f"gitdir: ../.git/modules/{name}\n")
    return sub


# -- agent dir -------------------------------------------------------------------


def test_agent_dir_explicit_wins(tmp_path: Path) -> None:
    env = {"PI_CODING_AGENT_DIR": str(tmp_path / "env"), "HOME": str(tmp_path)}
    assert agent_dir_for(str(tmp_path / "given"), env) == tmp_path / "given"


def test_agent_dir_explicit_expands_home(tmp_path: Path) -> None:
    assert agent_dir_for("~/agent", {"HOME": str(tmp_path)}) == tmp_path / "agent"


def test_agent_dir_from_env(tmp_path: Path) -> None:
    env = {"PI_CODING_AGENT_DIR": str(tmp_path / "env"), "HOME": "/nowhere"}
    assert agent_dir_for(None, env) == tmp_path / "env"


def test_agent_dir_env_tilde_expands(tmp_path: Path) -> None:
    env = {"PI_CODING_AGENT_DIR": "~/custom/agent", "HOME": str(tmp_path)}
    assert agent_dir_for(None, env) == tmp_path / "custom" / "agent"
    env = {"PI_CODING_AGENT_DIR": "~", "HOME": str(tmp_path)}
    assert agent_dir_for(None, env) == tmp_path


def test_agent_dir_env_tilde_uses_process_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "~/.pi-alt")
    assert agent_dir_for() == Path.home() / ".pi-alt"


def test_agent_dir_empty_env_falls_back_to_default(tmp_path: Path) -> None:
    env = {"PI_CODING_AGENT_DIR": "", "HOME": str(tmp_path)}
    assert agent_dir_for(None, env) == tmp_path / ".pi" / "agent"
    assert agent_dir_for("", env) == tmp_path / ".pi" / "agent"


def test_agent_dir_relative_becomes_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = agent_dir_for("rel/agent", {})
    assert result.is_absolute()
    assert result == Path(os.getcwd()) / "rel" / "agent"


def test_store_paths(tmp_path: Path) -> None:
    assert global_store_path(tmp_path / "agent") == tmp_path / "agent" / "memory.md"
    assert project_store_path(tmp_path / "p") == tmp_path / "p" / ".pi" / "memory.md"


# -- project root ----------------------------------------------------------------


def test_repo_root_and_subdirectory_agree(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    deep = root / "src" / "pkg"
    deep.mkdir(parents=True)
    (deep / "mod.py").write_text("")
    assert project_root_for(root) == root
    assert project_root_for(deep) == root
    assert project_root_for(deep / "mod.py") == root


def test_linked_worktree_resolves_to_main(tmp_path: Path) -> None:
    main = make_repo(tmp_path / "main")
    wt = make_worktree(main, tmp_path / "elsewhere" / "wt")
    (wt / "src").mkdir()
    assert project_root_for(wt) == main
    assert project_root_for(wt / "src") == main


def test_linked_worktree_with_relative_gitdir(tmp_path: Path) -> None:
    # `git worktree add --relative-paths` (git 2.48+) writes relative links.
    main = make_repo(tmp_path / "main")
    wt = make_worktree(main, tmp_path / "wt")
    (wt / ".git").write_text("gitdir: ../main/.git/worktrees/wt\n")
    assert project_root_for(wt) == main


def test_linked_worktree_with_absolute_commondir(tmp_path: Path) -> None:
    main = make_repo(tmp_path / "main")
    wt = make_worktree(main, tmp_path / "wt")
    (main / ".git" / "worktrees" / "wt" / "commondir").write_text(f"{main / '.git'}\n")
    assert project_root_for(wt) == main


def test_worktree_inside_main_tree(tmp_path: Path) -> None:
    main = make_repo(tmp_path / "main")
    wt = make_worktree(main, main / ".worktrees" / "feature", name="feature")
    assert project_root_for(wt) == main


def test_crlf_git_file(tmp_path: Path) -> None:
    main = make_repo(tmp_path / "main")
    wt = make_worktree(main, tmp_path / "wt")
    (wt / ".git").write_bytes(f"gitdir: {main}/.git/worktrees/wt\r\n".encode())
    (main / ".git" / "worktrees" / "wt" / "commondir").write_bytes(b"../..\r\n")
    assert project_root_for(wt) == main


def test_submodule_is_its_own_root(tmp_path: Path) -> None:
    superproject = make_repo(tmp_path / "super")
    sub = make_submodule(superproject)
    (sub / "lib").mkdir()
    assert project_root_for(sub) == sub
    assert project_root_for(sub / "lib") == sub
    assert project_root_for(superproject) == superproject


def test_worktree_of_a_submodule_resolves_to_the_submodule(tmp_path: Path) -> None:
    superproject = make_repo(tmp_path / "super")
    sub = make_submodule(superproject)
    admin = superproject / ".git" / "modules" / "sub" / "worktrees" / "swt"
    admin.mkdir(parents=True)
    (admin / "commondir").write_text("../..\n")
    swt = tmp_path / "swt"
    swt.mkdir()
    (swt / ".git").write_text(f"gitdir: {admin}\n")
    assert project_root_for(swt) == sub


def test_worktree_of_a_bare_repository_is_its_own_root(tmp_path: Path) -> None:
    bare = tmp_path / "repo.git"
    (bare / "worktrees" / "wt").mkdir(parents=True)
    (bare / "config").write_text("[core]\n\tbare = true\n")
    (bare / "worktrees" / "wt" / "commondir").write_text("../..\n")
    wt = tmp_path / "wt"
    wt.mkdir()
    (wt / ".git").write_text(f"gitdir: {bare}/worktrees/wt\n")
    assert project_root_for(wt) == wt.resolve()


def test_separate_git_dir_is_its_own_root(tmp_path: Path) -> None:
    # `git init --separate-git-dir`: a `.git` file, no commondir.
    store = tmp_path / "store" / ".git"
    store.mkdir(parents=True)
    (store / "HEAD").write_text("ref: refs/heads/main\n")
    work = tmp_path / "work"
    (work / "a").mkdir(parents=True)
    (work / ".git").write_text(f"gitdir: {store}\n")
    assert project_root_for(work / "a") == work.resolve()


def test_outside_any_repository(tmp_path: Path) -> None:
    folder = tmp_path / "plain" / "dir"
    folder.mkdir(parents=True)
    (folder / "notes.md").write_text("")
    # tmp_path may itself sit inside a repository; skip rather than mislead.
    if project_root_for(tmp_path) != tmp_path.resolve():
        pytest.skip("tmp_path is inside a git repository")
    assert project_root_for(folder) == folder.resolve()
    assert project_root_for(folder / "notes.md") == folder.resolve()


def test_symlinked_start_is_resolved(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    (root / "sub").mkdir()
    link = tmp_path / "link"
    link.symlink_to(root / "sub")
    assert project_root_for(link) == root


def test_a_cli_command_resolves_its_starting_folder_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each resolution lstat's every component of the path: the CLI's, project_root_for's
    and repository_root_for's made it three per command. The root is the same."""
    from types import SimpleNamespace

    from memory_ls.cli import _runtime

    root = make_repo(tmp_path / "repo")
    (root / "a" / "b").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(root / "a" / "b")
    resolved: list[str] = []
    real = paths.real_path

    def counting(path: str | os.PathLike[str]) -> str:
        if os.fspath(path) in (str(link), str(root / "a" / "b")):
            resolved.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(paths, "real_path", counting)
    assert project_root_for(link) == root
    assert resolved == [str(link)]
    resolved.clear()
    runtime = _runtime(SimpleNamespace(project=str(link), agent_dir=None, trusted=None))
    assert runtime.project_root == root  # SPEC §8: symlinks followed
    assert resolved == [str(link)]


@pytest.mark.parametrize(
    "content",
    [b"", b"garbage\n", b"gitdir:\n", b"gitdir:   \n", b"\xff\xfe\x00bad", b"GITDIR: /x\n"],
)
def test_malformed_git_file_is_skipped(tmp_path: Path, content: bytes) -> None:
    outer = make_repo(tmp_path / "outer")
    inner = outer / "inner"
    inner.mkdir()
    (inner / ".git").write_bytes(content)
    assert project_root_for(inner) == outer


def test_git_entry_that_is_neither_file_nor_dir_is_skipped(tmp_path: Path) -> None:
    outer = make_repo(tmp_path / "outer")
    inner = outer / "inner"
    inner.mkdir()
    os.mkfifo(inner / ".git")  # reading it would block
    assert project_root_for(inner) == outer


def test_unreadable_git_file_is_skipped(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    outer = make_repo(tmp_path / "outer")
    inner = outer / "inner"
    inner.mkdir()
    (inner / ".git").write_text("gitdir: /somewhere\n")
    (inner / ".git").chmod(0)
    try:
        assert project_root_for(inner) == outer
    finally:
        (inner / ".git").chmod(0o644)


def test_dangling_gitdir_keeps_the_holder_as_root(tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    wt.mkdir()
    (wt / ".git").write_text(f"gitdir: {tmp_path}/gone/.git/worktrees/wt\n")
    assert project_root_for(wt) == wt.resolve()


def test_missing_start_walks_up(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    assert project_root_for(root / "not" / "yet" / "here") == root


def test_git_config_value() -> None:
    text = (
        "[core]\n\tbare = false\n"
        '[core "sub"]\n\tworktree = /wrong\n'
        '[CORE]\n\tWorkTree = "../a b" ; comment\n'
        "[remote]\n\tworktree = /wrong\n"
    )
    assert git_config_value(text, "core", "worktree") == "../a b"
    assert git_config_value("[core]\n", "core", "worktree") is None


def test_read_small_text_reports_instead_of_raising(tmp_path: Path) -> None:
    assert read_small_text(tmp_path / "missing", 10).missing
    assert read_small_text(tmp_path, 10).error == "is a directory"
    big = tmp_path / "big"
    big.write_text("x" * 11)
    assert "larger than the 10-byte limit" in (read_small_text(big, 10).error or "")
    bad = tmp_path / "bad"
    bad.write_bytes(b"ok\xff")
    assert read_small_text(bad, 10).error == "is not valid UTF-8 (first bad byte at offset 2)"
    good = tmp_path / "good"
    good.write_text("héllo")
    assert read_small_text(good, 10).text == "héllo"


# -- against a real git, when one is installed -------------------------------------


def _git(*args: str, cwd: Path, home: Path) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    subprocess.run(
        ["git", "-c", "protocol.file.allow=always", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
    )


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_against_real_git(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    lib = tmp_path / "lib"
    lib.mkdir()
    _git("init", "-q", cwd=lib, home=home)
    (lib / "x").write_text("x")
    _git("add", "x", cwd=lib, home=home)
    _git("commit", "-qm", "lib", cwd=lib, home=home)

    main = tmp_path / "main"
    main.mkdir()
    _git("init", "-q", cwd=main, home=home)
    (main / "README").write_text("r")
    _git("add", "README", cwd=main, home=home)
    _git("commit", "-qm", "init", cwd=main, home=home)
    _git("worktree", "add", "-q", str(tmp_path / "wt"), "-b", "wt", cwd=main, home=home)
    _git("submodule", "add", "-q", str(lib), "vendor/lib", cwd=main, home=home)
    _git("commit", "-qm", "sub", cwd=main, home=home)
    sub = main / "vendor" / "lib"
    _git("worktree", "add", "-q", str(tmp_path / "subwt"), "-b", "s", cwd=sub, home=home)

    main = main.resolve()
    assert project_root_for(main / "vendor") == main
    assert project_root_for(tmp_path / "wt") == main
    assert project_root_for(sub) == sub.resolve()
    assert project_root_for(tmp_path / "subwt") == sub.resolve()


# -- which store a path is (one classifier for the editor and `check`) ---------------------


def test_canonical_path_resolves_the_folder_but_not_the_file(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    (real / "target.md").write_text("")
    (real / "memory.md").symlink_to(real / "target.md")
    assert canonical_path(tmp_path / "link" / "memory.md") == str(real.resolve() / "memory.md")
    assert canonical_path(tmp_path / "missing" / "memory.md") == str(
        tmp_path.resolve() / "missing" / "memory.md"
    )


def test_is_pi_memory() -> None:
    assert is_pi_memory(Path("/r/.pi/memory.md"))
    assert not is_pi_memory(Path("/r/pi/memory.md"))
    assert not is_pi_memory(Path("/r/.pi/notes.md"))
    assert not is_pi_memory(Path("memory.md"))


@pytest.fixture
def stores(tmp_path: Path) -> tuple[Path, Path]:
    """A repository root and a global store outside it."""
    root = make_repo(tmp_path / "repo")
    agent = tmp_path / "agent"
    agent.mkdir()
    return root, agent.resolve() / "memory.md"


def test_the_global_store(stores: tuple[Path, Path], tmp_path: Path) -> None:
    global_store = stores[1]
    assert classify_store_path(global_store, global_store) == StorePath("global")
    (tmp_path / "agent-link").symlink_to(global_store.parent)
    linked = tmp_path / "agent-link" / "memory.md"
    assert classify_store_path(linked, global_store) == StorePath("global")


def test_a_global_store_that_is_a_projects_store_names_that_project_and_its_refusal(
    stores: tuple[Path, Path], tmp_path: Path
) -> None:
    """An agent dir that is the project's ``.pi`` (or a link to it): whichever way the
    path is spelled, the file is the global store, and the project it is also the store
    of is named with its refusal, so that ``check FILE`` and a command's ``uri`` say what
    the project's own ``check`` says."""
    root = stores[0]
    (root / ".pi").mkdir()
    store = root / ".pi" / "memory.md"
    (tmp_path / "agent-link").symlink_to(root / ".pi")
    linked = tmp_path / "agent-link" / "memory.md"
    for global_store in (store, linked):
        refused = StorePath("global", root, refusal=shared_store_message(root, global_store))
        for spelled in (store, linked):
            assert classify_store_path(spelled, global_store) == refused, (global_store, spelled)


def test_the_project_store_from_anywhere_it_is_reached(stores: tuple[Path, Path]) -> None:
    root, global_store = stores
    (root / ".pi").mkdir()
    store = root / ".pi" / "memory.md"
    assert classify_store_path(store, global_store) == StorePath("project", root)
    (root / "notes").symlink_to(".pi")  # a folder linked to .pi: resolved, it is the store
    assert classify_store_path(root / "notes" / "memory.md", global_store) == StorePath(
        "project", root
    )


def test_a_pi_symlink_inside_the_project_is_still_its_store(stores: tuple[Path, Path]) -> None:
    root, global_store = stores
    (root / "tools" / "pi").mkdir(parents=True)
    (root / ".pi").symlink_to("tools/pi")
    store = root / ".pi" / "memory.md"
    assert classify_store_path(store, global_store) == StorePath("project", root)


def test_a_pi_memory_that_is_not_the_store_names_the_real_one(
    stores: tuple[Path, Path], tmp_path: Path
) -> None:
    root, global_store = stores
    real = str(root / ".pi" / "memory.md")
    below = root / "sub" / ".pi" / "memory.md"
    assert classify_store_path(below, global_store) == StorePath(None, root, real_store=real)
    wt = make_worktree(root, tmp_path / "wt")
    in_worktree = wt / ".pi" / "memory.md"
    assert classify_store_path(in_worktree, global_store) == StorePath(None, root, real_store=real)


def test_a_refused_project_store_is_its_projects_even_when_it_leads_to_the_global_one(
    stores: tuple[Path, Path],
) -> None:
    root, global_store = stores
    (root / ".pi").symlink_to(global_store.parent)
    found = classify_store_path(root / ".pi" / "memory.md", global_store)
    assert found is not None
    assert (found.scope, found.root, found.real_store) == ("project", root, None)
    assert found.refusal == (
        f"Refusing to use {root}/.pi: it resolves outside the project ({global_store.parent})."
    )


def test_any_other_file_is_no_store(stores: tuple[Path, Path]) -> None:
    root, global_store = stores
    assert classify_store_path(root / "notes.md", global_store) is None
    assert classify_store_path(root / "memory.md", global_store) is None


def test_a_store_path_is_judged_with_one_look_at_its_projects_pi(
    stores: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every store an editor opens and every command's ``uri`` is classified: its
    project's ``.pi`` is judged once (leading out, and being the agent dir's folder, in
    one :func:`project_folder_refusal`), not once for each case."""
    from memory_ls.store import paths

    root, global_store = stores
    (root / ".pi").mkdir()
    (root / "notes").symlink_to(".pi")
    store = root / ".pi" / "memory.md"
    (tmp_path / "agent-link").symlink_to(root / ".pi")
    linked = tmp_path / "agent-link" / "memory.md"
    away = make_repo(tmp_path / "away")
    (away / ".pi").symlink_to(global_store.parent)
    judged: list[Path] = []
    real_refusal = paths.project_folder_refusal

    def counted(project_root: Path, *args: object, **kwargs: object) -> str | None:
        judged.append(project_root)
        return real_refusal(project_root, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(paths, "project_folder_refusal", counted)
    cases = [
        (store, global_store, StorePath("project", root)),
        (root / "notes" / "memory.md", global_store, StorePath("project", root)),
        (store, store, StorePath("global", root, refusal=shared_store_message(root, store))),
        (linked, store, StorePath("global", root, refusal=shared_store_message(root, store))),
        (store, linked, StorePath("global", root, refusal=shared_store_message(root, linked))),
    ]
    for spelled, global_, expected in cases:
        judged.clear()
        assert classify_store_path(spelled, global_) == expected, (spelled, global_)
        assert judged == [root], (spelled, global_)
    judged.clear()
    found = classify_store_path(away / ".pi" / "memory.md", global_store)
    assert found is not None and found.scope == "project" and found.refusal is not None
    assert "resolves outside the project" in found.refusal
    assert judged == [away]


def test_a_path_in_a_pi_that_leads_out_names_its_project_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A path in a project's ``.pi`` that leads out (the folder, a file in it, one with
    ``..`` after it, relative to the current directory) names that project and its
    refusal; a path in a ``.pi`` that stays inside, or in none, names nothing here."""
    from memory_ls.store.paths import project_folder_refusal, refused_folder_on_the_way

    root = make_repo(tmp_path / "p").resolve()
    away = tmp_path / "away"
    away.mkdir()
    (root / ".pi").symlink_to(away)
    refused = (root, project_folder_refusal(root))
    assert refused[1] is not None
    for spelled in (root / ".pi", root / ".pi" / "SYSTEM.md", root / ".pi" / ".." / "x"):
        assert refused_folder_on_the_way(spelled) == refused, spelled
    monkeypatch.chdir(root)
    assert refused_folder_on_the_way(Path(".pi") / "x") == refused
    assert refused_folder_on_the_way(Path("x") / ".." / ".pi") == refused
    inside = make_repo(tmp_path / "q").resolve()
    (inside / "real").mkdir()
    (inside / ".pi").symlink_to("real")
    for spelled in (inside / ".pi" / "x", root / "src", Path("src"), Path("/")):
        assert refused_folder_on_the_way(spelled) is None, spelled


def test_a_store_under_a_refused_pi_is_classified_as_that_projects_refused_store(
    tmp_path: Path,
) -> None:
    from memory_ls.store.paths import classify_store_path

    root, elsewhere, agent = tmp_path / "root", tmp_path / "elsewhere", tmp_path / "agent"
    (root / ".git").mkdir(parents=True)
    (elsewhere / "x" / ".pi").mkdir(parents=True)
    (elsewhere / "x" / ".pi" / "memory.md").write_text("- out there\n")
    agent.mkdir()
    global_store = agent / "memory.md"
    message = f"Refusing to use {root}/.pi: it resolves outside the project ({elsewhere})."
    (root / ".pi").symlink_to(elsewhere)
    nested = root / ".pi" / "x" / ".pi" / "memory.md"
    found = classify_store_path(nested, global_store)
    assert found is not None
    assert (found.scope, found.root, found.real_store, found.refusal) == (
        "project",
        root,
        None,
        message,
    )
    (root / ".pi").unlink()
    (root / ".pi").symlink_to(tmp_path / "gone")  # dangling, leading out
    found = classify_store_path(nested, global_store)
    assert found is not None and (found.root, found.scope) == (root, "project")
    assert found.refusal is not None
    (root / ".pi").unlink()
    (root / ".pi").symlink_to(".pi")  # a loop
    found = classify_store_path(nested, global_store)
    assert found is not None and (found.root, found.scope) == (root, "project")
    assert found.refusal is not None
    (root / ".pi").unlink()
    (root / ".pi").write_text("a file, not a folder\n")  # nothing can lie under it
    found = classify_store_path(nested, global_store)
    assert found is not None and found.refusal is None and found.scope is None
    # The global store itself is named by the agent dir: a link on its way is the user's.
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".git").mkdir()
    (tmp_path / "dotfiles" / "agent").mkdir(parents=True)
    (tmp_path / "home" / ".pi").symlink_to(tmp_path / "dotfiles")  # leads out of "home"
    linked_global = tmp_path / "home" / ".pi" / "agent" / "memory.md"
    found = classify_store_path(linked_global, linked_global)
    assert found is not None and (found.scope, found.refusal) == ("global", None)
    # Also an agent dir named `.pi` deeper in it (`<root>/.pi/x/.pi`), named as it is.
    (elsewhere / "x" / ".pi").mkdir(parents=True, exist_ok=True)
    (root / ".pi").unlink()
    (root / ".pi").symlink_to(elsewhere)
    found = classify_store_path(nested, nested)
    assert found is not None and found.scope == "global"
    assert found.refusal is None or "resolves outside" not in found.refusal


def test_an_agent_dir_that_is_a_pi_leading_out_names_the_global_store(
    stores: tuple[Path, Path], tmp_path: Path
) -> None:
    """The agent dir is ``<root>/.pi`` as written, and that ``.pi`` leads out: the file is
    the global store under every spelling (the agent dir is the user's choice), with
    ``<root>`` and its scope's refusal, the ``.pi``'s own (SPEC §1: the two scopes never
    become one file). It was ``<root>``'s refused project store as written."""
    root = stores[0]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / ".pi").symlink_to(elsewhere)
    store = root / ".pi" / "memory.md"
    refusal = outside_project_message(root, str(elsewhere.resolve()))
    expected = StorePath("global", root, refusal=refusal)
    for spelled in (store, elsewhere / "memory.md"):
        assert classify_store_path(spelled, store) == expected, spelled
    assert shared_file_refusal(root, store, refusal) == refusal
    # Named by another path (its real one), it is a store of its own: the project's is
    # a link leading out, refused beside it (README: two reports in `check`).
    real = elsewhere.resolve() / "memory.md"
    assert classify_store_path(store, real) == StorePath("project", root, refusal=refusal)
    assert classify_store_path(real, real) == StorePath("global")
    assert shared_file_refusal(root, real, refusal) is None
