"""``check``'s reports: linting a file and rendering the reports (``store/lint.py``, SPEC §8)."""

from __future__ import annotations

import json
import random
import sys
import threading
from pathlib import Path

import pytest

from memory_ls.core import similar
from memory_ls.core.similar import SERVER_BLOCK
from memory_ls.store import lint, switches
from memory_ls.store.lint import lint_file, lint_path, lint_stores, render_reports
from memory_ls.store.similar_pass import ThreadedPass
from tests.conftest import Workspace
from tests.unit.test_similar_pairs import WORDS, random_store_from


def test_sarif_uri_is_a_file_uri_for_an_absolute_path(tmp_path: Path) -> None:
    lone = tmp_path / "a b.md"
    lone.write_text("- x\n- x\n")
    out, failing = render_reports([lint_path(lone, str(tmp_path / "agent"), True)], "sarif")
    uri = json.loads(out)["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert uri["artifactLocation"]["uri"] == lone.as_uri()
    assert failing


def big_workspace(workspace: Workspace) -> Workspace:
    """Both stores, with every kind of finding ``check`` makes from more than one file:
    hundreds of paraphrases (a ``similar`` pass of many blocks), duplicates across
    scopes, conflicts, stale paths."""
    rng = random.Random(11)
    templates = [" ".join(rng.choices(WORDS, k=rng.randint(3, 12))) for _ in range(10)]
    notes = random_store_from(rng, templates, 15 * SERVER_BLOCK)
    notes += ["Use pnpm", "never use pnpm", "see src/gone.py", "The build is in lib/x/"]
    workspace.write("project", notes)
    workspace.write("global", [*notes[:5], "Always use yarn", "run the tests before push"])
    return workspace


def test_check_with_its_similar_thread_is_check_without(workspace: Workspace) -> None:
    runtime = big_workspace(workspace).runtime()
    interval = sys.getswitchinterval()
    threaded = lint_stores(runtime, fork=False)
    assert sys.getswitchinterval() == interval  # put back
    assert threading.active_count() == 1  # the thread has ended
    assert threaded == lint_stores(runtime, thread=False)
    # Each file alone (its own parse and plan, nothing taken from the other's report).
    alone = [lint_file(workspace.store(s), runtime, s) for s in ("project", "global")]
    assert threaded == alone
    codes = {f.code for r in threaded for f in r.findings}
    assert {"similar", "duplicate", "cross-scope-duplicate", "conflict", "stale-path"} <= codes
    hints = [f for f in threaded[0].findings if f.code == "similar"]
    assert len(hints) > 2 * SERVER_BLOCK  # found in many blocks, on both threads


def test_an_error_in_the_similar_thread_is_raised_by_check(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = big_workspace(workspace).runtime()
    score_block = similar.score_block
    failed = threading.Event()

    def fails_on_its_thread(p: similar.SimilarPass, index: int) -> list[tuple[int, int, float]]:
        if threading.current_thread() is not threading.main_thread():
            failed.set()
            raise MemoryError("the thread's own failure")
        failed.wait(timeout=30)  # the main thread's blocks come after the thread's failure
        return score_block(p, index)

    monkeypatch.setattr(similar, "score_block", fails_on_its_thread)
    with pytest.raises(MemoryError, match="the thread's own failure"):
        lint_stores(runtime, fork=False)
    assert failed.is_set()
    assert threading.active_count() == 1


def test_ctrl_c_beside_the_similar_thread_stops_it(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = big_workspace(workspace).runtime()
    interval = sys.getswitchinterval()
    scored: list[int] = []
    score_block = similar.score_block
    started, go_on = threading.Event(), threading.Event()

    def held(p: similar.SimilarPass, index: int) -> list[tuple[int, int, float]]:
        scored.append(index)
        started.set()
        go_on.wait(timeout=30)  # the thread is in its first block when Ctrl-C comes
        return score_block(p, index)

    def interrupted(*args: object) -> object:
        started.wait(timeout=30)
        raise KeyboardInterrupt

    monkeypatch.setattr(similar, "score_block", held)
    monkeypatch.setattr(lint, "_other_findings", interrupted)
    with pytest.raises(KeyboardInterrupt):
        lint_stores(runtime, fork=False)
    assert sys.getswitchinterval() == interval
    go_on.set()
    for thread in threading.enumerate():
        if thread is not threading.current_thread():
            thread.join(timeout=30)
    assert threading.active_count() == 1
    assert len(scored) == 1  # the block it was scoring, and no other after Ctrl-C


@pytest.mark.parametrize("error", [RuntimeError("can't start new thread"), MemoryError()])
def test_check_where_no_thread_can_be_started_scores_the_pass_itself(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    """A process or memory limit: the pass is scored on the calling thread, with the same
    findings, and the switch interval it shortened for the thread is put back."""
    runtime = big_workspace(workspace).runtime()
    on_one_thread = lint_stores(runtime, thread=False)
    interval = sys.getswitchinterval()
    tried: list[str] = []

    def cannot_start(self: threading.Thread) -> None:
        tried.append(self.name)
        raise error

    monkeypatch.setattr(threading.Thread, "start", cannot_start)
    assert lint_stores(runtime, fork=False) == on_one_thread
    assert tried  # (a thread was asked for)
    assert switches._switches_held == 0
    assert sys.getswitchinterval() == interval


def test_a_pass_that_cannot_widen_scores_on_and_asks_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker's pass asks for its second thread once its parent waits: if none can be
    started, it scores the rest itself, and does not ask before each block again."""
    rng = random.Random(4)
    templates = [" ".join(rng.choices(WORDS, k=rng.randint(3, 12))) for _ in range(10)]
    keys = list(dict.fromkeys(n.lower() for n in random_store_from(rng, templates, 1200)))
    interval = sys.getswitchinterval()
    tried: list[str] = []

    def cannot_start(self: threading.Thread) -> None:
        tried.append(self.name)
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", cannot_start)
    threaded = ThreadedPass(keys, thread=False)
    assert len(threaded._pass.blocks) > 10
    assert threaded.pairs(lambda: True) == similar.key_pairs(keys, similar.DEFAULT_THRESHOLD)
    assert len(tried) == 1
    assert threaded._thread is None
    assert switches._switches_held == 0
    assert sys.getswitchinterval() == interval
