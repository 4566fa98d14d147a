"""Where ``check``'s ``similar`` pass runs: its forked worker and its thread
(``store/similar_pass.py``). Whatever runs it, and however that fails, the reports are
those of the pass scored on the calling thread; no child is left behind."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from memory_ls.core import similar
from memory_ls.core.checks import Finding
from memory_ls.core.notes import parse_bullets
from memory_ls.core.scopes import SCOPES
from memory_ls.core.similar import DEFAULT_THRESHOLD, SIMILAR_LIMIT, key_pairs, similar_findings
from memory_ls.core.text import split_text
from memory_ls.store import lint, similar_pass
from memory_ls.store.lint import FileReport, lint_file, lint_stores
from memory_ls.store.runtime import MemoryRuntime
from memory_ls.store.similar_pass import SimilarWorker, _checked
from tests.conftest import Workspace
from tests.unit.test_lint import big_workspace
from tests.unit.test_similar_pairs import WORDS, random_store_from

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork: Linux only")


def reaped(pid: int) -> bool:
    """Whether ``pid`` is no child of this process any more (ended and reaped)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[SimilarWorker]]:
    """Every worker ``check`` forks, as it is forked."""
    made: list[SimilarWorker] = []
    start = SimilarWorker.__init__

    def recorded(self: SimilarWorker, threshold: float, limit: int | None = SIMILAR_LIMIT) -> None:
        start(self, threshold, limit)
        made.append(self)

    monkeypatch.setattr(SimilarWorker, "__init__", recorded)
    yield made


def hints_of(path: Path) -> list[Finding]:
    """The ``similar`` hints of a store, from the core alone (no thread, no worker)."""
    lines = split_text(path.read_text(encoding="utf-8")).lines
    bullets = [b for b in parse_bullets(lines) if b is not None]
    return similar_findings(bullets, DEFAULT_THRESHOLD)


def same_as_on_one_thread(reports: list[FileReport], workspace: Workspace) -> bool:
    """Whether ``reports`` are ``check``'s reports with every pass scored on this thread,
    their hints those the core finds."""
    runtime = workspace.runtime()
    expected = lint_stores(runtime, thread=False)
    for report, scope in zip(expected, SCOPES, strict=True):
        hints = [f for f in report.findings if f.code == "similar"]
        assert hints == hints_of(workspace.store(scope))
    return reports == expected


def run_python(script: str, workspace: Workspace) -> subprocess.CompletedProcess[str]:
    """``script`` run by this interpreter in a process of its own, in ``workspace``'s
    environment."""
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env=workspace.env(),
        check=False,
    )


def keys_of(rng: random.Random, count: int) -> list[str]:
    """``count`` distinct keys, many of them paraphrases of each other."""
    templates = [" ".join(rng.choices(WORDS, k=rng.randint(3, 12))) for _ in range(8)]
    return list(dict.fromkeys(n.lower() for n in random_store_from(rng, templates, count)))


def test_check_with_its_worker_is_check_on_one_thread(
    workspace: Workspace, forks: list[SimilarWorker], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = big_workspace(workspace).runtime()
    answered: list[bool] = []
    pairs = SimilarWorker.pairs

    def recorded(self: SimilarWorker, ticket: int) -> list[tuple[int, int, float]] | None:
        found = pairs(self, ticket)
        answered.append(found is not None)
        return found

    monkeypatch.setattr(SimilarWorker, "pairs", recorded)
    forked = lint_stores(runtime)
    assert len(forks) == 1  # one worker for both stores
    assert answered == [True, True]  # each store's pass came from the child
    assert reaped(forks[0]._pid or 0) and forks[0]._pid is None
    assert threading.active_count() == 1
    assert same_as_on_one_thread(forked, workspace)
    hints = [f for f in forked[0].findings if f.code == "similar"]
    assert len(hints) > 60
    # `check FILE` forks its own worker, with the same findings.
    assert lint_file(workspace.store("project"), runtime, "project") == forked[0]
    assert len(forks) == 2 and forks[1]._pid is None


def test_the_worker_answers_what_the_pass_finds() -> None:
    # Several requests in a row, answered in order; the first is asked for at once (the
    # child takes a second thread from its next block on), the others once scored.
    rng = random.Random(3)
    requests = [keys_of(rng, n) for n in (900, 5, 400)]
    worker = SimilarWorker(DEFAULT_THRESHOLD)
    try:
        tickets = [worker.submit(keys) for keys in requests]
        assert tickets == [0, 1, 2]
        for ticket, keys in zip(tickets, requests, strict=True):
            assert ticket is not None
            assert worker.pairs(ticket) == key_pairs(keys, DEFAULT_THRESHOLD)
    finally:
        pid = worker._pid
        worker.close()
    assert pid is not None and reaped(pid)


@pytest.mark.parametrize("after", [0, 1, 5, 10**6])
def test_a_pass_widened_after_any_block_finds_the_same_pairs(after: int) -> None:
    # The child's pass starts on one thread and takes a second once its parent waits:
    # whenever that is (before the first block, after some, never), the same pairs.
    rng = random.Random(after)
    keys = keys_of(rng, 1200)
    asked: list[int] = []

    def widen() -> bool:
        asked.append(1)
        return len(asked) > after

    threaded = similar_pass.ThreadedPass(keys, thread=False)
    assert threaded.pairs(widen) == key_pairs(keys, DEFAULT_THRESHOLD)
    blocks = len(threaded._pass.blocks)
    assert blocks > 10
    # Asked before each block this thread took, until the second thread started.
    assert (threaded._thread is not None) is (after < blocks - 1)
    assert threading.active_count() == 1


def test_a_full_pipe_both_ways_does_not_deadlock(monkeypatch: pytest.MonkeyPatch) -> None:
    # The child stuck writing a big answer (~3 MB: 600 near-identical keys make ~180,000
    # pairs, every one kept: no limit) while this process sends a request bigger than the
    # request pipe: the sender must take the answer in as it writes, whenever the child
    # gets to it.
    monkeypatch.setattr(similar_pass, "PIPE_SIZE", 4096)
    rng = random.Random(5)
    alike = [f"the same note, number {i}" for i in range(600)]
    other = [" ".join(rng.choices(WORDS, k=9)) + f" {i}" for i in range(1000)]
    assert len("".join(other)) > 4 * 4096
    worker = SimilarWorker(DEFAULT_THRESHOLD, None)
    try:
        first = worker.submit(alike)
        second = worker.submit(other)
        assert first == 0 and second == 1
        big = worker.pairs(first)
        assert big == key_pairs(alike, DEFAULT_THRESHOLD, None)
        assert big is not None and len(big) > 100_000
        assert worker.pairs(second) == key_pairs(other, DEFAULT_THRESHOLD, None)
    finally:
        worker.close()


def test_a_killed_worker_leaves_the_pass_to_check(
    workspace: Workspace, forks: list[SimilarWorker], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = big_workspace(workspace).runtime()
    submit = SimilarWorker.submit

    def killed_after(self: SimilarWorker, keys: list[str]) -> int | None:
        ticket = submit(self, keys)
        if self._pid is not None:  # (the second store's request finds it gone)
            os.kill(self._pid, signal.SIGKILL)  # out of memory, say
        return ticket

    monkeypatch.setattr(SimilarWorker, "submit", killed_after)
    assert same_as_on_one_thread(lint_stores(runtime), workspace)
    assert forks and all(w._pid is None for w in forks)


def test_a_worker_gone_before_a_request_gives_no_ticket() -> None:
    worker = SimilarWorker(DEFAULT_THRESHOLD)
    pid = worker._pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    worker._pid = None  # reaped here
    # The first write may still fit the pipe: the ticket's answer is then None.
    ticket = worker.submit(["a note", "a note!"])
    assert ticket is None or worker.pairs(ticket) is None
    assert worker.submit(["another", "note"]) is None
    worker.close()


def test_nonsense_from_the_worker_is_not_believed(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A child whose pairs name notes that are not there (a bug, a corrupt message): the
    # parent scores the pass itself and reports what it finds.
    runtime = big_workspace(workspace).runtime()
    real = similar.key_pairs
    monkeypatch.setattr(similar, "key_pairs", lambda keys, t: [(0, 10**6, 99.0)])
    worker = SimilarWorker(DEFAULT_THRESHOLD)  # forked with the bad scorer
    monkeypatch.setattr(similar, "key_pairs", real)
    monkeypatch.setattr(similar_pass, "start_worker", lambda threshold: worker)
    reports = lint_stores(runtime)
    monkeypatch.undo()
    assert same_as_on_one_thread(reports, workspace)
    assert worker._pid is None


@pytest.mark.parametrize(
    "found",
    [
        None,
        "pairs",
        [(0, 1)],
        [(1, 0, 90.0)],
        [(0, 5, 90.0)],
        [(0, 1, 90)],
        [(True, 1, 90.0)],
        [[0, 1, 90.0]],
        [(-1, 1, 90.0)],
    ],
)
def test_an_answer_is_checked_against_its_request(found: object) -> None:
    assert _checked(found, 5) is None
    assert _checked([(0, 4, 90.0), (1, 2, 85.5)], 5) == [(0, 4, 90.0), (1, 2, 85.5)]


def test_ctrl_c_beside_the_worker_ends_it(
    workspace: Workspace, forks: list[SimilarWorker], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = big_workspace(workspace).runtime()

    def interrupted(*args: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(lint, "_other_findings", interrupted)
    with pytest.raises(KeyboardInterrupt):
        lint_stores(runtime)
    (worker,) = forks
    assert worker._pid is None and worker._requests is None


def test_no_fork_beside_another_thread(
    workspace: Workspace, forks: list[SimilarWorker], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fork copies only the calling thread: with another thread alive (a lock it may
    # hold), the pass runs on a thread instead; so it does when fork itself fails.
    runtime = big_workspace(workspace).runtime()
    expected = lint_stores(runtime, thread=False)
    assert same_as_on_one_thread(expected, workspace)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert lint_stores(runtime) == expected
    finally:
        stop.set()
        other.join()
    assert forks == []

    def no_fork() -> int:
        raise BlockingIOError("Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    assert lint_stores(runtime) == expected


def test_no_fork_when_children_are_reaped_behind_check_s_back(
    workspace: Workspace, forks: list[SimilarWorker]
) -> None:
    runtime = big_workspace(workspace).runtime()
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        assert same_as_on_one_thread(lint_stores(runtime), workspace)
    finally:
        signal.signal(signal.SIGCHLD, previous)
    assert forks == []


CHILDREN = """
def children():
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid():
                found.append(entry)
    return found
"""


def test_the_child_leaves_no_output_and_no_process(workspace: Workspace) -> None:
    # Output this process had buffered when it forked is written once (the child leaves
    # with os._exit, flushing nothing), and no child is left once the reports are made.
    big_workspace(workspace)
    script = (
        "import sys, os\n" + CHILDREN + "sys.stdout.write('buffered before the fork\\n')\n"
        "from memory_ls.store.runtime import MemoryRuntime\n"
        "from memory_ls.store import lint\n"
        "seen = []\n"
        "other = lint._other_findings\n"
        "def watched(*args):\n"
        "    seen.append(len(children()))\n"
        "    return other(*args)\n"
        "lint._other_findings = watched\n"
        f"rt = MemoryRuntime({str(workspace.root)!r}, agent_dir={str(workspace.agent_dir)!r})\n"
        "reports = lint.lint_stores(rt)\n"
        "print(sum(f.code == 'similar' for r in reports for f in r.findings))\n"
        "print(seen, len(children()))\n"
    )
    done = run_python(script, workspace)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "buffered before the fork" and len(lines) == 3
    assert int(lines[1]) > 60
    assert lines[2] == "[1, 1] 0"  # the worker beside both stores' checks, then none
    assert done.stderr == ""


def test_a_worker_gone_while_a_request_waits_for_room_gives_no_ticket(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The child ends (out of memory, say) while this process waits to write the rest of
    # a request bigger than the pipe: the request is lost, check goes on without it.
    monkeypatch.setattr(similar_pass, "PIPE_SIZE", 4096)

    def ends() -> None:
        time.sleep(0.3)
        os._exit(3)

    monkeypatch.setattr(similar, "load_scorer", ends)  # (in the child: it never reads)
    worker = SimilarWorker(DEFAULT_THRESHOLD)
    pid = worker._pid
    keys = [f"note number {i} " * 5 for i in range(20_000)]
    try:
        ticket = worker.submit(keys)
        assert ticket is None or worker.pairs(ticket) is None
        assert worker.submit(["a note", "a note!"]) is None
    finally:
        worker.close()
    assert pid is not None and reaped(pid)


def test_the_child_holds_no_standard_stream(workspace: Workspace) -> None:
    # A reader of check's output waits for every copy of it to close: a parent killed
    # with SIGKILL must not leave its output open in the child, which may take the rest
    # of a pass (and of the passes already sent) to notice.
    script = (
        "import os, sys, time\n"
        "from memory_ls.store.similar_pass import SimilarWorker, ThreadedPass\n"
        "def slow(*args):\n"
        "    time.sleep(3)\n"
        "    return []\n"
        "ThreadedPass.pairs = slow\n"
        "worker = SimilarWorker(88.0)\n"
        "for _ in range(3):\n"
        "    worker.submit(['a note', 'another note'])\n"
        "print(worker._pid, flush=True)\n"
        "time.sleep(0.5)\n"  # the child is in the first pass
        "os.kill(os.getpid(), 9)\n"
    )
    started = time.monotonic()
    done = run_python(script, workspace)
    took = time.monotonic() - started
    child = int(done.stdout.split()[0])
    try:
        assert done.returncode == -signal.SIGKILL
        assert took < 2.5, took  # not the 3 s of the pass the child was scoring
        # and the child leaves at its next request: the parent is gone.
        for _ in range(100):
            try:
                with open(f"/proc/{child}/stat") as stat:
                    if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                        break
            except FileNotFoundError:  # ended and reaped
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the child lingers")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


def test_ctrl_c_at_the_fork_leaves_no_child(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C the moment the child is forked, before this process has kept its pid: the
    # interrupt waits until the worker is kept, and then ends it.
    runtime = big_workspace(workspace).runtime()
    children: list[int] = []
    fork = os.fork

    def interrupted_fork() -> int:
        pid = fork()
        if pid:
            children.append(pid)
            signal.raise_signal(signal.SIGINT)
        return pid

    monkeypatch.setattr(os, "fork", interrupted_fork)
    try:
        with pytest.raises(KeyboardInterrupt):
            lint_stores(runtime)
        assert len(children) == 1
        assert reaped(children[0])
        assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, ())
    finally:
        for pid in children:
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)


def test_check_of_several_files_forks_one_worker(
    workspace: Workspace, forks: list[SimilarWorker], capsys: pytest.CaptureFixture[str]
) -> None:
    # `check FILE...` forked a worker for each file, and waited for each child to import
    # its scorer in turn (30 small files: ~1 s against ~0.2 s on a thread). One worker
    # scores every file's pass; the reports are each file's alone.
    from memory_ls.cli import main
    from memory_ls.store.lint import lint_path, lint_paths

    big_workspace(workspace)
    other = workspace.root / "notes.md"
    other.write_text("- keep the cache warm\n- keep the caches warm now\n", encoding="utf-8")
    given = [workspace.store("project"), other, workspace.store("global"), other]
    assert main(["check", "--project", str(workspace.root), *map(str, given)]) == 1
    capsys.readouterr()
    assert len(forks) == 1 and forks[0]._pid is None
    agent = str(workspace.agent_dir)
    reports = lint_paths(given, agent, None, workspace.root)
    assert len(forks) == 2
    # (`other` named twice is checked once, where first named.)
    alone = [lint_path(path, agent, None, workspace.root) for path in given[:3]]
    assert reports == alone
    hinted = [any(f.code == "similar" for f in r.findings) for r in reports]
    assert hinted == [True, True, False]  # (the global store has no paraphrase)
    assert threading.active_count() == 1


def test_check_runs_where_signals_cannot_be_held(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Windows has no pthread_sigmask (nor fork: the pass runs on a thread there), and
    # check holds Ctrl-C back around its fork wherever it may fork.
    runtime = big_workspace(workspace).runtime()
    monkeypatch.delattr(signal, "pthread_sigmask")
    assert same_as_on_one_thread(lint_stores(runtime), workspace)


class _Nonsense:
    """The child's pass, answering pairs of notes that are not there."""

    def __init__(self, keys: list[str], *args: object) -> None:
        self.size = len(keys)

    def pairs(self, widen: object = None) -> list[tuple[int, int, float]]:
        return [(0, self.size + 5, 99.0)]


def _check_with_a_child_forked_with(
    monkeypatch: pytest.MonkeyPatch, name: str, value: object, runtime: MemoryRuntime
) -> tuple[list[FileReport], SimilarWorker]:
    """``check``'s reports with a worker forked while ``similar_pass.<name>`` was
    ``value`` (only the child has it), and that worker."""
    monkeypatch.setattr(similar_pass, name, value)
    worker = SimilarWorker(DEFAULT_THRESHOLD)
    monkeypatch.undo()
    monkeypatch.setattr(similar_pass, "start_worker", lambda threshold: worker)
    reports = lint_stores(runtime)
    monkeypatch.undo()
    return reports, worker


def test_nonsense_from_the_worker_s_pass_is_not_believed(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (The child scores with ThreadedPass, not key_pairs: the test above forks a child
    # that answers what the pass finds.)
    runtime = big_workspace(workspace).runtime()
    reports, worker = _check_with_a_child_forked_with(
        monkeypatch, "ThreadedPass", _Nonsense, runtime
    )
    assert same_as_on_one_thread(reports, workspace)
    assert worker._pid is None


def test_an_answer_to_no_request_ends_the_worker_not_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A child that answers twice: the second answer was filed under a ticket never given
    # (IndexError, a traceback from `check`). Now the child is ended and the passes left
    # to the caller.
    import marshal

    def serve(requests: int, replies: int, *args: object) -> None:
        similar_pass._read_message(requests)
        reply = marshal.dumps([])
        os.write(replies, 2 * (len(reply).to_bytes(4, "little") + reply))
        while similar_pass._read_message(requests) is not None:
            pass
        os._exit(0)

    monkeypatch.setattr(similar_pass, "_serve", serve)
    worker = SimilarWorker(DEFAULT_THRESHOLD)
    monkeypatch.undo()
    try:
        ticket = worker.submit(["a", "b"])
        assert ticket is not None
        answer = worker.pairs(ticket)
        assert answer in ([], None)
        later = worker.submit(["abc", "abd"])
        assert later is None or worker.pairs(later) is None
    finally:
        worker.close()
    assert worker._pid is None


def _twice(fd: int) -> Any:
    """``os.write`` that writes everything for ``fd`` twice (a child that answers each
    request twice, each answer as it should be)."""
    write = os.write

    def doubled(to: int, data: Any) -> int:
        if to == fd:
            write(to, bytes(data))
        return write(to, data)

    return doubled


def test_a_repeated_answer_is_not_taken_for_the_next_request_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A child that sends each answer twice, every copy well formed: the second copy of
    # the first answer came in where the second was awaited and, its indices inside the
    # second request's keys, was believed (the second store's hints were the first's).
    # Each answer now names its request: an answer out of step ends the worker, and the
    # caller scores the pass itself.
    serve = similar_pass._serve

    def doubling(requests: int, replies: int, *args: Any) -> NoReturn:
        os.write = _twice(replies)  # (in the child only: this process is not changed)
        serve(requests, replies, *args)

    monkeypatch.setattr(similar_pass, "_serve", doubling)
    worker = SimilarWorker(DEFAULT_THRESHOLD)
    monkeypatch.undo()
    first = ["keep the cache warm", "keep the caches warm", "a note", "another note"]
    second = ["run the tests first", "deploy on fridays", "never deploy on fridays", "x"]
    assert key_pairs(first, DEFAULT_THRESHOLD) != key_pairs(second, DEFAULT_THRESHOLD)
    try:
        tickets = [worker.submit(first), worker.submit(second)]
        assert tickets == [0, 1]
        assert worker.pairs(0) == key_pairs(first, DEFAULT_THRESHOLD)
        assert worker.pairs(1) in (None, key_pairs(second, DEFAULT_THRESHOLD))
    finally:
        pid = worker._pid
        worker.close()
    assert pid is None or reaped(pid)


def test_check_with_a_worker_that_repeats_itself_reports_what_the_core_finds(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both stores with as many notes, so the first store's pairs fit the second's request.
    rng = random.Random(7)
    workspace.write(
        "project", [f"deploy the service number {i:03d} on fridays" for i in range(120)]
    )
    workspace.write("global", [f"{i:03d} " + " ".join(rng.choices(WORDS, k=8)) for i in range(120)])
    runtime = workspace.runtime()
    serve = similar_pass._serve

    def doubling(requests: int, replies: int, *args: Any) -> NoReturn:
        os.write = _twice(replies)
        serve(requests, replies, *args)

    reports, worker = _check_with_a_child_forked_with(monkeypatch, "_serve", doubling, runtime)
    assert same_as_on_one_thread(reports, workspace)
    assert worker._pid is None
