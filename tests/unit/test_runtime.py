"""The runtime over real files (SPEC §1-§3, §6): actions, results, writing, freshness."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from memory_ls.core.actions import UNTRUSTED_MESSAGE
from memory_ls.core.models import Scope
from memory_ls.core.notes import parse_lines
from memory_ls.core.recall import INTRO, MARKER
from memory_ls.core.text import BOM, HEADER, split_text
from memory_ls.store import runtime as runtime_module
from memory_ls.store.files import LockedFolder, write_store
from memory_ls.store.paths import shared_store_message
from memory_ls.store.runtime import MemoryRuntime
from memory_ls.store.trust import decide_trust
from tests.conftest import Workspace
from tests.old_files import age, clock_ahead, rewrite_in_one_tick

NEW = f"{HEADER}\n\n"


def only_store_in_pi(ws: Workspace) -> None:
    assert sorted(os.listdir(ws.root / ".pi")) == ["memory.md"]


# -- results and validation through run() ---------------------------------------


def test_list_of_nothing(workspace: Workspace) -> None:
    rt = workspace.runtime()
    assert rt.run("list", {}) == {
        "action": "list",
        "scope": "project",
        "project": [],
        "global": [],
        "changed": False,
    }
    assert not (workspace.root / ".pi").exists()


def test_first_add_creates_folders_and_header(workspace: Workspace) -> None:
    rt = workspace.runtime()
    result = rt.run("add", {"text": "  use   pnpm  "})
    assert result == {
        "action": "add",
        "scope": "project",
        "project": ["use pnpm"],
        "global": [],
        "changed": True,
        "entry": "use pnpm",
    }
    assert workspace.read("project") == f"{NEW}- use pnpm\n".encode()
    only_store_in_pi(workspace)
    workspace.agent_dir.rmdir()
    result = rt.run("add", {"text": "g", "scope": "global"})
    assert result["global"] == ["g"]
    assert workspace.read("global") == f"{NEW}- g\n".encode()


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({}, "text is required."),
        ({"text": None}, "text is required."),
        ({"text": 3}, "text is required."),
        ({"text": ["a"]}, "text is required."),
        ({"text": "  \t\x1b "}, "text is required."),
        ({"text": "😀" * 251}, "text is longer than 500 characters."),
        ({"text": "a", "scope": "both"}, "scope must be one of project, global."),
        ({"text": "a", "scope": 1}, "scope must be one of project, global."),
    ],
)
def test_add_validation(workspace: Workspace, args: dict[str, object], error: str) -> None:
    workspace.write("project", "- keep\n")
    before = workspace.read("project")
    result = workspace.runtime().run("add", args)
    assert result["error"] == error
    assert result["changed"] is False
    assert result["project"] == ["keep"]
    assert workspace.read("project") == before


def test_250_emoji_pass(workspace: Workspace) -> None:
    result = workspace.runtime().run("add", {"text": "😀" * 250})
    assert "error" not in result
    assert result["project"] == ["😀" * 250]


@pytest.mark.parametrize("action", ["delete", "", None, 5, "ADD"])
def test_unknown_action(workspace: Workspace, action: object) -> None:
    result = workspace.runtime().run(action, {"text": "a"})
    assert result["error"] == "action must be one of add, update, forget, list."
    assert result["changed"] is False


def test_update_validation(workspace: Workspace) -> None:
    workspace.write("project", "- a\n")
    rt = workspace.runtime()
    assert rt.run("update", {"text": "a"})["error"] == "to is required."
    assert rt.run("update", {"text": "a", "to": " "})["error"] == "to is required."
    assert rt.run("update", {"text": "a", "to": "x" * 501})["error"] == (
        "to is longer than 500 characters."
    )
    assert rt.run("update", {"to": "b"})["error"] == "text is required."
    assert rt.run("update", {"text": "x", "to": "b"})["error"] == (
        "No project memory note matches: x"
    )
    assert workspace.read("project") == b"- a\n"


def test_update_in_place(workspace: Workspace) -> None:
    workspace.write("project", "# t\r\n  * old\r\n- keep\r\n")
    result = workspace.runtime().run("update", {"text": "old", "to": "new"})
    assert result["changed"] is True
    assert result["entry"] == "old"
    assert result["to"] == "new"
    assert result["project"] == ["new", "keep"]
    assert workspace.read("project") == b"# t\r\n  * new\r\n- keep\r\n"


def test_update_same_text_is_a_no_op(workspace: Workspace) -> None:
    workspace.write("project", "-   a  \n")
    stamp = os.stat(workspace.project_store).st_mtime_ns
    result = workspace.runtime().run("update", {"text": "a", "to": "a"})
    assert result["changed"] is False
    assert "error" not in result
    assert workspace.read("project") == b"-   a  \n"
    assert os.stat(workspace.project_store).st_mtime_ns == stamp


def test_add_near_duplicate_returns_existing_and_writes_nothing(workspace: Workspace) -> None:
    workspace.write("global", "- Use PNPM.\n")
    before = os.stat(workspace.global_store)
    result = workspace.runtime().run("add", {"text": "use pnpm", "scope": "global"})
    assert result["changed"] is False
    assert result["existing"] == "Use PNPM."
    assert "error" not in result
    after = os.stat(workspace.global_store)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_forget(workspace: Workspace) -> None:
    workspace.write("project", "- a\n- b\n- a\n")
    rt = workspace.runtime()
    assert rt.run("forget", {"text": "A"})["error"] == "No project memory note matches: A"
    result = rt.run("forget", {"text": "a"})
    assert result["changed"] is True
    assert result["project"] == ["b"]
    assert workspace.read("project") == b"- b\n"
    rt.run("forget", {"text": "b"})
    assert workspace.read("project") == b""
    only_store_in_pi(workspace)


def test_forget_on_a_missing_store_creates_nothing(workspace: Workspace) -> None:
    result = workspace.runtime().run("forget", {"text": "a"})
    assert result["error"] == "No project memory note matches: a"
    assert not (workspace.root / ".pi").exists()


def test_merge(workspace: Workspace) -> None:
    workspace.write("project", "- one\n- two\n- three\n")
    rt = workspace.runtime()
    assert rt.run("merge", {"text": "one", "to": "x"})["error"] == "other is required."
    assert rt.run("merge", {"text": "one", "other": "two"})["error"] == "to is required."
    same = rt.run("merge", {"text": "one", "other": " one ", "to": "x"})
    assert same["error"] == "text and other must be different notes."
    missing = rt.run("merge", {"text": "one", "other": "nine", "to": "x"})
    assert missing["error"] == "No project memory note matches: nine"
    assert workspace.read("project") == b"- one\n- two\n- three\n"
    result = rt.run("merge", {"text": "one", "other": "two", "to": "one; two"})
    assert result["changed"] is True
    assert result["project"] == ["one; two", "three"]
    assert workspace.read("project") == b"- one; two\n- three\n"


def test_merge_in_global_scope(workspace: Workspace) -> None:
    workspace.write("global", "- a\n- b\n")
    result = workspace.runtime().run(
        "merge", {"text": "b", "other": "a", "to": "ab", "scope": "global"}
    )
    assert result["global"] == ["ab"]


def test_move_target_first_then_source(workspace: Workspace) -> None:
    workspace.write("project", "- p\n- q\n")
    result = workspace.runtime().run("move", {"text": "p"})
    assert result["scope"] == "project"
    assert result["changed"] is True
    assert result["project"] == ["q"]
    assert result["global"] == ["p"]
    assert "existing" not in result
    assert workspace.read("global") == f"{NEW}- p\n".encode()


def test_move_reports_an_existing_near_duplicate(workspace: Workspace) -> None:
    workspace.write("project", "- use pnpm\n")
    workspace.write("global", "- Use pnpm!\n")
    result = workspace.runtime().run("move", {"text": "use pnpm"})
    assert result["existing"] == "Use pnpm!"
    assert result["changed"] is True
    assert result["project"] == []
    assert workspace.read("global") == b"- Use pnpm!\n"


def test_move_no_match(workspace: Workspace) -> None:
    workspace.write("global", "- g\n")
    result = workspace.runtime().run("move", {"text": "x", "scope": "global"})
    assert result["error"] == "No global memory note matches: x"
    assert not workspace.project_store.exists()


def test_move_into_an_untrusted_project_is_refused(workspace: Workspace) -> None:
    workspace.write("global", "- g\n")
    result = workspace.runtime(trusted=False).run("move", {"text": "g", "scope": "global"})
    assert result["error"] == (
        'Project memory is unavailable for an untrusted project; use scope "global".'
    )
    assert result["global"] == ["g"]
    assert result["project"] == []
    assert not workspace.project_store.exists()


def test_move_when_source_write_fails_leaves_note_in_both(workspace: Workspace) -> None:
    workspace.write("project", "- p\n")
    rt = workspace.runtime()
    # the target write succeeds; make the source refuse by making it oversize meanwhile
    original = rt._rewrite
    calls: list[str] = []

    def flaky(scope, folder, transform):  # type: ignore[no-untyped-def]
        calls.append(scope)
        if scope == "project":
            workspace.write("project", b"- p\n\xff")
        return original(scope, folder, transform)

    rt._rewrite = flaky  # type: ignore[method-assign]
    result = rt.move("p", "project")
    assert calls == ["global", "project"]
    assert "error" in result
    assert workspace.read("global") == f"{NEW}- p\n".encode()
    assert b"- p" in workspace.read("project")


@pytest.mark.parametrize("scope", ["project", "global"])
def test_move_when_both_scopes_are_one_file_keeps_the_note(
    workspace: Workspace, scope: Scope
) -> None:
    """SPEC §3 move: "the note is in both scopes, never in none"; SPEC §1: the two
    scopes are never one file, so the project scope is refused whichever way."""
    agent = workspace.root / ".pi"
    rt = MemoryRuntime(workspace.root, agent_dir=str(agent), trusted=True)
    assert rt.add("keep me", "global")["changed"] is True
    before = workspace.read("project")
    result = rt.move("keep me", scope)
    assert result["changed"] is False
    assert result["error"] == shared_store_message(workspace.root, agent / "memory.md")
    assert workspace.read("project") == before == f"{HEADER}\n\n- keep me\n".encode()


def test_a_project_store_that_is_the_global_store_is_refused_and_recalled_once(
    workspace: Workspace,
) -> None:
    agent = workspace.root / ".pi"
    rt = MemoryRuntime(workspace.root, agent_dir=str(agent), trusted=True)
    message = shared_store_message(workspace.root, agent / "memory.md")
    assert rt.store_refusal("project") == message and rt.store_refusal("global") is None
    assert rt.add("one", "project")["error"] == message  # even with no .pi yet
    assert not agent.exists()
    assert rt.add("one", "global")["changed"] is True
    assert rt.notes("project") == [] and rt.notes("global") == ["one"]
    assert rt.body() == f"{MARKER}\n{INTRO}\nglobal:\n- one"
    with rt.steady():  # the memo answers as the disk does
        assert rt.store_refusal("project") == message


def test_clear(workspace: Workspace) -> None:
    workspace.write("project", f"{NEW}# Notes\n\n- a\n\n\n\nprose\n-  \n")
    rt = workspace.runtime()
    result = rt.run("clear", {})
    assert result["changed"] is True
    assert result["project"] == []
    assert workspace.read("project") == f"{NEW}# Notes\n\nprose\n".encode()
    again = rt.run("clear", {})
    assert again["changed"] is False


def test_clear_missing_store_writes_nothing(workspace: Workspace) -> None:
    assert workspace.runtime().clear("project")["changed"] is False
    assert not (workspace.root / ".pi").exists()


def test_read_only_refuses_every_mutation(workspace: Workspace) -> None:
    workspace.write("project", "- a\n")
    rt = workspace.runtime(read_only=True)
    for action, args in [
        ("add", {"text": "b"}),
        ("update", {"text": "a", "to": "b"}),
        ("forget", {"text": "a"}),
        ("merge", {"text": "a", "other": "b", "to": "c"}),
        ("move", {"text": "a"}),
        ("clear", {}),
    ]:
        result = rt.run(action, args)
        assert result["error"] == "memory-ls is read-only: changes are refused.", action
    assert rt.run("list", {})["project"] == ["a"]
    assert workspace.read("project") == b"- a\n"


# -- untrusted project ----------------------------------------------------------


def test_untrusted_project_hides_notes_and_refuses_writes(workspace: Workspace) -> None:
    workspace.write("project", "- secret\n")
    workspace.write("global", "- g\n")
    rt = workspace.runtime(trusted=False)
    listed = rt.run("list", {})
    assert listed["project"] == []
    assert listed["global"] == ["g"]
    message = 'Project memory is unavailable for an untrusted project; use scope "global".'
    for action, args in [
        ("add", {"text": "b"}),
        ("update", {"text": "secret", "to": "b"}),
        ("forget", {"text": "secret"}),
        ("merge", {"text": "secret", "other": "b", "to": "c"}),
        ("move", {"text": "secret"}),
        ("clear", {}),
    ]:
        result = rt.run(action, args)
        assert result["error"] == message, action
        assert result["changed"] is False
        assert result["project"] == []
    assert workspace.read("project") == b"- secret\n"
    assert rt.run("add", {"text": "ok", "scope": "global"})["global"] == ["g", "ok"]
    plan = rt.plan()
    assert [n.scope for n in plan.notes] == ["global", "global"]


def test_trust_from_resources_rule(workspace: Workspace) -> None:
    (workspace.root / ".pi").mkdir()
    (workspace.root / ".pi" / "settings.json").write_text("{}")
    rt = workspace.runtime(trusted=None)
    assert rt.run("add", {"text": "x"})["error"].startswith("Project memory is unavailable")


# -- writing --------------------------------------------------------------------


def test_file_mode_is_preserved(workspace: Workspace) -> None:
    path = workspace.write("project", "- a\n")
    os.chmod(path, 0o640)
    rt = workspace.runtime()
    rt.run("add", {"text": "b"})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    rt.run("forget", {"text": "a"})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    only_store_in_pi(workspace)


def test_pi_folder_holds_only_the_store_after_every_action(workspace: Workspace) -> None:
    rt = workspace.runtime()
    steps: list[tuple[str, dict[str, object]]] = [
        ("add", {"text": "a"}),
        ("add", {"text": "b"}),
        ("add", {"text": "A."}),
        ("update", {"text": "a", "to": "c"}),
        ("merge", {"text": "c", "other": "b", "to": "d"}),
        ("move", {"text": "d"}),
        ("move", {"text": "d", "scope": "global"}),
        ("forget", {"text": "nope"}),
        ("clear", {}),
    ]
    for action, args in steps:
        rt.run(action, args)
        only_store_in_pi(workspace)


def test_bom_and_crlf_are_kept(workspace: Workspace) -> None:
    workspace.write("project", BOM + "# t\r\n- a\r\n")
    workspace.runtime().run("add", {"text": "b"})
    assert workspace.read("project") == (BOM + "# t\r\n- a\r\n- b\r\n").encode()


def test_concurrent_adds_from_threads_are_not_lost(workspace: Workspace) -> None:
    import threading

    runtimes = [workspace.runtime() for _ in range(4)]

    def work(i: int) -> None:
        for j in range(15):
            runtimes[i].add(f"note {i}-{j}", "project")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    notes = workspace.runtime().run("list", {})["project"]
    assert sorted(notes) == sorted(f"note {i}-{j}" for i in range(4) for j in range(15))
    only_store_in_pi(workspace)


# -- freshness ------------------------------------------------------------------


def test_external_edit_is_seen(workspace: Workspace) -> None:
    path = workspace.write("project", "- a\n")
    rt = workspace.runtime()
    assert rt.run("list", {})["project"] == ["a"]
    path.write_text("- b\n")  # same size, same inode
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert rt.run("list", {})["project"] == ["b"]
    path.write_text("- b\n- c\n")
    assert rt.run("list", {})["project"] == ["b", "c"]
    assert rt.plan().body is not None and rt.plan().body.endswith("- b\n- c")  # type: ignore[union-attr]


def test_an_add_changes_the_text_read_under_the_lock_even_when_no_stamp_moved(
    workspace: Workspace,
) -> None:
    """The cached view's text is used only when the file read under the lock holds its very
    bytes: an edit by a program that kept the size, the inode and the mtime is kept."""
    path = workspace.write("project", "- aaaa\n")
    rt = workspace.runtime()
    assert rt.run("add", {"text": "bbbb"})["changed"]
    age(path)  # an old file: its stamp is trusted to say "unchanged" (RACY_MARGIN_NS)
    assert rt.view("project").file.content == "- aaaa\n- bbbb\n"
    rewrite_in_one_tick(path, b"- cccc\n- bbbb\n")
    assert rt.view("project").file.content == "- aaaa\n- bbbb\n"  # no stamp shows it
    assert rt.run("add", {"text": "dddd"})["project"] == ["cccc", "bbbb", "dddd"]
    assert path.read_text() == "- cccc\n- bbbb\n- dddd\n"


def test_self_write_is_adopted(workspace: Workspace) -> None:
    rt = workspace.runtime()
    rt.run("add", {"text": "a"})
    view = rt.view("project")
    assert view.parsed.notes == ["a"]
    assert rt.view("project") is view  # not re-read


@pytest.mark.parametrize("start", ["", "- a\n- b  \n\n\n", BOM + "# t\r\n- a\r\n", "- a"])
def test_the_adopted_view_is_the_written_file_parsed(workspace: Workspace, start: str) -> None:
    """After each write the cached parse (made from the previous one) is the file's own,
    whatever wrote before it: this runtime, another one, or an edit in the middle."""
    path = workspace.write("project", start)
    rt, other = workspace.runtime(), workspace.runtime()

    def check() -> None:
        view = rt.view("project")
        assert view.file.content == path.read_bytes().decode("utf-8")
        assert view.parsed == parse_lines(split_text(view.file.content).lines)

    rt.run("list", {})
    for step in range(4):
        assert rt.run("add", {"text": f"note {step}"})["changed"]
        check()
    other.run("add", {"text": "from another process"})
    assert rt.run("add", {"text": "after it"})["project"][-2:] == [
        "from another process",
        "after it",
    ]
    check()
    assert rt.run("forget", {"text": "note 1"})["changed"]
    check()
    assert rt.run("add", {"text": "note 1 again"})["changed"]
    check()
    assert rt.run("add", {"text": "NOTE 0."})["existing"] == "note 0"
    check()


def test_store_that_becomes_a_symlink_keeps_last_good_for_recall(workspace: Workspace) -> None:
    path = workspace.write("project", "- a\n- b\n")
    rt = workspace.runtime()
    assert rt.run("list", {})["project"] == ["a", "b"]
    target = workspace.root / "elsewhere.md"
    target.write_text("- evil\n")
    path.unlink()
    path.symlink_to(target)
    listed = rt.run("list", {})
    assert listed["error"] == f"Refusing to use the symlinked memory file: {path}"
    assert listed["project"] == []
    plan = rt.plan()
    assert [n.text for n in plan.notes] == ["a", "b"]
    assert plan.body is not None and "- evil" not in plan.body


def test_store_that_becomes_oversize_keeps_last_good_for_recall(workspace: Workspace) -> None:
    path = workspace.write("global", "- a\n")
    rt = workspace.runtime()
    assert rt.plan().notes[0].text == "a"
    path.write_bytes(b"- big\n" + b"x" * 262_144)
    listed = rt.run("list", {})
    assert listed["error"] == (
        f"Memory file is 262150 bytes, larger than the 262144-byte limit: {path}"
    )
    assert [n.text for n in rt.plan().notes] == ["a"]


def test_reload_reports_changes(workspace: Workspace) -> None:
    path = workspace.write("project", "- a\n- b\n")
    rt = workspace.runtime()
    rt.run("list", {})
    path.write_text("- b\n- c\n")
    changes = rt.reload()
    assert changes["project"].added == ["c"]
    assert changes["project"].removed == ["a"]
    assert changes["global"].added == changes["global"].removed == []


def test_runtime_sees_trust_and_config_changes_between_calls(workspace: Workspace) -> None:
    """The runtime caches trust and config, but never past a change of their files."""
    rt = workspace.runtime(trusted=None)
    assert rt.trust().trusted and rt.config().max_inject_bytes == 8192
    (workspace.root / ".pi").mkdir()
    (workspace.root / ".pi" / "settings.json").write_text("{}")
    assert not rt.trust().trusted  # a trust-requiring resource appeared
    (workspace.agent_dir / "trust.json").write_text(json.dumps({str(workspace.root): True}))
    assert rt.trust().trusted and rt.trust().rule == "trust.json"
    (workspace.agent_dir / "bytefly.json").write_text(
        json.dumps({"memory": {"maxInjectBytes": 1000}})
    )
    assert rt.config().max_inject_bytes == 1000


def test_its_own_writes_do_not_make_trust_be_decided_again(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An add changes the stores' folders' stamps, not what trust and configuration read:
    the decision made before the write answers after it (for both stores' folders). A
    store that did not exist yet is a new name in its folder: decided again then."""
    clock_ahead(monkeypatch)  # the folders trust consults are old (no racy stamp)
    workspace.write("project", ["p"])
    workspace.write("global", ["g"])
    rt = workspace.runtime(trusted=None)
    decided: list[Path] = []

    def counted(root: Path, agent_dir: Path, explicit: bool | None = None, **kw: Any) -> Any:
        decided.append(root)
        return decide_trust(root, agent_dir, explicit, **kw)

    monkeypatch.setattr(runtime_module, "decide_trust", counted)
    assert rt.run("add", {"text": "first"})["changed"]
    before = len(decided)
    for n, scope in enumerate(("project", "global", "project", "global")):
        assert rt.run("add", {"text": f"note {'abcd'[n]} in {scope}", "scope": scope})["changed"]
    assert rt.trust().trusted and len(decided) == before


def test_trust_changed_by_another_process_between_two_adds_is_seen(
    workspace: Workspace,
) -> None:
    """What trust reads changing between two adds (or between an add and the next look)
    is seen, even when the stamps that key the decision show nothing: a resource that
    appears in ``.pi`` with the folder's mtime put back, ``trust.json`` rewritten."""
    rt = workspace.runtime(trusted=None)
    assert rt.run("add", {"text": "first"})["changed"]
    assert rt.run("add", {"text": "second"})["changed"]
    pi = workspace.root / ".pi"
    st = os.stat(pi)
    (pi / "settings.json").write_text("{}")  # a trust-requiring resource (SPEC §4)
    os.utime(pi, ns=(st.st_atime_ns, st.st_mtime_ns))  # its folder's stamp as it was
    refused = rt.run("add", {"text": "third"})
    assert refused["error"] == UNTRUSTED_MESSAGE and not refused["changed"]
    (workspace.agent_dir / "trust.json").write_text(json.dumps({str(workspace.root): True}))
    assert rt.run("add", {"text": "third"})["changed"]
    (workspace.agent_dir / "trust.json").write_text(json.dumps({str(workspace.root): False}))
    assert rt.run("add", {"text": "fourth"})["error"] == UNTRUSTED_MESSAGE


@pytest.mark.parametrize("trusted", [None, True])
def test_a_pi_moved_out_and_linked_back_between_two_adds_is_seen(
    workspace: Workspace, tmp_path: Path, trusted: bool | None
) -> None:
    """The same folder (same inode, same names) now behind a symlink leading out of the
    project: the project store is refused, and its configuration layer ignored, whether
    trust looked into the project (rule 3) or was given (nothing but the configuration
    then keys on ``.pi``)."""
    rt = workspace.runtime(trusted=trusted)
    (workspace.root / ".pi").mkdir()
    (workspace.root / ".pi" / "bytefly.json").write_text('{"memory": {"maxInjectBytes": 1000}}')
    assert rt.run("add", {"text": "first"})["changed"]
    assert rt.config().max_inject_bytes == 1000
    outside = tmp_path / "outside-pi"
    (workspace.root / ".pi").rename(outside)
    (workspace.root / ".pi").symlink_to(outside)
    assert rt.config().max_inject_bytes == 8192  # that file is another folder's now
    refused = rt.run("add", {"text": "second"})
    assert refused["error"] is not None and "outside" in refused["error"], refused
    assert (outside / "memory.md").read_text().endswith("\n\n- first\n")


# -- recall through the runtime --------------------------------------------------


def test_inject_reads_config(workspace: Workspace) -> None:
    workspace.write("project", "- p\n")
    workspace.write("global", "- g\n")
    rt = workspace.runtime()
    result = rt.inject()
    assert result["body"] is not None and result["body"].endswith("project:\n- p\nglobal:\n- g")
    assert result["bytes"] == len(result["body"].encode())
    assert result["included"] == 2
    (workspace.agent_dir / "bytefly.json").write_text('{"memory": {"inject": false}}')
    off = rt.inject()
    assert off["body"] is None
    assert off["inject"] is False
    assert off["bytes"] == 0
    assert rt.run("list", {})["project"] == ["p"]


def record_writes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Patch the runtime's ``write_store`` to record the path of every write."""
    writes: list[str] = []

    def spy(path: Path, content: str, folder: LockedFolder | None = None, **kw: Any) -> Any:
        writes.append(str(path))
        return write_store(path, content, folder, **kw)

    monkeypatch.setattr("memory_ls.store.files.write_store", spy)
    return writes


def test_merge_is_one_write(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace.write("project", "- a\n- b\n")
    writes = record_writes(monkeypatch)
    workspace.runtime().run("merge", {"text": "a", "other": "b", "to": "a; b"})
    assert writes == [str(workspace.project_store)]


def test_move_writes_target_then_source(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace.write("global", "- g\n")
    writes = record_writes(monkeypatch)
    workspace.runtime().run("move", {"text": "g", "scope": "global"})
    assert writes == [str(workspace.project_store), str(workspace.global_store)]


def test_refusals_and_no_ops_never_write(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace.write("project", "- a\n")
    writes = record_writes(monkeypatch)
    rt = workspace.runtime()
    rt.run("add", {"text": "A!"})
    rt.run("update", {"text": "a", "to": "a"})
    rt.run("forget", {"text": "b"})
    rt.run("add", {"text": ""})
    rt.run("list", {})
    assert writes == []


def test_steady_looks_at_the_disk_once_per_block_and_per_thread(
    workspace: Workspace, tmp_path: Path
) -> None:
    # One keystroke's analysis holds the disk steady; the next one sees what changed.
    import threading

    rt = workspace.runtime()
    config = workspace.agent_dir / "bytefly.json"
    pi = workspace.root / ".pi"
    pi.mkdir(exist_ok=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    before = rt.config().max_inject_bytes
    seen_by_another_thread: list[int] = []
    with rt.steady():
        assert rt.config().max_inject_bytes == before
        assert rt.store_refusal("project") is None
        config.write_text(json.dumps({"memory": {"maxInjectBytes": before + 1000}}))
        pi.rmdir()
        pi.symlink_to(outside)
        # Held for this block...
        assert rt.config().max_inject_bytes == before
        assert rt.store_refusal("project") is None
        with rt.steady():  # nested: still the same block
            assert rt.config().max_inject_bytes == before
        # ...but not for another thread, nor for the write path's own resolution.
        worker = threading.Thread(
            target=lambda: seen_by_another_thread.append(rt.config().max_inject_bytes)
        )
        worker.start()
        worker.join()
        assert rt.store_refusal("project", str(outside)) is not None
    assert seen_by_another_thread == [before + 1000]
    assert rt.config().max_inject_bytes == before + 1000
    assert rt.store_refusal("project") is not None
    with rt.steady():
        assert rt.store_refusal("project") is not None


def test_a_steady_look_reused_for_a_while_and_looked_at_again(
    workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The editor's passes take the last pass's look for `reuse_for` seconds; a watcher's
    # event (forget_settings) or the time running out makes the next pass look again, and
    # look_again says whether what was reused is still what the disk says.
    import memory_ls.store.runtime as runtime_module

    clock = [1000.0]
    monkeypatch.setattr(runtime_module.time, "monotonic", lambda: clock[0])
    rt = workspace.runtime()
    config = workspace.agent_dir / "bytefly.json"
    pi = workspace.root / ".pi"
    pi.mkdir(exist_ok=True)
    before = rt.config().max_inject_bytes
    with rt.steady(reuse_for=0.25):
        assert rt.store_refusal("project") is None
        assert rt.config().max_inject_bytes == before
    assert rt.look_again() is False  # nothing changed: nothing to show
    with rt.steady(reuse_for=0.25):  # (looked afresh: look_again ended the reuse)
        assert rt.store_refusal("project") is None
        assert rt.config().max_inject_bytes == before
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    pi.rmdir()
    pi.symlink_to(outside)
    config.write_text(json.dumps({"memory": {"maxInjectBytes": before + 1000}}))
    clock[0] += 0.1
    with rt.steady(reuse_for=0.25):  # within the time: the last look stands
        assert rt.store_refusal("project") is None
        assert rt.config().max_inject_bytes == before
    assert rt.store_refusal("project") is not None  # outside a block: looked at each time
    clock[0] += 0.2  # 0.3 s after the look: it is not reused any more
    with rt.steady(reuse_for=0.25):
        assert rt.store_refusal("project") is not None
    # A watcher's event ends a reuse at once.
    pi.unlink()
    pi.mkdir()
    rt.forget_settings()
    with rt.steady(reuse_for=0.25):
        assert rt.store_refusal("project") is None
    # A change that came while a look is reused: look_again sees it, once.
    pi.rmdir()
    pi.symlink_to(outside)
    with rt.steady(reuse_for=0.25):
        assert rt.store_refusal("project") is None
    assert rt.look_again() is True
    assert rt.look_again() is False  # nothing reused any more
    with rt.steady(reuse_for=0.25):
        assert rt.store_refusal("project") is not None


def test_a_steady_block_stamps_each_store_once_and_sees_a_change_at_the_next_block(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The other store's view, asked for twice a keystroke, takes the stamps the block took
    # as it began (no lstat of its own); a rewrite between two blocks, well within the
    # time a look is reused, is read by the next block all the same.
    path = workspace.write("global", ["aaaa"])
    workspace.write("project", ["x"])
    age(path, workspace.project_store)
    rt = workspace.runtime()
    assert rt.notes("global") == ["aaaa"]
    stamped: list[object] = []
    real = runtime_module.stamp_of
    monkeypatch.setattr(runtime_module, "stamp_of", lambda p: stamped.append(p) or real(p))
    with rt.steady(reuse_for=60):
        for _ in range(3):
            assert rt.notes("global") == ["aaaa"]
    assert sorted(map(str, stamped)) == sorted(map(str, rt.paths.values()))
    workspace.write("global", ["bbbbbbbb"])  # (another size: a stamp of its own)
    age(path)
    with rt.steady(reuse_for=60):
        assert rt.notes("global") == ["bbbbbbbb"]
        assert rt.notes("global") == ["bbbbbbbb"]
    workspace.write("global", ["cc"])
    with rt.steady(reuse_for=60):  # racy now (just written): read, then read no more
        assert rt.notes("global") == ["cc"]
        assert rt.notes("global") == ["cc"]
    rewrite_in_one_tick(path, path.read_bytes().replace(b"- cc", b"- dd"))
    assert rt.look_again() is True  # (as ever: a racy read is looked at again at rest)
    with rt.steady(reuse_for=60):
        assert rt.notes("global") == ["dd"]


def test_a_steady_look_is_not_reused_once_a_store_changed(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Notes that arrive (a `git pull`) may come with what makes the project untrusted:
    # they are never read on the look taken before them.
    import memory_ls.store.runtime as runtime_module

    clock = [1000.0]
    monkeypatch.setattr(runtime_module.time, "monotonic", lambda: clock[0])
    workspace.write("project", ["first note"])
    rt = workspace.runtime(trusted=None)
    with rt.steady(reuse_for=0.25):
        assert rt.trust().trusted
    (workspace.root / ".agents" / "skills").mkdir(parents=True)
    clock[0] += 0.05
    with rt.steady(reuse_for=0.25):  # nothing else changed: the look stands
        assert rt.trust().trusted
    workspace.write("project", ["first note", "arrived with the skills"])
    clock[0] += 0.05
    with rt.steady(reuse_for=0.25):
        assert not rt.trust().trusted
        assert rt.notes("project") == []
    workspace.write("global", ["a global note"])  # the global store ends it too
    with rt.steady(reuse_for=0.25):
        assert rt.trust().trusted is False


@pytest.mark.parametrize("explicit", [None, True])
def test_a_first_look_decides_trust_once(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, explicit: bool | None
) -> None:
    """A process's first look (and the first after a watcher's event) decides trust once:
    it decided once to learn which paths to stamp, then again after stamping them."""
    clock_ahead(monkeypatch)  # the folders trust consults are old (no racy stamp)
    (workspace.root / ".pi").mkdir()
    rt = workspace.runtime(trusted=explicit)
    decided: list[Path] = []

    def counted(root: Path, agent_dir: Path, explicit: bool | None = None, **kw: Any) -> Any:
        decided.append(root)
        return decide_trust(root, agent_dir, explicit, **kw)

    monkeypatch.setattr(runtime_module, "decide_trust", counted)
    assert rt.trust().trusted
    assert len(decided) == 1
    assert rt.trust().trusted and rt.config().max_inject_bytes == 8192
    assert len(decided) == 1  # (nothing changed: the decision stands)
    rt.forget_settings()
    assert rt.trust().trusted
    assert len(decided) == 2


def test_trust_json_rewritten_just_after_it_is_read_is_seen_next(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each path the decision consults is stamped before it is read: ``trust.json``
    rewritten (revoking trust) right after the decision read it is a changed stamp at the
    next look, which decides again, never the old decision under the new file's stamp."""
    import memory_ls.store.trust as trust_module

    root = os.path.realpath(workspace.root)
    trust_json = workspace.agent_dir / "trust.json"
    trust_json.write_text(json.dumps({root: True}))
    rt = workspace.runtime(trusted=None)
    real_read = trust_module.read_small_text
    revoked: list[bool] = []

    def then_revoked(path: Path, limit: int) -> Any:
        read = real_read(path, limit)
        if path == trust_json and not revoked:
            revoked.append(True)
            trust_json.write_text(json.dumps({root: False}))
        return read

    monkeypatch.setattr(trust_module, "read_small_text", then_revoked)
    rt.trust()  # (decided on the text read before the change)
    assert revoked and not rt.trust().trusted
    assert not rt.trust().trusted


def test_a_resource_added_just_after_it_is_looked_for_is_seen_next(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same for a trust-requiring resource that appears right after the decision
    looked for it (its folder's stamp, taken before the look, changes)."""
    import memory_ls.store.trust as trust_module

    pi = workspace.root / ".pi"
    pi.mkdir()
    rt = workspace.runtime(trusted=None)
    real_present = trust_module._present
    added: list[bool] = []

    def then_added(path: Path, problems: list[str]) -> bool:
        present = real_present(path, problems)
        if path == pi / "settings.json" and not added:
            added.append(True)
            (pi / "settings.json").write_text("{}")
        return present

    monkeypatch.setattr(trust_module, "_present", then_added)
    rt.trust()  # (decided before the resource came)
    assert added and not rt.trust().trusted


def test_trust_revoked_while_it_is_being_decided_is_seen_next(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``trust.json`` rewritten between the decision's reading it and the runtime's
    keying of that decision (here: while the configuration is read, the first time): the
    next look decides again. It kept the old decision under the new file's stamp, so a
    server that started as trust was revoked went on reading and writing the project."""
    import memory_ls.store.config as config_module

    root = os.path.realpath(workspace.root)
    trust_json = workspace.agent_dir / "trust.json"
    trust_json.write_text(json.dumps({root: True}))
    rt = workspace.runtime(trusted=None)
    revoked: list[bool] = []
    real_load = config_module.load_config

    def revoking(*args: Any, **kwargs: Any) -> Any:
        if not revoked:
            revoked.append(True)
            trust_json.write_text(json.dumps({root: False}))
        return real_load(*args, **kwargs)

    monkeypatch.setattr(runtime_module, "load_config", revoking)
    assert rt.trust().trusted  # decided on the text read before the change
    assert revoked and not rt.trust().trusted
