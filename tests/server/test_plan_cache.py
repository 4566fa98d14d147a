"""The workspace's recall-plan cache, in process (no transport, no client).

The core decides when a cached plan can be updated in place
(``core.recall.incremental_plan``); the workspace only keeps one plan per
project and a decision id that changes only when a fresh plan was needed.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_ls.core.recall import RecallPlan, recall_plan
from memory_ls.core.text import HEADER
from memory_ls.server.documents import MemoryDocument, Span
from memory_ls.server.settings import Settings
from memory_ls.server.workspace import Projects
from memory_ls.store.runtime import MemoryRuntime
from tests.conftest import Workspace

CAP = 512
BIG = "b" * 400
"""Left out under :data:`CAP`."""


def store_text(notes: list[str]) -> str:
    return f"{HEADER}\n\n" + "".join(f"- {n}\n" for n in notes)


def setup(workspace: Workspace, project: list[str], global_: list[str]) -> Projects:
    (workspace.agent_dir / "bytefly.json").write_text(
        json.dumps({"memory": {"maxInjectBytes": CAP}})
    )
    workspace.write("project", store_text(project))
    workspace.write("global", store_text(global_))
    projects = Projects()
    projects.configure(Settings(agent_dir=str(workspace.agent_dir), trusted=True), [workspace.root])
    return projects


def open_store(projects: Projects, path: Path) -> MemoryDocument:
    doc = MemoryDocument(path.as_uri(), path, path.read_text(), 1)
    projects.open(doc)
    return doc


def replace_line(doc: MemoryDocument, line: int, text: str) -> None:
    """Type over one whole line, as an editor's incremental change does."""
    doc.apply_change(Span(line, 0, line, len(doc.lines[line])), text, "utf-16")


def fresh(projects: Projects, runtime: MemoryRuntime) -> RecallPlan:
    config = runtime.config()
    return recall_plan(
        projects.store_notes(runtime, "project"),
        projects.store_notes(runtime, "global"),
        config.max_inject_bytes,
        config.inject,
    )


def test_the_plan_follows_the_open_buffer(workspace: Workspace) -> None:
    projects = setup(workspace, ["a"], ["g"])
    runtime = projects.default_runtime()
    doc = open_store(projects, workspace.project_store)
    replace_line(doc, 2, "- typed in the buffer")
    plan, _ = projects.plan(runtime)
    assert plan.project == ("typed in the buffer",)
    assert plan == fresh(projects, runtime)


def test_asking_again_without_a_change_keeps_the_plan_and_its_decision(
    workspace: Workspace,
) -> None:
    projects = setup(workspace, ["a", BIG], ["g"])
    runtime = projects.default_runtime()
    first, decision = projects.plan(runtime)
    again, same = projects.plan(runtime)
    assert again is first and same == decision


def test_typing_in_a_left_out_note_keeps_the_decision(workspace: Workspace) -> None:
    projects = setup(workspace, ["a", BIG], ["g"])
    runtime = projects.default_runtime()
    doc = open_store(projects, workspace.project_store)
    before, decision = projects.plan(runtime)
    assert [n.included for n in before.notes] == [True, False, True]
    replace_line(doc, 3, f"- {BIG} and more")
    after, same = projects.plan(runtime)
    assert same == decision
    assert after.project[1] == f"{BIG} and more"
    assert after == fresh(projects, runtime)


def test_an_edit_that_may_change_a_decision_gets_a_new_one(workspace: Workspace) -> None:
    projects = setup(workspace, ["a", BIG], ["g"])
    runtime = projects.default_runtime()
    doc = open_store(projects, workspace.project_store)
    _, decision = projects.plan(runtime)
    replace_line(doc, 2, "- an included note, edited")
    plan, changed = projects.plan(runtime)
    assert changed != decision
    assert plan == fresh(projects, runtime)
    replace_line(doc, 3, "- now short enough")  # the left-out note now fits
    plan, again = projects.plan(runtime)
    assert again != changed
    assert [n.included for n in plan.notes] == [True, True, True]
    assert plan == fresh(projects, runtime)


def test_a_settings_change_needs_a_fresh_plan(workspace: Workspace) -> None:
    projects = setup(workspace, ["a", BIG], ["g"])
    runtime = projects.default_runtime()
    _, decision = projects.plan(runtime)
    (workspace.agent_dir / "bytefly.json").write_text('{"memory": {"maxInjectBytes": 8192}}')
    plan, changed = projects.plan(runtime)
    assert changed != decision
    assert plan.max_bytes == 8192 and all(n.included for n in plan.notes)


def test_each_project_keeps_its_own_plan(workspace: Workspace, tmp_path: Path) -> None:
    projects = setup(workspace, ["a"], ["g"])
    other_root = tmp_path / "other"
    (other_root / ".git").mkdir(parents=True)
    (other_root / ".pi").mkdir()
    (other_root / ".pi" / "memory.md").write_text(store_text(["other"]))
    mine = projects.default_runtime()
    theirs = projects.runtime_for_path(other_root)
    plan_mine, decision_mine = projects.plan(mine)
    plan_theirs, decision_theirs = projects.plan(theirs)
    assert decision_mine != decision_theirs
    assert plan_mine.project == ("a",)
    assert plan_theirs.project == ("other",)
    assert projects.plan(mine) == (plan_mine, decision_mine)


def test_an_untrusted_project_is_planned_without_its_notes(workspace: Workspace) -> None:
    projects = setup(workspace, ["a"], ["g"])
    projects.configure(
        Settings(agent_dir=str(workspace.agent_dir), trusted=False), [workspace.root]
    )
    plan, _ = projects.plan(projects.default_runtime())
    assert plan.project == () and plan.global_ == ("g",)


WORDS = st.sampled_from(["a", "bb", "c" * 40, "é", "", " "])


def _drawn_store(
    workspace: Workspace, data: st.DataObject
) -> tuple[Projects, MemoryRuntime, MemoryDocument]:
    """A project store of a few drawn notes (some left out of a small budget) opened,
    beside a one-note global store: the projects, the runtime and the document."""
    notes = data.draw(st.lists(st.sampled_from(["a", "b" * 60, BIG, "c" * 200]), max_size=6))
    projects = setup(workspace, notes, ["g"])
    return projects, projects.default_runtime(), open_store(projects, workspace.project_store)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_keystrokes_kept_beside_the_plan_are_the_fresh_plan(
    workspace: Workspace, data: st.DataObject
) -> None:
    # A keystroke's decision (Projects.decision) keeps an edit of a left-out note beside
    # the plan; whenever the plan is asked for, it is the fresh plan, and its decision
    # changes only when the notes left out may have.
    projects, runtime, doc = _drawn_store(workspace, data)
    for _ in range(data.draw(st.integers(1, 12))):
        lines = doc.lines
        line = data.draw(st.integers(0, len(lines) - 1))
        char = data.draw(st.integers(0, len(lines[line])))
        end = data.draw(st.integers(char, len(lines[line])))
        doc.apply_change(Span(line, char, line, end), data.draw(WORDS), "utf-32")
        if data.draw(st.booleans()):
            projects.invalidate()  # (a watched-file event's, a command's: the plan is kept)
        decision, used = projects.decision(runtime)
        if data.draw(st.booleans()):
            doc.notes()  # (another reader of the buffer's notes: the code lens's count)
        if data.draw(st.booleans()):
            plan, same = projects.plan(runtime)
            assert same == decision and plan.used == used
            assert plan == fresh(projects, runtime)
            assert [n.included for n in plan.notes] == [
                n.included for n in fresh(projects, runtime).notes
            ]
    plan, _ = projects.plan(runtime)
    assert plan == fresh(projects, runtime)


def test_typing_in_left_out_notes_one_after_another_keeps_the_decision(
    workspace: Workspace,
) -> None:
    projects = setup(workspace, ["a", BIG, BIG + "!"], ["g"])
    runtime = projects.default_runtime()
    doc = open_store(projects, workspace.project_store)
    _, decision = projects.plan(runtime)
    for line in (3, 4, 3):
        for char in "xyz":
            doc.apply_change(Span(line, 2, line, 2), char, "utf-16")
            assert projects.decision(runtime)[0] == decision
    plan, same = projects.plan(runtime)
    assert same == decision and plan == fresh(projects, runtime)
    replace_line(doc, 4, "- short")  # now it fits: a decision of its own
    assert projects.decision(runtime)[0] != decision
    assert projects.plan(runtime)[0] == fresh(projects, runtime)


def test_a_recheck_that_finds_nothing_changed_keeps_the_plan(workspace: Workspace) -> None:
    """``invalidate`` (a watched-file event, a command's end) keeps the plan: it is asked
    again with the inputs as they are then, so planning 4,500 notes again is not the price
    of every recheck."""
    projects = setup(workspace, ["a", BIG], ["g"])
    runtime = projects.default_runtime()
    first, decision = projects.plan(runtime)
    projects.invalidate()
    assert projects.plan(runtime) == (first, decision)
    assert projects.plan(runtime)[0] is first


def test_a_recheck_that_finds_a_change_gets_a_fresh_plan(workspace: Workspace) -> None:
    projects = setup(workspace, ["a", BIG], ["g"])
    runtime = projects.default_runtime()
    _, decision = projects.plan(runtime)
    workspace.write("global", store_text(["g", "another global note"]))
    (workspace.agent_dir / "bytefly.json").write_text('{"memory": {"maxInjectBytes": 8192}}')
    projects.invalidate()
    plan, changed = projects.plan(runtime)
    assert changed != decision
    assert plan == fresh(projects, runtime)
    assert plan.global_ == ("g", "another global note") and plan.max_bytes == 8192


def test_new_settings_or_folders_drop_every_plan(workspace: Workspace, tmp_path: Path) -> None:
    """Every runtime is made again then, and no plan is kept for a project no longer
    served."""
    projects = setup(workspace, ["a"], ["g"])
    other_root = tmp_path / "other"
    (other_root / ".git").mkdir(parents=True)
    projects.plan(projects.runtime_for_path(other_root))
    projects.plan(projects.default_runtime())
    projects.configure(projects.settings, [workspace.root])
    assert projects._plans == {}


LINES = st.sampled_from(["- a", "- " + BIG, "- " + "c" * 200, "-  ", "prose", "", "- b" * 20])


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_keystrokes_lines_settings_and_the_global_store_keep_the_fresh_plan(
    workspace: Workspace, data: st.DataObject
) -> None:
    # As above, with what a keystroke's fast path must notice between two questions: lines
    # added or removed (notes that move), a note turned blank and back, the budget or
    # recall switched in bytefly.json, the global store rewritten on disk, a recheck
    # (invalidate) that keeps the plan and the edits kept beside it.
    projects, runtime, doc = _drawn_store(workspace, data)
    for _ in range(data.draw(st.integers(1, 14))):
        lines = doc.lines
        op = data.draw(
            st.sampled_from(["type", "type", "type", "lines", "blank", "cfg", "global", "recheck"])
        )
        if op == "type":
            line = data.draw(st.integers(0, len(lines) - 1))
            char = data.draw(st.integers(0, len(lines[line])))
            end = data.draw(st.integers(char, len(lines[line])))
            doc.apply_change(Span(line, char, line, end), data.draw(WORDS), "utf-32")
        elif op == "lines":
            line = data.draw(st.integers(0, len(lines) - 1))
            end = data.draw(st.integers(line, min(len(lines) - 1, line + 2)))
            new = "\n".join(data.draw(st.lists(LINES, min_size=1, max_size=3)))
            doc.apply_change(Span(line, 0, end, len(lines[end])), new, "utf-32")
        elif op == "blank":
            line = data.draw(st.integers(0, len(lines) - 1))
            old = lines[line]
            replace_line(doc, line, "-  ")
            projects.decision(runtime)
            replace_line(doc, line, old)
        elif op == "cfg":
            memory = {"maxInjectBytes": data.draw(st.sampled_from([512, 700, 8192]))}
            if data.draw(st.booleans()):
                memory["inject"] = data.draw(st.booleans())
            (workspace.agent_dir / "bytefly.json").write_text(json.dumps({"memory": memory}))
        elif op == "global":
            workspace.write("global", store_text(data.draw(st.lists(WORDS.filter(str.strip)))))
        else:  # a watched-file event or a command's end: the plan and kept edits stay
            projects.invalidate()
        decision, used = projects.decision(runtime)
        assert used == fresh(projects, runtime).used
        if data.draw(st.booleans()):
            doc.notes()
        if data.draw(st.booleans()):
            plan, same = projects.plan(runtime)
            assert same == decision and plan.used == used
            assert plan == fresh(projects, runtime)
    plan, _ = projects.plan(runtime)
    assert plan == fresh(projects, runtime)
