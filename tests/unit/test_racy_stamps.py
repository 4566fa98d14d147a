"""Git's "racily clean" rule: a stamp taken within a timestamp tick of the file's last
change does not prove the file unchanged later (``RACY_MARGIN_NS``).

Each test fakes a coarse file system: a same-size rewrite in place (same inode) with the
mtime set back, so the stamp is exactly the one the cached read took.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from memory_ls.server import review as review_module
from memory_ls.server.settings import Settings
from memory_ls.server.workspace import Projects
from memory_ls.store import runtime as runtime_module
from memory_ls.store.files import (
    RACY_MARGIN_NS,
    Stamp,
    is_racy,
    read_store,
    stamp_of,
    unchanged,
)
from memory_ls.store.paths import inbox_path
from memory_ls.store.review import Review
from tests.conftest import Workspace
from tests.old_files import age, clock_ahead, rewrite_in_one_tick


def counted_decisions(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The trust decisions the runtime takes from now on (their arguments), one a call."""
    decisions: list[object] = []
    real = runtime_module.decide_trust

    def counting(*args: object, **kwargs: object) -> object:
        decisions.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runtime_module, "decide_trust", counting)
    return decisions


# -- the rule ---------------------------------------------------------------------------


def test_a_stamp_taken_within_the_margin_is_racy(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_text("x")
    fresh = stamp_of(path)
    assert fresh is not None and fresh.racy
    assert read_store(path).stamp.racy  # type: ignore[union-attr]
    age(path)
    old = stamp_of(path)
    assert old is not None and not old.racy


def test_racy_is_not_compared_but_is_never_unchanged() -> None:
    racy, settled = Stamp(1, 2, 3, racy=True), Stamp(1, 2, 3)
    assert racy == settled and hash(racy) == hash(settled)
    assert unchanged(settled, racy) and unchanged(settled, settled)
    assert not unchanged(racy, settled) and not unchanged(racy, racy)
    assert not unchanged(settled, Stamp(1, 2, 4)) and not unchanged(settled, None)
    assert unchanged(None, None)


def test_the_margin_and_a_clock_behind_the_file() -> None:
    now = time.time_ns()
    assert is_racy(now, now) and is_racy(now - RACY_MARGIN_NS + 1, now)
    assert not is_racy(now - RACY_MARGIN_NS, now)
    # An mtime in the future (a skewed clock, a network mount): not safely in the past.
    assert is_racy(now + 3600 * 10**9, now)


def test_an_mtime_in_the_future_is_racy_until_the_clock_passes_it(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_text("x")
    st = os.stat(path)
    future = st.st_mtime_ns + 3600 * 10**9
    os.utime(path, ns=(st.st_atime_ns, future))
    assert stamp_of(path).racy  # type: ignore[union-attr]


# -- the store's read cache ------------------------------------------------------------------


def test_a_store_rewritten_within_the_tick_of_its_read_is_read_again(
    workspace: Workspace,
) -> None:
    path = workspace.write("project", "- aaaa\n")
    rt = workspace.runtime()
    assert rt.notes("project") == ["aaaa"]
    rewrite_in_one_tick(path, b"- bbbb\n")
    assert rt.notes("project") == ["bbbb"]


def test_an_aged_store_is_not_read_again(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once its stamp was taken with the mtime safely past, an equal stamp is trusted:
    one read, and none at the next looks (no cost once the file has settled)."""
    path = workspace.write("project", "- aaaa\n")
    age(path)
    reads: list[Path] = []
    real = runtime_module.read_store

    def counting(p: Path, *args: object, **kwargs: object) -> object:
        reads.append(p)
        return real(p, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runtime_module, "read_store", counting)
    rt = workspace.runtime()
    for _ in range(3):
        assert rt.notes("project") == ["aaaa"]
    assert reads == [path]


def test_a_racy_read_again_that_finds_the_same_bytes_keeps_the_view(
    workspace: Workspace,
) -> None:
    workspace.write("project", "- aaaa\n")
    rt = workspace.runtime()
    first = rt.view("project")
    again = rt.view("project")
    assert again is first and again.parsed is first.parsed


def test_our_own_write_then_a_same_size_edit_in_its_tick_is_seen(workspace: Workspace) -> None:
    """The stamp adopted after an atomic write is racy like any other: an editor saving
    the same size in place within its tick is not hidden behind it."""
    path = workspace.write("project", "- aaaa\n")
    age(path)
    rt = workspace.runtime()
    assert rt.run("add", {"text": "bbbb"})["project"] == ["aaaa", "bbbb"]
    rewrite_in_one_tick(path, path.read_bytes().replace(b"bbbb", b"cccc"))
    assert rt.notes("project") == ["aaaa", "cccc"]


# -- trust and configuration ----------------------------------------------------------------


def test_trust_json_rewritten_within_the_tick_of_the_decision_is_decided_again(
    workspace: Workspace,
) -> None:
    store = workspace.agent_dir / "trust.json"
    store.write_text(json.dumps({str(workspace.root): True}) + " ")
    rt = workspace.runtime(trusted=None)
    assert rt.trust().trusted is True
    rewrite_in_one_tick(store, json.dumps({str(workspace.root): False}).encode())
    # (A racy decision stands RACY_DECISION_STANDS while no stamp changed: a request's
    # several questions are one decision.)
    time.sleep(runtime_module.RACY_DECISION_STANDS + 0.05)
    assert rt.trust().trusted is False


def test_config_rewritten_within_the_tick_of_its_read_is_read_again(
    workspace: Workspace,
) -> None:
    config = workspace.agent_dir / "bytefly.json"
    config.write_text(json.dumps({"memory": {"maxInjectBytes": 1000}}))
    rt = workspace.runtime()
    assert rt.config().max_inject_bytes == 1000
    rewrite_in_one_tick(config, json.dumps({"memory": {"maxInjectBytes": 2000}}).encode())
    time.sleep(runtime_module.RACY_DECISION_STANDS + 0.05)
    assert rt.config().max_inject_bytes == 2000


def test_a_racy_decision_stands_a_moment_for_the_same_stamps_not_for_new_ones(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within RACY_DECISION_STANDS a racy decision is not taken again while every stamp is
    as it was (a hover asked it three times: each a decision, each dozens of system
    calls); a change that shows in a stamp is decided at once."""
    store = workspace.agent_dir / "trust.json"
    store.write_text(json.dumps({str(workspace.root): True}))
    decisions = counted_decisions(monkeypatch)
    rt = workspace.runtime(trusted=None)
    for _ in range(3):
        assert rt.trust().trusted is True
    assert len(decisions) == 1  # racy (just written), yet one decision
    store.write_text(json.dumps({str(workspace.root): False}) + "  ")  # another size
    assert rt.trust().trusted is False
    assert len(decisions) == 2


def test_settled_settings_are_decided_once(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = workspace.agent_dir / "trust.json"
    store.write_text(json.dumps({str(workspace.root): True}))
    config = workspace.agent_dir / "bytefly.json"
    config.write_text(json.dumps({"memory": {"maxInjectBytes": 1000}}))
    clock_ahead(monkeypatch)  # (trust consults every ancestor folder, /tmp among them)
    decisions = counted_decisions(monkeypatch)
    rt = workspace.runtime(trusted=None)
    for _ in range(3):
        assert rt.trust().trusted is True and rt.config().max_inject_bytes == 1000
    assert len(decisions) == 1


# -- the review inbox ------------------------------------------------------------------------


def test_an_inbox_rewritten_within_the_tick_of_its_read_is_read_again(
    workspace: Workspace,
) -> None:
    workspace.write("project", "- x\n")
    rt = workspace.runtime()
    Review(rt).propose("add", {"text": "aaaa"}, "cli")
    assert [p["text"] for p in review_module.waiting(rt, "project")] == ["aaaa"]
    inbox = inbox_path(rt.paths["project"])
    rewrite_in_one_tick(inbox, inbox.read_bytes().replace(b"aaaa", b"bbbb"))
    assert [p["text"] for p in review_module.waiting(rt, "project")] == ["bbbb"]


# -- caches built on a view, and attacks ----------------------------------------------------


def test_the_editors_key_index_of_the_other_store_follows_a_racy_read(
    workspace: Workspace,
) -> None:
    """The other store's key index (cross-scope duplicates) is keyed by the read, not its
    stamp: a read again under the same stamp that found new text gives new keys."""
    path = workspace.write("global", "- aaaa\n")
    workspace.write("project", "- x\n")
    projects = Projects()
    projects.configure(Settings(agent_dir=str(workspace.agent_dir)), [workspace.root])
    rt = projects.runtime_for_path(workspace.root)
    assert list(projects.other_keys(rt, "project").values()) == ["aaaa"]
    rewrite_in_one_tick(path, b"- bbbb\n")
    assert list(projects.other_keys(rt, "project").values()) == ["bbbb"]


def test_a_racy_stamp_settles_once_a_read_finds_the_mtime_old(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Racy reads stop once the file is old: the read that sees the old mtime keeps a
    stamp that is trusted, and the looks after it read nothing."""
    path = workspace.write("project", "- aaaa\n")
    rt = workspace.runtime()
    assert rt.view("project").file.stamp.racy  # type: ignore[union-attr]
    age(path)
    assert not rt.view("project").file.stamp.racy  # type: ignore[union-attr]
    reads: list[object] = []
    real = runtime_module.read_store
    monkeypatch.setattr(
        runtime_module, "read_store", lambda *a, **k: reads.append(a) or real(*a, **k)
    )
    for _ in range(3):
        assert rt.notes("project") == ["aaaa"]
    assert reads == []


def test_a_rename_over_within_the_tick_is_seen(workspace: Workspace) -> None:
    """Another program's atomic save (a new file renamed over the store), of the same size
    and with the old mtime: its inode differs, or, were a freed inode reused, the racy stamp
    reads again."""
    path = workspace.write("project", "- aaaa\n")
    rt = workspace.runtime()
    assert rt.notes("project") == ["aaaa"]
    st = os.stat(path)
    tmp = path.with_name("other.tmp")
    tmp.write_bytes(b"- bbbb\n")
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, path)
    assert rt.notes("project") == ["bbbb"]


def test_a_store_with_an_mtime_in_the_future_is_read_again_until_it_is_past(
    workspace: Workspace,
) -> None:
    """A clock skewed ahead (a network mount, an archive unpacked): the file's mtime is
    in the future, so a same-size rewrite by that clock may share it; it is read again."""
    path = workspace.write("project", "- aaaa\n")
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 3600 * 10**9))
    rt = workspace.runtime()
    assert rt.notes("project") == ["aaaa"]
    rewrite_in_one_tick(path, b"- bbbb\n")
    assert rt.notes("project") == ["bbbb"]


def test_a_trust_json_renamed_over_in_the_tick_is_decided_again(
    workspace: Workspace,
) -> None:
    store = workspace.agent_dir / "trust.json"
    store.write_text(json.dumps({str(workspace.root): True}) + " ")
    rt = workspace.runtime(trusted=None)
    assert rt.trust().trusted is True
    st = os.stat(store)
    tmp = workspace.agent_dir / "trust.json.tmp"
    tmp.write_text(json.dumps({str(workspace.root): False}))
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, store)
    assert rt.trust().trusted is False


def test_the_inbox_poll_reports_a_rewrite_within_the_tick_of_its_last_look(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The editor's inbox poll (for clients without a file watcher) compares stamps: a racy
    one last seen is reported as a change, and a settled one is not."""
    workspace.write("project", "- x\n")
    projects = Projects()
    projects.configure(Settings(agent_dir=str(workspace.agent_dir)), [workspace.root])
    rt = projects.runtime_for_path(workspace.root)
    Review(rt).propose("add", {"text": "aaaa"}, "cli")
    inbox = inbox_path(rt.paths["project"])
    reported: list[object] = []
    ls: Any = SimpleNamespace(projects=projects)
    monkeypatch.setattr(review_module, "inbox_changed", lambda ls: reported.append(ls))
    ls.inbox_stamps = review_module._stamps(ls)
    rewrite_in_one_tick(inbox, inbox.read_bytes().replace(b"aaaa", b"bbbb"))
    review_module.check_inboxes(ls)
    assert reported == [ls]
    age(inbox)
    ls.inbox_stamps = review_module._stamps(ls)
    review_module.check_inboxes(ls)
    assert reported == [ls]  # settled: nothing to report


def test_the_inbox_poll_settles_on_an_inbox_with_an_mtime_in_the_future(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An inbox whose mtime is ahead of the clock (``touch -d tomorrow``, a skewed mount)
    is racy until the clock passes it: the poll compares its bytes then, so an unchanged
    inbox is not a change every second (a refresh of every open document, a lens refresh
    and a memory/inbox notification each time), and a rewrite in its tick still is."""
    workspace.write("project", "- x\n")
    projects = Projects()
    projects.configure(Settings(agent_dir=str(workspace.agent_dir)), [workspace.root])
    rt = projects.runtime_for_path(workspace.root)
    Review(rt).propose("add", {"text": "aaaa"}, "cli")
    inbox = inbox_path(rt.paths["project"])
    st = os.stat(inbox)
    os.utime(inbox, ns=(st.st_atime_ns, st.st_mtime_ns + 86400 * 10**9))
    reported: list[object] = []
    ls: Any = SimpleNamespace(projects=projects)
    monkeypatch.setattr(review_module, "inbox_changed", lambda ls: reported.append(ls))
    ls.inbox_stamps = review_module._stamps(ls)
    for _ in range(3):
        review_module.check_inboxes(ls)
    assert reported == []
    rewrite_in_one_tick(inbox, inbox.read_bytes().replace(b"aaaa", b"bbbb"))
    review_module.check_inboxes(ls)
    assert reported == [ls]


def _in_the_future(path: Path) -> None:
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 86400 * 10**9))


def test_a_store_in_the_future_is_read_once_a_look_not_once_a_question(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store whose mtime is ahead of the clock stays racy until the clock passes it. An
    editor's pass asks for the other store's view a few times (its keys, the global
    store's claims), and keystrokes a look apart (``DISK_LOOK_REUSE``) take one look: the
    file is read once for it, not at every question of every keystroke."""
    path = workspace.write("global", "- aaaa\n")
    workspace.write("project", "- x\n")
    _in_the_future(path)
    rt = workspace.runtime()
    rt.view("global")
    reads: list[object] = []
    real = runtime_module.read_store
    monkeypatch.setattr(
        runtime_module, "read_store", lambda *a, **k: reads.append(a) or real(*a, **k)
    )
    for _ in range(5):
        with rt.steady(reuse_for=60):
            for _ in range(3):
                assert rt.notes("global") == ["aaaa"]
    assert len(reads) == 1
    # Once the analysis rests: read afresh, and nothing reported when nothing changed
    # (a report refreshes every document, whose publish looks again: never a loop).
    assert rt.look_again() is False
    assert len(reads) == 2


def test_a_rewrite_in_the_tick_of_a_store_in_the_future_is_seen_at_the_next_look(
    workspace: Workspace,
) -> None:
    path = workspace.write("global", "- aaaa\n")
    workspace.write("project", "- x\n")
    _in_the_future(path)
    rt = workspace.runtime()
    with rt.steady(reuse_for=60):
        assert rt.notes("global") == ["aaaa"]
    rewrite_in_one_tick(path, b"- bbbb\n")
    assert rt.look_again() is True  # the look the editor takes once typing rests
    with rt.steady():
        assert rt.notes("global") == ["bbbb"]
    rewrite_in_one_tick(path, b"- cccc\n")
    with rt.steady():  # a fresh look (no reuse): read again
        assert rt.notes("global") == ["cccc"]


def test_an_unchanged_inbox_is_no_change_as_its_stamp_settles(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An inbox just written is racy: the polls while it is compare its bytes, and the
    first poll that finds its stamp settled (the clock past the margin, the file not
    touched) compares them once more: no change to report, at any of them."""
    workspace.write("project", "- x\n")
    projects = Projects()
    projects.configure(Settings(agent_dir=str(workspace.agent_dir)), [workspace.root])
    rt = projects.runtime_for_path(workspace.root)
    Review(rt).propose("add", {"text": "aaaa"}, "cli")
    reported: list[object] = []
    ls: Any = SimpleNamespace(projects=projects)
    monkeypatch.setattr(review_module, "inbox_changed", lambda ls: reported.append(ls))
    ls.inbox_stamps = review_module._stamps(ls)
    review_module.check_inboxes(ls)
    clock_ahead(monkeypatch)  # every stamp settled, no file touched
    review_module.check_inboxes(ls)
    review_module.check_inboxes(ls)
    assert reported == []


def test_a_settled_inbox_is_not_read_at_each_poll(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace.write("project", "- x\n")
    projects = Projects()
    projects.configure(Settings(agent_dir=str(workspace.agent_dir)), [workspace.root])
    rt = projects.runtime_for_path(workspace.root)
    Review(rt).propose("add", {"text": "aaaa"}, "cli")
    ls: Any = SimpleNamespace(projects=projects)
    monkeypatch.setattr(review_module, "inbox_changed", lambda ls: None)
    ls.inbox_stamps = review_module._stamps(ls)
    clock_ahead(monkeypatch)
    review_module.check_inboxes(ls)  # the poll that sees it settled reads it once more
    reads: list[object] = []
    real = review_module.read_store
    monkeypatch.setattr(
        review_module, "read_store", lambda *a, **k: reads.append(a) or real(*a, **k)
    )
    for _ in range(3):
        review_module.check_inboxes(ls)
    assert reads == []


def test_an_inbox_in_the_future_is_not_parsed_again_at_each_pass(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every analysis pass (each keystroke) asks for the proposals waiting (the `proposal`
    findings): an inbox whose racy stamp is read again and holds the same bytes keeps its
    proposals (200 of them parsed cost ~1.3 ms a keystroke), and a rewrite in its tick is
    still seen."""
    workspace.write("project", "- x\n")
    rt = workspace.runtime()
    Review(rt).propose("add", {"text": "aaaa"}, "cli")
    inbox = inbox_path(rt.paths["project"])
    _in_the_future(inbox)
    review_module._cache.clear()
    parsed: list[str] = []
    real = review_module.parse_inbox
    monkeypatch.setattr(
        review_module, "parse_inbox", lambda text: parsed.append(text) or real(text)
    )
    for _ in range(4):
        assert [p["text"] for p in review_module.waiting(rt, "project")] == ["aaaa"]
    assert len(parsed) == 1
    rewrite_in_one_tick(inbox, inbox.read_bytes().replace(b"aaaa", b"bbbb"))
    assert [p["text"] for p in review_module.waiting(rt, "project")] == ["bbbb"]
