"""Work off the edit path: delayed calls, the ``similar`` pass in a thread, and its progress;
the first reading of a large store's claims (for ``conflict``) in a thread too.

A keystroke is answered from the per-line state at once; what can wait (the
fuzzy ``similar`` comparison, the other store's refresh) runs here, after a
short quiet period or in a daemon thread, and publishes again when it is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from memory_ls.core.conflicts import claims_of_key
from memory_ls.core.text import MAX_STORE_BYTES, near_duplicate_key
from memory_ls.server import publishing
from memory_ls.server.documents import MemoryDocument
from memory_ls.server.protocol import CLIENT_TIMEOUT

if TYPE_CHECKING:
    from memory_ls.server.server import MemoryServer

log = logging.getLogger("memory_ls.server")

SIMILAR_DELAY = 0.05
"""Seconds of quiet after an edit before the edited notes are compared for ``similar``."""
PROGRESS_MIN_NOTES = 500
"""Stores with fewer notes finish the ``similar`` pass too fast to show progress."""
CONFLICT_INLINE_NOTES = 300
"""With fewer notes (both stores) the claims are read on open, in a few ms; with more, in
a thread first (reading 4,500 notes' claims cold takes tens of ms)."""


def in_daemon_thread(work: Callable[[], None], name: str) -> None:
    """Run ``work`` in a daemon thread named ``name``; right here when no thread can be
    started (a process or memory limit: "can't start new thread"), as ``check``'s
    similar pass does. ``work`` hands its result to the loop (``call_soon_threadsafe``),
    which takes it the same from either: the findings still come, later in this call
    rather than beside it, and nothing is left waiting for a thread that never ran (a
    progress begun for good, a store's conflicts, its project files' judge)."""
    try:
        threading.Thread(target=work, name=name, daemon=True).start()
    except (RuntimeError, MemoryError):
        log.warning("no thread for %s: its work runs on the event loop", name)
        work()


def burst_end(first: float, last: float, delay: float, max_wait: float) -> float:
    """When a call asked for by a burst of asks runs: ``delay`` seconds after the last ask
    (``last``), but no later than ``max_wait`` seconds after the first (``first``), so asks
    that never stop (a watch-mode build) cannot push it back for ever."""
    return min(last + delay, first + max_wait)


class _Pending:
    """One pending call of :class:`Timers`: what runs, when, and the timer that wakes it."""

    __slots__ = ("deadline", "first", "fn", "handle", "loop")

    def __init__(
        self, loop: asyncio.AbstractEventLoop, deadline: float, fn: Callable[[], None]
    ) -> None:
        self.loop = loop
        self.first = loop.time()
        """When it was first asked for (the start of a :meth:`Timers.coalesce` burst)."""
        self.deadline = deadline
        """When ``fn`` runs (``loop.time()``): moved later by each call that replaces it."""
        self.fn = fn
        self.handle: asyncio.TimerHandle | None = None


class Timers:
    """Calls delayed on the event loop, one pending call per kind and key."""

    def __init__(self, report: Callable[[str], None]) -> None:
        self._report = report
        """Where a delayed call that failed is reported (the client's log)."""
        self._pending: dict[tuple[str, str], _Pending] = {}

    def later(self, kind: str, key: str, delay: float, fn: Callable[[], None]) -> None:
        """Run ``fn`` after ``delay`` seconds, replacing a pending call of the same kind.

        A call replaced by one due later keeps its timer and only moves its deadline: the
        timer, when it wakes before the deadline, sleeps again until it (each keystroke
        replaced two or three calls, and cancelling a timer and making another cost
        ~0.02 ms of a keystroke's ~0.4).
        """
        loop = asyncio.get_running_loop()
        self._at(loop, kind, key, loop.time() + delay, fn)

    def _at(
        self,
        loop: asyncio.AbstractEventLoop,
        kind: str,
        key: str,
        deadline: float,
        fn: Callable[[], None],
    ) -> None:
        """:meth:`later`, at ``deadline`` (``loop.time()``)."""
        pending = self._pending.get((kind, key))
        if pending is not None and pending.handle is not None:
            if pending.loop is loop:
                pending.fn = fn
                if deadline >= pending.deadline:
                    pending.deadline = deadline
                    return
            # Due sooner than the timer wakes (or on another loop): a timer of its own.
            pending.handle.cancel()
        pending = self._pending[(kind, key)] = _Pending(loop, deadline, fn)
        self._arm(kind, key, pending)

    def coalesce(
        self, kind: str, key: str, delay: float, max_wait: float, fn: Callable[[], None]
    ) -> None:
        """Run ``fn`` once, when the asks of a burst have been quiet for ``delay`` seconds,
        and at the latest ``max_wait`` seconds after its first ask (:func:`burst_end`).

        :meth:`later` with that deadline: an ask while the call is pending only moves its
        deadline (no timer is cancelled or made), so a thousand asks in a row cost a
        thousand assignments and one call (the last ask's ``fn``).
        """
        loop = asyncio.get_running_loop()
        now = loop.time()
        pending = self._pending.get((kind, key))
        first = pending.first if pending is not None else now
        # The deadline itself, never ``now`` plus a difference: a deadline held at
        # ``first + max_wait`` must compare equal, not an ulp sooner (which would start a
        # new burst).
        self._at(loop, kind, key, burst_end(first, now, delay, max_wait), fn)

    def _arm(self, kind: str, key: str, pending: _Pending) -> None:
        def wake() -> None:
            if self._pending.get((kind, key)) is not pending:
                return  # (replaced by a call due sooner, with its own timer)
            handle = pending.handle
            if handle is not None and pending.deadline > handle.when():
                self._arm(kind, key, pending)  # moved later since: sleep until then
                return
            del self._pending[(kind, key)]
            # The timer holds this closure and the closure the pending call: let go, or
            # that cycle keeps what ``fn`` holds (a closed store's whole document) alive
            # until a full collection, which a server that froze its start-up rarely runs.
            pending.handle = None
            try:
                pending.fn()
            except Exception as exc:
                self._report(f"memory-ls: {kind} failed: {exc!r}")

        pending.handle = pending.loop.call_at(pending.deadline, wake)


class WorkProgress:
    """One ``$/progress`` begin/end pair around background work.

    The token is created with ``window/workDoneProgress/create`` (a request, so
    it is awaited in a task); ``finish`` may come first, and then ends it as
    soon as it has begun.
    """

    def __init__(self, server: MemoryServer, message: str | None) -> None:
        self.server = server
        self.token: str | None = None
        self.finished = False
        if message is not None:
            asyncio.get_running_loop().create_task(self._begin(message))

    async def _begin(self, message: str) -> None:
        token = f"memory-ls/{id(self)}"
        progress = self.server.work_done_progress
        try:
            await asyncio.wait_for(progress.create_async(token), CLIENT_TIMEOUT)
            progress.begin(token, lsp.WorkDoneProgressBegin(title="memory-ls", message=message))
        except Exception as exc:  # the client refused or never answered: no progress
            log.info("no work-done progress: %r", exc)
            return
        self.token = token
        if self.finished:
            self._end()

    def finish(self) -> None:
        """The work is done: end the progress (now, or once it has begun)."""
        self.finished = True
        if self.token is not None:
            self._end()

    def _end(self) -> None:
        token, self.token = self.token, None
        if token is not None:
            with contextlib.suppress(Exception):
                self.server.work_done_progress.end(token, lsp.WorkDoneProgressEnd())


def background_progress(ls: MemoryServer, message: str, size: int) -> WorkProgress:
    """Work-done progress for a long pass, when the client shows it (else a no-op)."""
    report = size >= PROGRESS_MIN_NOTES and bool(ls.capability("window.work_done_progress"))
    return WorkProgress(ls, message if report else None)


def start_similar(ls: MemoryServer, doc: MemoryDocument) -> None:
    """All ``similar`` pairs once, in a daemon thread, then a second publish."""
    found = ls.document(doc.uri)
    if (
        found is None
        or ls.projects.settings.severity.get("similar") == "off"
        or doc.size > MAX_STORE_BYTES
    ):
        return
    state = found.state
    keys = ls.analysis.similar_snapshot(doc)
    threshold = ls.analysis.similar_threshold()
    loop = asyncio.get_running_loop()
    progress = background_progress(ls, f"Looking for similar notes among {len(keys)}", len(keys))

    def done(pairs: dict[tuple[str, str], float] | None) -> None:
        progress.finish()
        if pairs is None or not ls.is_open(doc):
            return
        state.set_similar(pairs)
        state.similar_ready = True
        ls.analysis.similar_incremental(doc)
        publishing.publish(ls, doc)

    def work() -> None:
        # A daemon thread, so a long pass never holds up the server's exit.
        try:
            pairs = ls.analysis.all_pairs(keys, threshold)
        except Exception as exc:
            log.warning("similar hints failed: %r", exc)
            pairs = None
        with contextlib.suppress(RuntimeError):  # the loop is gone: exiting
            loop.call_soon_threadsafe(done, pairs)

    in_daemon_thread(work, "memory-ls-similar")


def similar_after_edit(ls: MemoryServer, doc: MemoryDocument) -> None:
    """Compare the edited notes against the rest once typing pauses."""

    def run() -> None:
        if not ls.is_open(doc):
            return
        ls.analysis.similar_incremental(doc)
        publishing.publish(ls, doc)

    if ls.projects.settings.severity.get("similar") != "off":
        ls.timers.later("similar", doc.uri, SIMILAR_DELAY, run)


def prepare_conflicts(ls: MemoryServer, doc: MemoryDocument) -> Callable[[], None] | None:
    """Before the first ``conflict`` pass of a large store: read every note's claims (this
    store's, and the global store's for a project store) in a daemon thread, then publish.

    Until then the document shows no ``conflict`` findings, so opening it is not held
    up; the claims are cached by key, so every later pass (and keystroke) finds them.
    This marks the document as waiting for them and returns what starts the thread
    (``None``: nothing to wait for). The caller starts it once the first publish is
    written: a thread started before would take the GIL from that publish (it runs
    pure Python, and takes the interpreter at each switch interval, 5 ms).
    """
    found = ls.document(doc.uri)
    if found is None or ls.projects.settings.severity.get("conflict") == "off":
        return None
    state = found.state
    info = state.info
    others = ls.projects.store_notes(info.runtime, "global") if info.scope == "project" else []
    if len(doc.key_lines) + len(others) < CONFLICT_INLINE_NOTES:
        return None
    state.conflicts_ready = False
    keys = list(doc.key_lines)

    def start() -> None:
        loop = asyncio.get_running_loop()

        def done() -> None:
            state.conflicts_ready = True
            if ls.is_open(doc):
                publishing.publish(ls, doc)

        def work() -> None:
            try:
                for key in keys:
                    claims_of_key(key)
                for note in others:
                    claims_of_key(near_duplicate_key(note))
            except Exception as exc:  # then the pass reads them itself
                log.warning("reading claims failed: %r", exc)
            with contextlib.suppress(RuntimeError):  # the loop is gone: exiting
                loop.call_soon_threadsafe(done)

        in_daemon_thread(work, "memory-ls-claims")

    return start
