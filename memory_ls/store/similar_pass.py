"""Where ``check``'s ``similar`` passes run: beside its other checks, so that the pass
and the checks share the two cores.

- :class:`SimilarWorker`, on Linux: a child forked when ``check`` starts, before any
  store is read, so that it imports the scorer (rapidfuzz, ~15 ms) while this process
  reads and parses the stores (this process then never imports it). Each request is one
  store's keys, each answer that store's pairs, both ``marshal``-ed with the request's
  number and framed by their length: an answer that does not name the request awaited
  (one sent twice, or skipped) ends the child, and its passes are scored here. In the child the pass runs as a :class:`ThreadedPass`: on one thread while
  this process runs its checks, on two once it waits for the answer.
- :class:`ThreadedPass`: the pass's blocks scored on a second thread and, once asked
  for the pairs, on the calling one too (elsewhere, or where there may be no fork).

Why a child and not only a thread: beside ``check``'s other checks (Python, holding the
GIL) a thread's ``cdist`` takes the GIL back at each of its steps of 4-32 rows (to look
for Ctrl-C), about a thousand hand-overs on 4,500 notes, which cost both threads CPU and
left the pass waiting (docs/performance.md). The child shares nothing with the checks
but the keys it is sent and the pairs it sends back; its two threads are both in
``cdist`` most of the time. Nothing depends on the child: if it cannot be forked, dies,
or answers nonsense, :meth:`SimilarWorker.pairs` returns ``None`` and the caller scores
the pass itself.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
from typing import TYPE_CHECKING, NoReturn

from memory_ls.core.similar import DEFAULT_THRESHOLD, SIMILAR_LIMIT
from memory_ls.store.switches import short_switches

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

PIPE_SIZE = 1 << 20
"""The request pipe's buffer: one store's keys (the store cap is 256 KiB) fit in it, so
sending them does not wait for the child to read (it may still be importing)."""

_LENGTH = 4
"""Bytes of a message's length, little-endian, before the message."""

Pairs = list[tuple[int, int, float]]


def may_fork() -> bool:
    """Linux, no other thread, and children not reaped behind this process's back.

    A fork copies only the thread that calls it, so a lock another thread held would stay
    held in the child. With ``SIGCHLD`` ignored (inherited from whoever started us) the
    child would be reaped on its own, and its pid could be another process's by the time
    it is ended. On macOS the system's libraries are not safe in a child that was forked
    and did not exec; elsewhere there is no fork.
    """
    import signal

    return (
        sys.platform.startswith("linux")
        and threading.active_count() == 1
        and signal.getsignal(signal.SIGCHLD) != signal.SIG_IGN
    )


class ThreadedPass:
    """One ``similar`` pass (:class:`~memory_ls.core.similar.SimilarPass`) scored on a second
    thread while this one does other work; this thread joins in when it asks for the
    pairs, so both cores score what is left (``cdist`` releases the GIL while it scores).

    The thread that starts scoring first takes the blocks from the front (the shortest
    keys), one at a time, the other from the back, so neither waits for the other's share;
    they are put back together in their order (:class:`~memory_ls.core.similar.ScoredBlocks`):
    the pairs are those of :func:`~memory_ls.core.similar.key_pairs`, whichever thread
    scored which block. From the front, the blocks reach the pass's limit as soon as the
    rows do: no block after that one is taken any more, and the pairs of those scored
    from the back are dropped (a store of near-identical notes costs a few blocks).
    An error in the thread is raised again by :meth:`pairs`; :meth:`stop` (after an error
    or Ctrl-C on this thread) lets the thread end after its block. It is a daemon: an
    interrupted ``check`` never waits for it.
    """

    def __init__(
        self,
        keys: list[str],
        thread: bool = True,
        threshold: float = DEFAULT_THRESHOLD,
        limit: int | None = SIMILAR_LIMIT,
    ) -> None:
        """``keys``: the keys compared, each once; ``thread``: whether to start the second
        thread (else every block is scored on this one, when asked); ``limit``: the pairs
        kept (:func:`~memory_ls.core.similar.rows_to_limit`)."""
        from memory_ls.core.similar import ScoredBlocks, SimilarPass

        self._pass = SimilarPass(keys, threshold, limit)
        self._scored = ScoredBlocks(self._pass)
        self._front = 0
        """The next block from the front."""
        self._back = len(self._pass.blocks)
        """The block after the next one from the back."""
        self._front_taken = False
        self._lock = threading.Lock()
        self._stopped = False
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._no_thread = False
        """A thread could not be started: none is tried again."""
        self._holds_switches = False
        if thread:
            self._start_thread()

    def _start_thread(self) -> None:
        """Start the second thread, unless there is one, or no block is left for it (one
        block, a small store: scored on the asking thread alone). If none can be started
        (a process or memory limit), every block is scored on the asking thread: the
        same pairs."""
        with self._lock:
            left = min(self._back, self._scored.end) - self._front
            if self._thread is not None or self._stopped or self._no_thread or left < 2:
                return
            thread = threading.Thread(
                target=self._run, name="memory-ls check: similar", daemon=True
            )
            short_switches(True)
            self._holds_switches = True
            self._thread = thread
        try:
            thread.start()
        except (RuntimeError, MemoryError):  # "can't start new thread": it never ran
            with self._lock:
                self._thread, self._no_thread = None, True
                release, self._holds_switches = self._holds_switches, False
            if release:
                short_switches(False)

    def _take(self, front: bool) -> int | None:
        """The next block to score, from the front or the back; ``None`` once every block
        that may be needed is taken."""
        with self._lock:
            self._back = min(self._back, self._scored.end)
            if self._stopped or self._front >= self._back:
                return None
            if front:
                self._front += 1
                return self._front - 1
            self._back -= 1
            return self._back

    def _score(self, widen: Callable[[], bool] | None = None) -> None:
        from memory_ls.core.similar import score_block

        with self._lock:
            front, self._front_taken = not self._front_taken, True
        while (index := self._take(front)) is not None:
            if widen is not None and self._thread is None and widen():
                self._start_thread()
            pairs = score_block(self._pass, index)
            with self._lock:
                self._scored.put(index, pairs)

    def _run(self) -> None:
        try:
            self._score()
        except BaseException as exc:  # raised again on the asking thread, by pairs()
            self._error = exc
            self.stop()

    def stop(self) -> None:
        """Take no more blocks (the one being scored finishes)."""
        with self._lock:
            self._stopped = True
            release, self._holds_switches = self._holds_switches, False
        if release:
            short_switches(False)

    def pairs(self, widen: Callable[[], bool] | None = None) -> list[tuple[int, int, float]]:
        """The close pairs (:func:`~memory_ls.core.similar.key_pairs`'s), once every block
        that may hold them is scored (this thread scores the rest). Without a second thread
        yet, one is started as soon as ``widen()`` says the other core is free (asked
        before each block)."""
        from memory_ls.core.similar import pass_pairs

        try:
            self._score(widen)
        finally:
            self.stop()
            if self._thread is not None:
                self._thread.join()
        if self._error is not None:
            raise self._error
        return pass_pairs(self._pass, self._scored.pairs)


def start_worker(threshold: float, limit: int | None = SIMILAR_LIMIT) -> SimilarWorker | None:
    """A forked worker for the ``similar`` passes, or ``None`` where this process may not
    fork (:func:`may_fork`) or cannot (a process limit): a thread then does the same."""
    if not may_fork():
        return None
    try:
        return SimilarWorker(threshold, limit)
    except OSError:
        return None


class SimilarWorker:
    """A forked child that scores ``similar`` passes (:func:`~memory_ls.core.similar.key_pairs`)
    for this process, one request at a time, in the order sent."""

    def __init__(self, threshold: float, limit: int | None = SIMILAR_LIMIT) -> None:
        """Fork the child; ``OSError`` if there is no process to be had. Its passes keep
        ``limit`` pairs each (:func:`~memory_ls.core.similar.rows_to_limit`)."""
        fds: list[int] = []
        parent = os.getpid()
        try:
            for _ in range(3):
                fds += os.pipe()
            pid = os.fork()
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        requests_in, requests_out, replies_in, replies_out, waits_in, waits_out = fds
        if pid == 0:
            try:  # nothing raised here may run this process's code (its output, its exit)
                for fd in (requests_out, replies_in, waits_out):
                    os.close(fd)
                _serve(requests_in, replies_out, waits_in, threshold, limit, parent)
            finally:
                os._exit(1)
        for fd in (requests_in, replies_out, waits_in):
            os.close(fd)
        self._pid: int | None = pid
        self._requests: int | None = requests_out
        self._replies: int | None = replies_in
        self._waits: int | None = waits_out
        """Written to once this process waits for an answer: its core is free, and the
        child scores on two threads from then on."""
        self._inbox = bytearray()
        self._answers: dict[int, Pairs | None] = {}
        self._sent = 0
        self._received = 0
        self._sizes: list[int] = []
        """The number of keys of each request, to check the answer's indices against."""
        _widen(requests_out)
        os.set_blocking(requests_out, False)

    def submit(self, keys: list[str]) -> int | None:
        """Send one store's keys (each once); the ticket of their pairs, or ``None`` if the
        child is gone."""
        import marshal

        if self._requests is None:
            return None
        body = marshal.dumps((self._sent, keys))
        data = memoryview(len(body).to_bytes(_LENGTH, "little") + body)
        try:
            while data:
                requests, replies = self._requests, self._replies
                if requests is None or replies is None:
                    return None  # the child ended while this waited for it to read
                try:
                    data = data[os.write(requests, data) :]
                except BlockingIOError:
                    # The pipe is full: take in what the child answered meanwhile, so that
                    # it is never stuck writing an answer while this waits for it to read.
                    select.select([replies], [requests], [])
                    self._take_in(wait=False)
        except OSError:  # the child is gone (a broken pipe), with a request half sent
            self._lose()
            return None
        self._sizes.append(len(keys))
        self._sent += 1
        return self._sent - 1

    def pairs(self, ticket: int) -> Pairs | None:
        """The pairs ``(i, j, score)`` of request ``ticket`` (indices in its keys), once the
        child has scored them; ``None`` if it failed."""
        if ticket not in self._answers and self._waits is not None:
            # This process has nothing left but to wait: the child may take its core.
            with contextlib.suppress(OSError):
                os.write(self._waits, b".")
            os.close(self._waits)
            self._waits = None
        while ticket not in self._answers and self._replies is not None:
            self._take_in(wait=True)
        return self._answers.pop(ticket, None)

    def _take_in(self, wait: bool) -> None:
        """Read what the child has written (``wait``: at least one read) and file its answers."""
        import marshal

        replies = self._replies
        assert replies is not None
        if not wait and not select.select([replies], [], [], 0)[0]:
            return
        chunk = os.read(replies, 1 << 16)
        if not chunk:  # the child ended: every answer not in is lost
            self._lose()
            return
        self._inbox += chunk
        while len(self._inbox) >= _LENGTH:
            size = int.from_bytes(self._inbox[:_LENGTH], "little")
            if len(self._inbox) < _LENGTH + size:
                break
            body = bytes(self._inbox[_LENGTH : _LENGTH + size])
            del self._inbox[: _LENGTH + size]
            if self._received >= self._sent:
                # An answer to no request: the child is out of step, and nothing more it
                # says is taken (IndexError here ended `check` with a traceback).
                self._lose()
                return
            ticket = self._received
            try:
                answer = marshal.loads(body)
            except (EOFError, ValueError, TypeError):
                answer = None
            if not (
                isinstance(answer, tuple)
                and len(answer) == 2
                and type(answer[0]) is int
                and answer[0] == ticket
            ):
                # Not the answer awaited (an answer sent twice, or one skipped, would be
                # believed as the next store's if its indices fit): the child is out of
                # step, and none of what it says is taken any more.
                self._lose()
                return
            self._received += 1
            self._answers[ticket] = _checked(answer[1], self._sizes[ticket])

    def _lose(self) -> None:
        """The child is gone: no more requests, and every answer not in is ``None``."""
        for ticket in range(self._received, self._sent):
            self._answers.setdefault(ticket, None)
        self._received = self._sent
        self.close()

    def close(self) -> None:
        """End the child (whatever it is doing: nothing more will be asked) and reap it."""
        import signal

        # Ctrl-C (a second one, say) between the kill and the wait would leave the child
        # unreaped, or before the kill, running on after this process.
        with interrupts_held():
            for fd in (self._requests, self._replies, self._waits):
                if fd is not None:
                    os.close(fd)
            self._requests = self._replies = self._waits = None
            if self._pid is not None:
                pid, self._pid = self._pid, None
                os.kill(pid, signal.SIGKILL)  # not reaped yet (may_fork): the pid is the child's
                os.waitpid(pid, 0)


def _checked(found: object, size: int) -> Pairs | None:
    """``found`` if it is a list of pairs of indices under ``size``, else ``None``."""
    if not isinstance(found, list):
        return None
    for pair in found:
        if not (
            isinstance(pair, tuple)
            and len(pair) == 3
            and type(pair[0]) is int
            and type(pair[1]) is int
            and type(pair[2]) is float
            and 0 <= pair[0] < pair[1] < size
        ):
            return None
    return found


def _widen(fd: int) -> None:
    """Make the pipe ``fd`` :data:`PIPE_SIZE` bytes, where the system allows it."""
    import fcntl

    setsize = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setsize is not None:
        # Over /proc/sys/fs/pipe-max-size it stays as it is: a request then waits its turn.
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, setsize, PIPE_SIZE)


def _serve(
    requests: int, replies: int, waits: int, threshold: float, limit: int | None, parent: int
) -> NoReturn:
    """The child: import the scorer, then answer each request until the pipe closes or
    ``parent`` is gone, and leave at once (``os._exit``: nothing of the parent's, its buffered output or exit
    handlers, runs here; an error ends the child, and the parent scores the pass).

    A pass is scored on one thread while the parent runs its own checks, on two once
    ``waits`` says it waits (anything to read, or its end): taking the second core
    earlier would only take it from the checks."""
    code = 1
    try:
        import gc
        import marshal
        import signal

        # Ctrl-C reaches the whole process group: the parent ends the child itself. (It
        # was held back from before the fork, when the parent's handler was still set.)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        _leave_standard_streams(requests, replies, waits)
        # A collection would write to every object the child shares with its parent,
        # copying their pages; the child lives for one `check`.
        gc.disable()
        from memory_ls.core.similar import load_scorer

        load_scorer()
        waiting = False

        def parent_waits() -> bool:
            nonlocal waiting
            waiting = waiting or bool(select.select([waits], [], [], 0)[0])
            return waiting

        while (body := _read_message(requests)) is not None:
            if os.getppid() != parent:  # killed (SIGKILL): its requests need no answers
                break
            ticket, keys = marshal.loads(body)
            pairs = ThreadedPass(keys, False, threshold, limit).pairs(parent_waits)
            reply = marshal.dumps((ticket, pairs))
            data = memoryview(len(reply).to_bytes(_LENGTH, "little") + reply)
            while data:
                data = data[os.write(replies, data) :]
        code = 0
    finally:
        os._exit(code)


def _leave_standard_streams(*keep: int) -> None:
    """Point the child's standard input, output and error at the null device (but any of
    ``keep``, its pipes, when the parent started with that one closed): a reader of the
    parent's output (``memory-ls check | ...``, ``$(memory-ls check)``) waits for every
    copy of it to close, and the child may outlive a parent killed with SIGKILL by the
    rest of a pass."""
    try:
        null = os.open(os.devnull, os.O_RDWR)
    except OSError:  # (no descriptor left: the streams are kept, as before)
        return
    for fd in (0, 1, 2):
        if fd not in keep and fd != null:
            with contextlib.suppress(OSError):
                os.dup2(null, fd)
    if null > 2:
        os.close(null)


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) back on this thread until the block ends, then deliver it.

    Around a fork and the keeping of the child's pid, and around ending the child: a
    KeyboardInterrupt in between would lose the pid (the child left running after this
    process), or reach the child before it ignores Ctrl-C (the child would then run this
    process's code on the way up: its report, its output). A SIGINT already caught
    when the block starts is raised as it starts, before anything is done. Where
    signals cannot be held (Windows: no fork either), the block just runs.
    """
    import signal

    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, ())
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        yield
    finally:
        if not held:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _read_message(fd: int) -> bytes | None:
    """One framed message from ``fd``; ``None`` at the end of the pipe."""
    head = _read_exactly(fd, _LENGTH)
    if head is None:
        return None
    body = _read_exactly(fd, int.from_bytes(head, "little"))
    if body is None:
        raise EOFError("a request cut short")
    return body


def _read_exactly(fd: int, size: int) -> bytes | None:
    """``size`` bytes from ``fd``; ``None`` if the pipe ends first."""
    parts = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)
