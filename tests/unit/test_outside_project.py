"""The project store stays inside its project, and nothing creates a project (SPEC §1).

A cloned repository can ship ``.pi`` as a symlink; when it resolves outside the
project, the project store is refused everywhere with one exact message. A
missing project root is never created by a write.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_ls.core.actions import Change, apply_add
from memory_ls.store.files import folder_changed_message, store_lock
from memory_ls.store.paths import (
    no_project_message,
    outside_project_message,
    project_folder_refusal,
)
from memory_ls.store.runtime import MemoryRuntime
from tests.conftest import Workspace, new_project, store_text


def refusal_for(root: Path) -> str:
    return outside_project_message(root, os.path.realpath(root / ".pi"))


# -- the one decision ----------------------------------------------------------------


def test_the_message_is_exact(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    assert outside_project_message(root, "/elsewhere") == (
        f"Refusing to use {root}/.pi: it resolves outside the project (/elsewhere)."
    )


def test_no_pi_or_a_real_pi_is_fine(workspace: Workspace) -> None:
    assert project_folder_refusal(workspace.root) is None
    (workspace.root / ".pi").mkdir()
    assert project_folder_refusal(workspace.root) is None


def test_a_symlink_resolving_inside_the_project_is_fine(workspace: Workspace) -> None:
    (workspace.root / "config" / "pi").mkdir(parents=True)
    (workspace.root / ".pi").symlink_to("config/pi")
    assert project_folder_refusal(workspace.root) is None


def test_a_dangling_symlink_inside_the_project_is_fine(workspace: Workspace) -> None:
    (workspace.root / ".pi").symlink_to("not-yet")
    assert project_folder_refusal(workspace.root) is None


def test_a_symlink_to_the_agent_dir_is_refused(workspace: Workspace) -> None:
    (workspace.root / ".pi").symlink_to(workspace.agent_dir)
    assert project_folder_refusal(workspace.root) == outside_project_message(
        workspace.root, str(workspace.agent_dir)
    )


def test_a_relative_symlink_out_of_the_project_is_refused(
    workspace: Workspace, tmp_path: Path
) -> None:
    (tmp_path / "elsewhere").mkdir()
    (workspace.root / ".pi").symlink_to("../elsewhere")
    real = os.path.realpath(tmp_path / "elsewhere")
    assert project_folder_refusal(workspace.root) == outside_project_message(workspace.root, real)


def test_a_symlink_to_the_parent_folder_is_refused(workspace: Workspace) -> None:
    (workspace.root / ".pi").symlink_to("..")
    real = str(workspace.root.parent)
    assert project_folder_refusal(workspace.root) == outside_project_message(workspace.root, real)


def test_a_dangling_symlink_outside_is_refused(workspace: Workspace, tmp_path: Path) -> None:
    target = tmp_path / "gone" / "pi"
    (workspace.root / ".pi").symlink_to(target)
    assert project_folder_refusal(workspace.root) == outside_project_message(
        workspace.root, os.path.realpath(target)
    )


def test_a_sibling_whose_name_extends_the_root_is_outside(tmp_path: Path) -> None:
    root = new_project(tmp_path / "repo").resolve()
    (tmp_path / "repo-evil").mkdir()
    (root / ".pi").symlink_to(tmp_path / "repo-evil")
    assert project_folder_refusal(root) is not None


def test_a_root_reached_through_a_symlink_is_compared_by_real_paths(tmp_path: Path) -> None:
    real = new_project(tmp_path / "real")
    (real / ".pi").mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert project_folder_refusal(link) is None


# -- the runtime refuses every access -------------------------------------------------


@pytest.fixture
def pi_to_agent(workspace: Workspace) -> Workspace:
    """The hostile clone: ``.pi`` points at the agent dir, which holds a global note."""
    workspace.write("global", ["global note"])
    (workspace.root / ".pi").symlink_to(workspace.agent_dir)
    return workspace


def test_every_mutation_is_refused_and_the_global_note_survives(pi_to_agent: Workspace) -> None:
    ws = pi_to_agent
    runtime = ws.runtime(trusted=True)
    message = refusal_for(ws.root)
    before = ws.read("global")
    calls: list[tuple[str, dict[str, object]]] = [
        ("add", {"text": "x"}),
        ("forget", {"text": "global note"}),
        ("update", {"text": "global note", "to": "y"}),
        ("merge", {"text": "global note", "other": "z", "to": "w"}),
        ("move", {"text": "global note"}),
        ("clear", {}),
    ]
    for action, args in calls:
        result = runtime.run(action, args)
        assert result["error"] == message, action
        assert result["changed"] is False
        assert result["project"] == []
        assert result["global"] == ["global note"]
    assert ws.read("global") == before


def test_moving_into_a_refused_project_is_refused(pi_to_agent: Workspace) -> None:
    runtime = pi_to_agent.runtime(trusted=True)
    result = runtime.move("global note", "global")
    assert result["error"] == refusal_for(pi_to_agent.root)
    assert pi_to_agent.read("global") == store_text("global note").encode()


def test_the_refusal_comes_before_untrusted_and_read_only(pi_to_agent: Workspace) -> None:
    message = refusal_for(pi_to_agent.root)
    assert pi_to_agent.runtime(trusted=False).add("x")["error"] == message
    assert pi_to_agent.runtime(read_only=True).add("x")["error"] == message
    assert pi_to_agent.runtime(trusted=False).refusal("project") == message


def test_list_shows_the_scope_empty_with_the_error(pi_to_agent: Workspace) -> None:
    for trusted in (True, False, None):
        result = pi_to_agent.runtime(trusted=trusted).list()
        assert result["project"] == []
        assert result["global"] == ["global note"]
        assert result["error"] == refusal_for(pi_to_agent.root)


def test_recall_leaves_the_project_out(pi_to_agent: Workspace) -> None:
    runtime = pi_to_agent.runtime(trusted=True)
    body = runtime.inject()["body"]
    assert body is not None
    assert "project:" not in body
    assert body.count("- global note") == 1


def test_recall_drops_notes_read_before_pi_became_a_symlink(
    workspace: Workspace, tmp_path: Path
) -> None:
    workspace.write("project", ["inside note"])
    runtime = workspace.runtime(trusted=True)
    assert runtime.recall_notes("project") == ["inside note"]
    (workspace.root / ".pi").rename(tmp_path / "moved")
    (workspace.root / ".pi").symlink_to(tmp_path / "moved")
    assert runtime.recall_notes("project") == []
    assert runtime.notes("project") == []
    assert runtime.view("project").file.error == refusal_for(workspace.root)


def test_the_doctor_reports_a_problem(pi_to_agent: Workspace) -> None:
    report = pi_to_agent.runtime(trusted=True).doctor_report()
    message = refusal_for(pi_to_agent.root)
    assert f"project: {message}" in report["problems"]
    assert report["project"]["notes"] == 0


def test_path_and_global_scope_keep_working(pi_to_agent: Workspace) -> None:
    runtime = pi_to_agent.runtime(trusted=True)
    assert runtime.add("another", "global")["changed"] is True
    assert runtime.notes("global") == ["global note", "another"]


def test_a_pi_symlink_inside_the_project_is_written_through(workspace: Workspace) -> None:
    (workspace.root / "config" / "pi").mkdir(parents=True)
    (workspace.root / ".pi").symlink_to("config/pi")
    result = workspace.runtime(trusted=True).add("kept inside")
    assert "error" not in result
    assert (workspace.root / "config" / "pi" / "memory.md").read_text() == store_text("kept inside")


def test_a_symlinked_memory_file_keeps_its_own_message(workspace: Workspace) -> None:
    (workspace.root / ".pi").mkdir()
    (workspace.root / "notes.md").write_text(store_text("a"))
    workspace.project_store.symlink_to(workspace.root / "notes.md")
    result = workspace.runtime(trusted=True).add("b")
    assert (
        result["error"] == f"Refusing to use the symlinked memory file: {workspace.project_store}"
    )


def test_a_symlinked_agent_dir_is_the_users_choice(workspace: Workspace, tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "agent"
    real.mkdir(parents=True)
    link = tmp_path / "agent-link"
    link.symlink_to(real)
    runtime = MemoryRuntime(workspace.root, agent_dir=str(link), trusted=True)
    assert runtime.add("through the link", "global")["changed"] is True
    assert (real / "memory.md").read_text() == store_text("through the link")


# -- races: the write path decides again under the lock --------------------------------


def test_a_pi_symlink_planted_before_the_lock_is_refused(
    workspace: Workspace, tmp_path: Path
) -> None:
    """``.pi`` is missing when the action starts and a symlink when the folder is locked."""
    outside = tmp_path / "outside"
    outside.mkdir()
    runtime = workspace.runtime(trusted=True)
    planted: list[bool] = []

    def plant_then_add(content: str) -> Change:
        if not planted:  # runs before the lock, since .pi does not exist yet
            (workspace.root / ".pi").symlink_to(outside)
            planted.append(True)
        return apply_add(content, "x")

    change = runtime._mutate("project", plant_then_add)
    assert change.error == outside_project_message(workspace.root, str(outside.resolve()))
    assert list(outside.iterdir()) == []


def test_a_pi_swapped_during_the_write_does_not_redirect_it(
    workspace: Workspace, tmp_path: Path
) -> None:
    """A folder swapped after the lock is refused right before the rename: nothing is written."""
    workspace.write("project", ["a"])
    outside = tmp_path / "outside"
    outside.mkdir()
    moved = tmp_path / "moved-pi"
    runtime = workspace.runtime(trusted=True)

    def swap_then_add(content: str) -> Change:
        (workspace.root / ".pi").rename(moved)
        (workspace.root / ".pi").symlink_to(outside)
        return apply_add(content, "b")

    change = runtime._mutate("project", swap_then_add)
    assert change.error == folder_changed_message(workspace.root / ".pi")
    assert list(outside.iterdir()) == []
    assert (moved / "memory.md").read_text() == store_text("a")
    assert sorted(p.name for p in moved.iterdir()) == ["memory.md"]


# -- nothing creates a project -----------------------------------------------------------


def test_a_missing_project_root_is_never_created(tmp_path: Path) -> None:
    root = tmp_path / "typo" / "deep" / "dir"
    agent = tmp_path / "agent"
    runtime = MemoryRuntime(root, agent_dir=str(agent), trusted=True)
    for action, args in (("add", {"text": "x"}), ("clear", {})):
        result = runtime.run(action, args)
        assert result["error"] == no_project_message(root), action
    assert not (tmp_path / "typo").exists()
    assert runtime.refusal("project") == no_project_message(root)


def test_the_first_global_write_creates_the_agent_dir(workspace: Workspace) -> None:
    agent = workspace.home / ".pi" / "agent"
    runtime = MemoryRuntime(workspace.root, agent_dir=str(agent), trusted=True)
    assert runtime.add("first", "global")["changed"] is True
    assert (agent / "memory.md").read_text() == store_text("first")


def test_the_first_project_write_creates_only_pi(workspace: Workspace) -> None:
    assert workspace.runtime(trusted=True).add("first")["changed"] is True
    assert workspace.project_store.read_text() == store_text("first")


def test_the_store_lock_creates_no_missing_parent(tmp_path: Path) -> None:
    store = tmp_path / "missing" / ".pi" / "memory.md"
    with pytest.raises(FileNotFoundError), store_lock(store):
        pass
    assert not (tmp_path / "missing").exists()
