"""A ``.pi`` that is a symlink loop, and a store that is a hard link (SPEC §1, §3).

A loop resolves to no folder at all: it is refused, and the message says it is a loop
(it said "it resolves outside the project", naming the loop's own path as where it led).
A project ``memory.md`` hard-linked to the global one is one file under two names, as
an agent dir set to the project's ``.pi`` is: the project scope is refused, the file
stays global memory. And no store with other names is ever replaced: the rename would
give this name a new file and leave the others the old notes, two stores where there
was one, without a word.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memory_ls.store import files
from memory_ls.store.config import load_config
from memory_ls.store.files import hard_links_message, replace_refusal
from memory_ls.store.paths import (
    StorePath,
    classify_store_path,
    goes_round,
    hard_linked_store_message,
    project_folder_refusal,
    real_path,
    shared_file_refusal,
    symlink_chain_message,
    symlink_loop_message,
    too_many_links,
    unfollowable,
)
from tests.conftest import Workspace, store_text

# -- a `.pi` that loops -----------------------------------------------------------------


def test_the_loop_message_is_exact(tmp_path: Path) -> None:
    assert symlink_loop_message(tmp_path / "p") == (
        f"Refusing to use {tmp_path}/p/.pi: it is a symlink that leads round in a loop, "
        "never to a folder."
    )


@pytest.mark.parametrize("loop", ["self", "two links", "into a loop"])
def test_a_pi_that_loops_is_refused_as_a_loop(workspace: Workspace, loop: str) -> None:
    root = workspace.root
    if loop == "self":
        (root / ".pi").symlink_to(".pi")
    elif loop == "two links":
        (root / ".pi").symlink_to(".pj")
        (root / ".pj").symlink_to(".pi")
    else:  # `.pi` leads to a link that loops on itself
        (root / ".pi").symlink_to("a")
        (root / "a").symlink_to("a")
    message = symlink_loop_message(root)
    assert project_folder_refusal(root) == message
    assert project_folder_refusal(root, global_store=workspace.global_store) == message
    found = classify_store_path(root / ".pi" / "memory.md", workspace.global_store)
    assert found == StorePath("project", root, refusal=message)
    workspace.write("global", ["global note"])
    rt = workspace.runtime()
    for action, args in (("add", {"text": "x"}), ("list", {}), ("clear", {})):
        result = rt.run(action, args)
        assert result["error"] == message, action
        assert (result["project"], result["global"]) == ([], ["global note"]), action
    assert rt.add("another", "global")["changed"] is True
    assert rt.store_refusal("project") == message


def test_an_agent_dir_that_is_the_looping_pi_refuses_the_project_with_the_loop(
    workspace: Workspace,
) -> None:
    """The agent dir named as ``<root>/.pi`` where that ``.pi`` loops: the project scope
    gets the loop's refusal (as it gets the ``.pi``'s own where it leads out)."""
    (workspace.root / ".pi").symlink_to(".pi")
    agent = workspace.root / ".pi"
    message = symlink_loop_message(workspace.root)
    refusal = project_folder_refusal(workspace.root, global_store=agent / "memory.md")
    assert refusal == message
    assert shared_file_refusal(workspace.root, agent / "memory.md", refusal) == message


def make_chain(folder: Path, links: int) -> None:
    """``folder`` leads to a real folder through ``links`` symlinks, each named once: more
    than the system follows (40 on Linux, 32 on macOS), and no loop."""
    (folder.parent / "real").mkdir()
    before = "real"
    for i in range(links - 1):
        (folder.parent / f"link{i}").symlink_to(before)
        before = f"link{i}"
    folder.symlink_to(before)


def test_the_chain_message_is_exact(tmp_path: Path) -> None:
    assert symlink_chain_message(tmp_path / "p") == (
        f"Refusing to use {tmp_path}/p/.pi: it is a chain of more symlinks than the system "
        "follows, so it cannot be opened."
    )


@pytest.mark.parametrize("links", [45, 1200])
def test_a_pi_through_too_many_links_is_refused_as_a_chain_not_a_loop(
    workspace: Workspace, links: int
) -> None:
    """The kernel cannot open it (ELOOP) either, but it is no loop; 1,200 links once ended
    every verb with RecursionError (realpath's)."""
    root = workspace.root
    make_chain(root / ".pi", links)
    assert too_many_links(root / ".pi") == "chain"
    message = symlink_chain_message(root)
    assert project_folder_refusal(root) == message
    assert project_folder_refusal(root, global_store=workspace.global_store) == message
    workspace.write("global", ["global note"])
    rt = workspace.runtime()
    result = rt.run("add", {"text": "x"})
    assert result["error"] == message
    assert rt.store_refusal("project") == message
    assert not (root / "real" / "memory.md").exists()


@pytest.mark.parametrize("loop", ["self", "two links", "into a loop"])
def test_a_loop_at_the_end_of_a_long_chain_is_a_loop(workspace: Workspace, loop: str) -> None:
    root = workspace.root
    make_chain(root / ".pi", 45)
    (root / "real").rmdir()
    if loop == "self":
        (root / "real").symlink_to("real")
    elif loop == "two links":
        (root / "real").symlink_to("other")
        (root / "other").symlink_to("real")
    else:  # through a folder on the way: real -> inside/x, inside -> real
        (root / "real").symlink_to("inside/x")
        (root / "inside").symlink_to("real")
    assert too_many_links(root / ".pi") == "loop"
    assert project_folder_refusal(root) == symlink_loop_message(root)


def test_a_link_met_again_once_followed_is_no_loop(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "l").symlink_to("sub")
    (tmp_path / "twice").symlink_to("l/../l/../l")
    assert not goes_round(tmp_path / "twice")
    assert too_many_links(tmp_path / "twice") is None
    (tmp_path / "dead").symlink_to("nowhere/at/all")
    assert not goes_round(tmp_path / "dead")
    assert too_many_links(tmp_path / "dead") is None
    (tmp_path / "round").symlink_to("l/../round")
    assert goes_round(tmp_path / "round")
    assert too_many_links(tmp_path / "round") == "loop"


def test_real_path_answers_as_realpath(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same walk without recursion: relative, absolute and ``..`` targets, links to
    links, a link met twice, dangling links and a loop, from a path or from the current
    directory."""
    (tmp_path / "d" / "e").mkdir(parents=True)
    (tmp_path / "rel").symlink_to("d/e")
    (tmp_path / "abs").symlink_to(tmp_path / "d")
    (tmp_path / "up").symlink_to("d/e/..")
    (tmp_path / "d" / "e" / "back").symlink_to("../../rel")
    (tmp_path / "twice").symlink_to("rel/../../rel/back")
    (tmp_path / "dead").symlink_to("nowhere/x")
    (tmp_path / "self").symlink_to("self")
    (tmp_path / "d" / "f").write_text("")
    monkeypatch.chdir(tmp_path / "d")
    for name in (
        "", ".", "..", "e", "f", "f/..", "../rel", "../rel/../f", "../abs/e/back/back",
        "../up/f", "../twice", "../twice/x/..", "../dead", "../dead/../y", "../self",
        str(tmp_path / "abs" / ".." / "up"), "/", "//", str(tmp_path) + "//rel/./",
    ):  # fmt: skip
        assert real_path(name) == os.path.realpath(name), name
        assert real_path(Path(name)) == os.path.realpath(Path(name)), name


def test_real_path_follows_a_long_chain_to_its_end(tmp_path: Path) -> None:
    """Python 3.11's realpath ends a chain of 1,100 links with RecursionError."""
    make_chain(tmp_path / "chain", 1100)
    assert real_path(tmp_path / "chain" / "x") == str(tmp_path / "real" / "x")
    assert too_many_links(tmp_path / "chain") == "chain"
    assert unfollowable(tmp_path / "chain") == (
        "is a chain of more symlinks than the system follows"
    )
    (tmp_path / "loop").symlink_to("loop")
    assert unfollowable(tmp_path / "loop") == "is a symlink that leads back to itself"
    assert unfollowable(tmp_path / "real") is None


# -- a project store hard-linked to the global one ---------------------------------------


@pytest.fixture
def linked(workspace: Workspace) -> Workspace:
    """``<root>/.pi/memory.md`` is a hard link to ``<agent>/memory.md`` (one inode)."""
    workspace.write("global", ["shared note"])
    (workspace.root / ".pi").mkdir()
    os.link(workspace.global_store, workspace.project_store)
    return workspace


def test_the_hard_link_message_is_exact(tmp_path: Path) -> None:
    assert hard_linked_store_message(tmp_path / "p", tmp_path / "a" / "memory.md") == (
        f"Refusing to use {tmp_path}/p/.pi: its memory.md is a hard link to the global memory "
        f"file ({tmp_path}/a/memory.md); project and global memory must be two files."
    )
    assert hard_links_message(tmp_path / "m.md", 3) == (
        "Memory file has 3 hard links (other names for the same file); replacing it would "
        "leave the others with the old notes. Remove the other names, or make this one a "
        f"copy of its own, to change it: {tmp_path}/m.md"
    )


def test_a_store_with_other_names_is_never_replaced() -> None:
    path = Path("/p/memory.md")
    assert replace_refusal(path, 0o100644, 1000, 1000, 1000, [1000], 2) == hard_links_message(
        path, 2
    )
    assert replace_refusal(path, 0o100644, 0, 0, 0, [0], 5) == hard_links_message(path, 5)
    assert replace_refusal(path, 0o100644, 1000, 1000, 1000, [1000], 1) is None


def test_the_project_scope_is_refused_and_the_file_is_global_memory(linked: Workspace) -> None:
    ws = linked
    message = hard_linked_store_message(ws.root, ws.global_store)
    assert project_folder_refusal(ws.root) is None  # without the global store: a plain file
    assert project_folder_refusal(ws.root, global_store=ws.global_store) == message
    assert shared_file_refusal(ws.root, ws.global_store, message) == message
    # Opened as the project's store, it is the global store's file (as a bind mount is).
    assert classify_store_path(ws.project_store, ws.global_store) == StorePath(
        "global", ws.root, refusal=message
    )
    rt = ws.runtime()
    assert rt.store_refusal("project") == message
    assert rt.shared_store_refusal("global") == message
    listed = rt.run("list", {})
    assert (listed["project"], listed["global"], listed["error"]) == (
        [],
        ["shared note"],
        message,
    )
    assert rt.body().count("- shared note") == 1  # recalled once, as global memory
    before = ws.read("global")
    for action, args in (
        ("add", {"text": "planted"}),
        ("forget", {"text": "shared note"}),
        ("move", {"text": "shared note"}),
        ("move", {"text": "shared note", "scope": "global"}),
        ("clear", {}),
    ):
        result = rt.run(action, args)
        assert result["error"] == message, (action, args)
        assert result["changed"] is False
    assert ws.read("global") == before
    assert os.stat(ws.project_store).st_ino == os.stat(ws.global_store).st_ino  # still linked


def test_a_global_write_is_refused_rather_than_splitting_the_file(linked: Workspace) -> None:
    """Replacing the global store would leave ``.pi/memory.md`` the old file: the project
    scope would come back holding a copy of every global note (recalled twice)."""
    ws = linked
    rt = ws.runtime()
    result = rt.add("new global note", "global")
    assert result["error"] == hard_links_message(ws.global_store, 2)
    assert (result["changed"], result["global"]) == (False, ["shared note"])
    assert ws.text("global") == store_text("shared note")
    assert sorted(os.listdir(ws.agent_dir)) == ["memory.md"]  # no temporary left
    # Once the user gives the project its own file, both scopes work.
    ws.project_store.unlink()
    assert rt.add("new global note", "global")["changed"] is True
    assert rt.add("a project note", "project")["changed"] is True
    assert rt.notes("global") == ["shared note", "new global note"]
    assert rt.notes("project") == ["a project note"]


def test_a_hard_link_made_after_both_views_were_cached_is_seen_before_a_write(
    workspace: Workspace,
) -> None:
    """SPEC §3 freshness: the views cached before the link are not trusted for a write."""
    workspace.write("global", ["g"])
    workspace.write("project", ["p"])
    rt = workspace.runtime()
    assert (rt.notes("project"), rt.notes("global")) == (["p"], ["g"])
    workspace.project_store.unlink()
    os.link(workspace.global_store, workspace.project_store)
    message = hard_linked_store_message(workspace.root, workspace.global_store)
    assert rt.add("x", "project")["error"] == message
    assert rt.add("x", "global")["error"] == hard_links_message(workspace.global_store, 2)
    assert rt.notes("project") == []
    assert workspace.text("global") == store_text("g")


def test_any_store_with_another_name_is_not_replaced(workspace: Workspace, tmp_path: Path) -> None:
    """A project store hard-linked to a file that is no store (a backup's copy, another
    project's store): its scope works for reading; a write is refused, not a split."""
    store = workspace.write("project", ["p"])
    other = tmp_path / "elsewhere.md"
    os.link(store, other)
    rt = workspace.runtime()
    assert rt.store_refusal("project") is None
    assert rt.notes("project") == ["p"]
    assert rt.add("x", "project")["error"] == hard_links_message(store, 2)
    assert other.read_text() == store.read_text() == store_text("p")
    # The doctor says so before anyone tries (it writes nothing).
    report = rt.doctor_report()
    assert report["project"].get("readOnlyReason") == hard_links_message(store, 2)
    assert f"project: {hard_links_message(store, 2)}" in report["problems"]
    other.unlink()
    assert "readOnlyReason" not in rt.doctor_report()["project"]


def test_a_link_made_right_before_the_rename_is_refused(
    workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name given after the first look, before the rename: seen at the last look."""
    store = workspace.write("project", ["p"])
    real_look = files._look

    def look_after_a_link(name: str | Path, dir_fd: int | None) -> tuple[int | None, bytes | None]:
        if not (tmp_path / "late.md").exists():
            os.link(store, tmp_path / "late.md")
        return real_look(name, dir_fd)

    monkeypatch.setattr(files, "_look", look_after_a_link)
    result = workspace.runtime().add("x", "project")
    assert result["error"] == hard_links_message(store, 2)
    assert store.read_text() == store_text("p")
    assert sorted(os.listdir(store.parent)) == ["memory.md"]


@pytest.mark.parametrize("step", ["_set_mode", "verify_folder"])
def test_an_export_target_linked_right_before_the_rename_is_refused(
    workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """Export looks at its target's names before it writes and again right before its
    rename, as the store's writer does: ``CLAUDE.md`` hard-linked to ``AGENTS.md`` while
    the new file was written would keep the old text, apart from then on."""
    from memory_ls.store.bridges import other_names_message

    workspace.write("project", ["use pnpm"])
    agents = workspace.root / "AGENTS.md"
    agents.write_text("# Agents\n")
    claude = workspace.root / "CLAUDE.md"
    before = set(os.listdir(workspace.root))
    real_step = getattr(files, step)

    def linked_meanwhile(*args: object) -> None:
        # (While the new file is written: after the first look at the old one.)
        if not claude.exists():
            os.link(agents, claude)
        real_step(*args)

    monkeypatch.setattr(files, step, linked_meanwhile)
    result = workspace.runtime(trusted=True).export_to(agents)
    assert claude.exists()  # (the link was made, after the first look)
    assert result["error"] == other_names_message(agents, 2)
    assert result["changed"] is False
    assert agents.read_text() == claude.read_text() == "# Agents\n"
    assert os.stat(agents).st_ino == os.stat(claude).st_ino
    assert set(os.listdir(workspace.root)) == before | {"CLAUDE.md"}  # no temporary left


def test_the_projects_own_bytefly_json_still_counts(linked: Workspace) -> None:
    """Only its memory.md is the global file: the ``.pi`` folder is the project's, and so
    is its ``bytefly.json`` (an agent dir that *is* the ``.pi`` has one file for both)."""
    ws = linked
    (ws.root / ".pi" / "bytefly.json").write_text('{"memory": {"maxInjectBytes": 600}}')
    config = load_config(ws.agent_dir, ws.root, trusted=True)
    assert config.max_inject_bytes == 600


# -- an inbox with other names ------------------------------------------------------------


def test_an_inbox_with_other_names_is_never_replaced_or_deleted(
    workspace: Workspace, tmp_path: Path
) -> None:
    """The inbox is written by the store's safe path (SPEC §12): hard-linked elsewhere (a
    second project made with ``cp -al``), a propose, accept or reject would give this name
    a new file and leave the other name the old proposals, two inboxes from then on, or,
    before that, let one project's proposal be accepted into the other's store."""
    from memory_ls.store.paths import INBOX_FILE_NAME
    from memory_ls.store.review import Review

    workspace.write("project", ["use pnpm"])
    store = workspace.read("project")
    review = Review(workspace.runtime(trusted=True))
    first, _ = review.propose("add", {"text": "first proposal"}, "cli")
    assert "error" not in first
    inbox = workspace.root / ".pi" / INBOX_FILE_NAME
    other = tmp_path / "elsewhere.jsonl"
    os.link(inbox, other)
    before = other.read_bytes()
    message = hard_links_message(inbox, 2)
    result, _ = review.propose("add", {"text": "second proposal"}, "cli")
    assert result["error"] == message
    rejected = review.reject([first["proposal"]["id"]])
    accepted = review.accept([first["proposal"]["id"]])
    assert message in json.dumps(rejected) and message in json.dumps(accepted)
    assert inbox.read_bytes() == other.read_bytes() == before
    assert os.stat(inbox).st_nlink == 2
    assert workspace.read("project") == store  # (the accept took nothing)


def test_the_doctor_reports_an_inbox_with_other_names(workspace: Workspace, tmp_path: Path) -> None:
    """As it reports a store's (its read-only reason): before a propose, accept or reject
    is refused. Either scope's, trusted or not; not a refused project's (said once, as the
    store's refusal)."""
    from memory_ls.store.paths import INBOX_FILE_NAME
    from memory_ls.store.review import Review

    workspace.write("project", ["use pnpm"])
    review = Review(workspace.runtime(trusted=True))
    assert "error" not in review.propose("add", {"text": "a proposal"}, "cli")[0]
    assert (
        "error" not in review.propose("add", {"text": "a global one", "scope": "global"}, "cli")[0]
    )
    inboxes = [workspace.root / ".pi" / INBOX_FILE_NAME, workspace.agent_dir / INBOX_FILE_NAME]
    others = [tmp_path / "project.jsonl", tmp_path / "global.jsonl"]
    assert all(inbox.exists() for inbox in inboxes)
    assert not any("hard links" in p for p in workspace.runtime().doctor_report()["problems"])
    for inbox, other in zip(inboxes, others, strict=True):
        os.link(inbox, other)
    for trusted in (True, False):
        rt = workspace.runtime(trusted=trusted)
        report = rt.doctor_report()
        for inbox in inboxes:
            assert f"inbox: {hard_links_message(inbox, 2)}" in report["problems"]
        assert "readOnlyReason" not in report["project"]  # (the stores are fine)
        assert "readOnlyReason" not in report["global"]
        assert f"- inbox: {hard_links_message(inboxes[0], 2)}" in rt.doctor_text()
    for other in others:
        other.unlink()
    assert not any("hard links" in p for p in workspace.runtime().doctor_report()["problems"])
    # A refused project's inbox is never read or written: its store's refusal says so.
    outside = tmp_path / "outside"
    (workspace.root / ".pi").rename(outside)
    (workspace.root / ".pi").symlink_to(outside)
    os.link(outside / INBOX_FILE_NAME, others[0])
    problems = workspace.runtime().doctor_report()["problems"]
    assert not any("hard links" in p for p in problems)
    assert not any(p.startswith("inbox:") for p in problems), problems


def test_an_inbox_linked_while_it_is_written_is_refused(
    workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name given after the first look, before the rename (as for a store)."""
    from memory_ls.store.paths import INBOX_FILE_NAME
    from memory_ls.store.review import Review

    workspace.write("project", ["use pnpm"])
    review = Review(workspace.runtime(trusted=True))
    assert "error" not in review.propose("add", {"text": "first proposal"}, "cli")[0]
    inbox = workspace.root / ".pi" / INBOX_FILE_NAME
    before = inbox.read_bytes()
    real_set_mode = files._set_mode

    def set_mode_after_a_link(fd: int, path: Path, mode: int) -> None:
        # (While the new inbox is written: after write_store's first look at the old one.)
        if not (tmp_path / "late.jsonl").exists():
            os.link(inbox, tmp_path / "late.jsonl")
        real_set_mode(fd, path, mode)

    monkeypatch.setattr(files, "_set_mode", set_mode_after_a_link)
    result, _ = review.propose("add", {"text": "second proposal"}, "cli")
    assert result["error"] == hard_links_message(inbox, 2)
    assert inbox.read_bytes() == (tmp_path / "late.jsonl").read_bytes() == before
    assert sorted(os.listdir(inbox.parent)) == [INBOX_FILE_NAME, "memory.md"]
