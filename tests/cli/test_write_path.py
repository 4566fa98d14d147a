"""The write path against other writers and hostile files, with real processes (SPEC §1, §3, §8).

Each test runs ``memory-ls`` (or the runtime in a separate process) against a store
that another process holds locked, rewrites without the lock, swaps, owns or made
read-only, and checks what the store holds afterwards.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_ls.core.notes import parse_notes
from memory_ls.store.files import (
    folder_changed_message,
    foreign_owner_message,
    locked_message,
    read_only_message,
)
from tests.conftest import Workspace, store_text
from tests.lock_holder import held_lock, release, waits_on

WRITER = """
import sys
from pathlib import Path
from memory_ls.store.runtime import MemoryRuntime
rt = MemoryRuntime(Path(sys.argv[1]))
for i in range(int(sys.argv[3])):
    scope = sys.argv[4] if len(sys.argv) > 4 else ("project", "global")[i % 2]
    r = rt.run("add", {"text": f"{sys.argv[2]} note {i}", "scope": scope})
    assert "error" not in r, r
"""

MOVER = """
import sys
from pathlib import Path
from memory_ls.store.runtime import MemoryRuntime
rt = MemoryRuntime(Path(sys.argv[1]))
source, rounds, notes = sys.argv[2], int(sys.argv[3]), sys.argv[4:]
for _ in range(rounds):
    for note in notes:
        r = rt.run("move", {"text": note, "scope": source})
        error = r.get("error")
        assert error is None or error.startswith("No "), r  # elsewhere just now: fine
"""

OUTSIDE = """
import os, sys, time
path, stop, pause = sys.argv[1], sys.argv[2], float(sys.argv[3])
i = 0
while not os.path.exists(stop):
    while True:  # an editor that saves in place: read, then write the whole file
        fd = os.open(path, os.O_RDWR)
        try:
            data = b""
            while chunk := os.read(fd, 1 << 20):
                data += chunk
            os.pwrite(fd, data + f"- outside {i}\\n".encode(), 0)
            # Renamed over since we opened it: our save went to the old file, save again.
            saved = os.fstat(fd).st_ino == os.stat(path).st_ino
        finally:
            os.close(fd)
        if saved:
            break
    i += 1
    time.sleep(pause)
print(i)
"""


def start(workspace: Workspace, script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        env=workspace.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 180) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return out


def notes_of(path: Path) -> list[str]:
    return parse_notes(path.read_text(encoding="utf-8")) if path.exists() else []


# -- 1. a move holds both stores' locks -------------------------------------------------


def test_moves_both_ways_and_adds_at_once_lose_and_duplicate_nothing(
    workspace: Workspace,
) -> None:
    moving = [f"moving {n}" for n in range(6)]
    workspace.write("project", moving)
    project = str(workspace.root)
    procs = [
        start(workspace, MOVER, project, "project", "25", *moving),
        start(workspace, MOVER, project, "global", "25", *moving),
        start(workspace, MOVER, project, "project", "25", *reversed(moving)),
        start(workspace, WRITER, project, "adder0", "30"),
        start(workspace, WRITER, project, "adder1", "30"),
    ]
    for proc in procs:
        finish(proc)
    project_notes = notes_of(workspace.project_store)
    global_notes = notes_of(workspace.global_store)
    for note in moving:  # each moved note in exactly one store, once
        assert project_notes.count(note) + global_notes.count(note) == 1, note
    for w in range(2):
        for i in range(30):
            where = project_notes if i % 2 == 0 else global_notes
            assert where.count(f"adder{w} note {i}") == 1, (w, i)
    assert len(project_notes) + len(global_notes) == len(moving) + 60
    assert sorted(os.listdir(workspace.root / ".pi")) == ["memory.md"]


def test_a_move_writes_nothing_until_it_holds_both_stores(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the source locked by another writer, the target is not touched either."""
    workspace.write("project", ["m"])
    workspace.write("global", ["g"])
    monkeypatch.setenv("MEMORY_LS_LOCK_TIMEOUT", "0.5")
    for held, scope in ((workspace.project_store, "project"), (workspace.global_store, "global")):
        with held_lock(held, workspace.env()):
            r = workspace.cli("move", "--scope", scope, "m" if scope == "project" else "g")
        assert r.returncode == 1
        assert f"Error: {locked_message(held, 0.5)}" in r.stderr.splitlines(), r.stderr
        assert notes_of(workspace.project_store) == ["m"]
        assert notes_of(workspace.global_store) == ["g"]


# -- 2. waiting for the lock is bounded --------------------------------------------------


def test_a_held_lock_is_waited_for_then_refused(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = workspace.write("project", ["a"])
    monkeypatch.setenv("MEMORY_LS_LOCK_TIMEOUT", "0.5")
    with held_lock(store, workspace.env()):
        began = time.monotonic()
        r = workspace.cli("add", "b")
        waited = time.monotonic() - began
    assert r.returncode == 1
    assert f"Error: {locked_message(store, 0.5)}" in r.stderr.splitlines()
    assert locked_message(store, 0.5) == (
        f"Memory file is locked by another process (waited 0.5 s): {store}"
    )
    assert waited >= 0.5
    assert store.read_text() == store_text("a")


def test_a_lock_released_in_time_lets_the_write_through(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = workspace.write("global", ["g"])
    monkeypatch.setenv("MEMORY_LS_LOCK_TIMEOUT", "not a number")  # the default, 10 s
    with held_lock(store, workspace.env(), seconds=1.0) as holder:
        r = workspace.cli("add", "--scope", "global", "h")
        holder.wait(timeout=30)
    assert r.returncode == 0, r.stderr
    assert notes_of(store) == ["g", "h"]


# -- 3. the file keeps its owner and group -------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can make a file of another user")
def test_root_keeps_the_owner_and_group_of_the_store(workspace: Workspace) -> None:
    store = workspace.write("project", ["a"])
    os.chown(store, 12345, 23456)
    os.chmod(store, 0o640)
    r = workspace.cli("add", "b")
    assert r.returncode == 0, r.stderr
    st = os.stat(store)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (12345, 23456, 0o640)
    assert notes_of(store) == ["a", "b"]


@pytest.mark.skipif(os.geteuid() != 0, reason="running as another user needs root")
def test_another_user_is_refused_instead_of_taking_the_store_over(
    workspace: Workspace,
) -> None:
    store = workspace.write("project", ["a"])
    store.chmod(0o666)
    store.parent.chmod(0o777)  # the rename would succeed: the folder lets anyone write
    nobody = 65534
    # As nobody, able to look into pytest's private folders (CAP_DAC_READ_SEARCH) but
    # with no other privilege: it may write only where the modes let anyone write.
    r = subprocess.run(
        [
            "setpriv",
            f"--reuid={nobody}",
            f"--regid={nobody}",
            "--clear-groups",
            "--inh-caps=+dac_read_search",
            "--ambient-caps=+dac_read_search",
            sys.executable,
            "-m",
            "memory_ls",
            "add",
            "--trusted",
            "b",
        ],
        cwd=workspace.root,
        env=workspace.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert f"Error: {foreign_owner_message(store, 0)}" in r.stderr.splitlines(), r.stderr
    st = os.stat(store)
    assert (st.st_uid, st.st_gid) == (0, 0)
    assert store.read_text() == store_text("a")
    assert sorted(os.listdir(store.parent)) == ["memory.md"]


# -- 4. a folder swapped while we waited is refused ---------------------------------------


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize("where", ["inside", "outside"])
def test_a_pi_swapped_for_a_symlink_during_the_wait_is_refused(
    workspace: Workspace, tmp_path: Path, where: str
) -> None:
    store = workspace.write("project", ["a"])
    pi = store.parent
    moved = workspace.root / "pi-real" if where == "inside" else tmp_path / "elsewhere"
    with held_lock(store, workspace.env()) as holder:
        writer = subprocess.Popen(
            [sys.executable, "-m", "memory_ls", "add", "b"],
            cwd=workspace.root,
            env=workspace.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert waits_on(writer.pid, pi), "the writer never reached the lock"
        pi.rename(moved)
        pi.symlink_to(moved)  # .pi now leads to the very folder the writer holds
        release(holder)
        _, err = writer.communicate(timeout=60)
    assert writer.returncode == 1
    assert f"Error: {folder_changed_message(pi)}" in err.splitlines(), err
    assert (moved / "memory.md").read_text() == store_text("a")
    assert sorted(os.listdir(moved)) == ["memory.md"]


# -- 5. a program that writes without the lock loses nothing, and makes us lose nothing ----


def test_an_outside_writer_in_a_loop_and_our_adds_lose_nothing(
    workspace: Workspace, tmp_path: Path
) -> None:
    store = workspace.write("project", ["seed"])
    stop = tmp_path / "stop"
    outside = start(workspace, OUTSIDE, str(store), str(stop), "0.05")
    project = str(workspace.root)
    writers = [start(workspace, WRITER, project, f"w{w}", "40", "project") for w in range(2)]
    cli = [workspace.cli("add", f"cli {n}") for n in range(4)]
    for proc in writers:
        finish(proc)
    stop.touch()
    written = int(finish(outside))
    assert all(r.returncode == 0 for r in cli), [r.stderr for r in cli]
    notes = notes_of(store)
    ours = {f"w{w} note {i}" for w in range(2) for i in range(40)} | {f"cli {n}" for n in range(4)}
    theirs = {f"outside {i}" for i in range(written)}
    assert written > 5
    assert sorted(ours - set(notes)) == [], "our adds were lost"
    assert sorted(theirs - set(notes)) == [], "the outside writer's saves were lost"
    assert sorted(os.listdir(store.parent)) == ["memory.md"]


# -- 6. only our own temporaries are cleaned up ------------------------------------------


def test_a_write_removes_only_its_own_kind_of_stale_temporary(workspace: Workspace) -> None:
    store = workspace.write("project", ["a"])
    # The lock covers the store and its review inbox: a dead writer's temporary of either goes.
    mine = [".memory.md.0123456789ab.tmp", ".memory.inbox.jsonl.0123456789ab.tmp"]
    users = [
        "memory.md.tmp-notes",
        "memory.md~",
        ".memory.md.old.tmp",
        ".memory.md.swp.tmp",
        ".memory.inbox.jsonl.bak.tmp",
    ]
    for name in [*mine, *users]:
        (store.parent / name).write_text("keep me")
    r = workspace.cli("add", "b")
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(store.parent)) == sorted(["memory.md", *users])
    assert all((store.parent / name).read_text() == "keep me" for name in users)


# -- 7. a read-only store is refused, not replaced ---------------------------------------


@pytest.mark.parametrize("scope", ["project", "global"])
def test_a_read_only_store_is_refused(workspace: Workspace, scope: str) -> None:
    store = workspace.write(scope, ["a"])  # type: ignore[arg-type]
    store.chmod(0o444)
    r = workspace.cli("add", "--scope", scope, "b")
    assert r.returncode == 1
    assert f"Error: {read_only_message(store)}" in r.stderr.splitlines(), r.stderr
    assert read_only_message(store).startswith("Memory file is read-only")
    assert store.read_text() == store_text("a")
    assert stat.S_IMODE(store.stat().st_mode) == 0o444
    # A no-op is not a write: listing and a duplicate add still work.
    assert workspace.cli("add", "--scope", scope, "a").returncode == 0


def test_the_doctor_says_a_read_only_store_and_inbox_would_not_be_written(
    workspace: Workspace,
) -> None:
    """As it says a store's other names (hard links): before every add, propose, accept or
    reject is refused for it (a store without its owner's write bit, and an inbox)."""
    import json

    from memory_ls.store.paths import inbox_path

    store = workspace.write("global", ["a"])
    assert workspace.cli("add", "--scope", "global", "--propose", "b").returncode == 0
    inbox = inbox_path(store)
    for path in (store, inbox):
        path.chmod(0o444)
    report = json.loads(workspace.cli("doctor", "--json").stdout)
    assert report["global"]["readOnlyReason"] == read_only_message(store)
    assert f"inbox: {read_only_message(inbox)}" in report["problems"]
    r = workspace.cli("doctor")
    assert f"  read-only: {read_only_message(store)}" in r.stdout.splitlines(), r.stdout
    for path in (store, inbox):
        path.chmod(0o644)
    report = json.loads(workspace.cli("doctor", "--json").stdout)
    assert "readOnlyReason" not in report["global"]
    assert not [p for p in report["problems"] if "read-only" in p]
