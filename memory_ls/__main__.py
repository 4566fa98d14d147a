"""The ``memory-ls`` command: the console script and ``python -m memory_ls`` both run :func:`main`.

Only what no verb can do for itself lives here: Ctrl-C. A person who presses
it (while ``add`` waits for another writer's lock, during a long ``check``, or
to stop ``serve`` or ``mcp``) wants the command to stop, not a Python traceback.
And the end of the read verbs an agent runs before every run (:data:`QUICK_VERBS`):
they run without the cyclic garbage collector and end without the interpreter's
teardown (:func:`_end_now`).
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Sequence
from types import FrameType

TYPE_CHECKING = False  # not `typing`'s: the read verbs do without importing it (~3.5 ms)
if TYPE_CHECKING:
    from typing import NoReturn

EXIT_INTERRUPTED = 130
"""128 + SIGINT, what a shell reports for a command stopped by Ctrl-C."""

INTERRUPTED_MESSAGE = "memory-ls: interrupted"


_interrupted = False
"""Set by :func:`_on_sigint`: pygls' ``start_io`` swallows the ``KeyboardInterrupt``."""


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    """Python's own Ctrl-C handler, remembering that it ran."""
    global _interrupted
    _interrupted = True
    raise KeyboardInterrupt


QUICK_VERBS = frozenset({"inject", "list", "path"})
"""Verbs that read, print and end: run as the program, they do without the garbage
collector and the interpreter's teardown (issue 11: ``inject`` and ``list --json`` on
4,500 notes in ≤ 60 ms). The collector's runs during the imports and the work, and
the teardown (every module and object freed one by one, then collected), were ~12% of
``inject``'s instructions on the 4,500-note store; a process this short frees its
memory by ending."""

ENDS_AT_ONCE = QUICK_VERBS | {"check"}
"""Verbs that end without the interpreter's teardown (:func:`_end_now`): the quick
ones, and ``check``, which only reads too, and whose teardown (the findings, the
rapidfuzz and numpy modules) was ~15 ms of its wall time on the 4,500-note store. It
keeps the collector (at :data:`ONE_SHOT_GC_THRESHOLD`) and the Ctrl-C handler: it runs
long enough to need both."""


LONG_RUNNING = frozenset({"serve", "mcp"})
"""Verbs that run until told to stop: they keep Python's collector thresholds."""

ONE_SHOT_GC_THRESHOLD = 50_000
"""The collector's first threshold for a verb that runs once and ends (all but
:data:`LONG_RUNNING` and the :data:`QUICK_VERBS`, which do without it): Python's 700 made
``check`` on the 4,500-note store run 38 young collections that freed 198 objects in all,
~5-13 ms of its CPU. A collection still comes every 50,000 new container objects, so a
run over many files, or one that does make cycles, keeps its memory bounded."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; Ctrl-C ends it with one line on stderr and exit status 130.

    Run as the program (``argv`` not given: the console script and ``python -m
    memory_ls``), a verb of :data:`QUICK_VERBS` ends the process here once its
    output is flushed, with the code it would have returned.
    """
    try:
        # All of it inside: a Ctrl-C during `import signal`, or while the output is
        # flushed at the end, is an interrupt like any other, not a traceback.
        verb = sys.argv[1] if argv is None and len(sys.argv) > 1 else None
        if verb in QUICK_VERBS:
            gc.disable()  # a read verb makes no garbage worth a collection before it ends
        else:
            if verb is not None and verb not in LONG_RUNNING:
                gc.set_threshold(ONE_SHOT_GC_THRESHOLD, *gc.get_threshold()[1:])
            # A quick verb keeps Python's own handler: its KeyboardInterrupt reaches the
            # `except` below (no server or library of its own to swallow it or turn it
            # into another error), and `signal` with its enums of every signal (~1 ms) is
            # not imported.
            _remember_interrupts()
        from memory_ls.cli import main as cli_main

        code = cli_main(argv)
        if _interrupted:  # the interrupt was caught on the way (``serve`` on stdio)
            _exit_interrupted()
        if argv is None and _output_failed():
            # The text still buffered for the failed stream cannot be written either: the
            # interpreter's exit would try again and print a traceback of its own.
            os._exit(code)
        if argv is None and len(sys.argv) > 1 and sys.argv[1] in ENDS_AT_ONCE:
            _end_now(code)
    except KeyboardInterrupt:
        _exit_interrupted()
    except BaseException:
        # Ctrl-C can land inside a library's own bookkeeping, which then fails with an
        # error of its own (anyio's cancel scopes, in ``mcp``: a RuntimeError in an
        # exception group) instead of letting the KeyboardInterrupt through.
        if _interrupted:
            _exit_interrupted()
        raise
    return code


def _remember_interrupts() -> None:
    """Put :func:`_on_sigint` in the place of Python's own Ctrl-C handler."""
    import signal

    # A SIGINT the parent set to be ignored (a background job) stays ignored.
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)


def _output_failed() -> bool:
    """Whether the command line reported that standard output or error failed."""
    cli = sys.modules.get("memory_ls.cli")
    return bool(getattr(cli, "output_failed", False))


def _end_now(code: int) -> None:
    """End the process with ``code`` at once, its output flushed; or return, to end as usual.

    ``os._exit`` skips the interpreter's teardown: freeing every module and object
    one by one and collecting the rest, which a process about to end does not need.
    Nothing else is skipped: the read verbs leave no file open for writing and no
    lock held. It returns (the usual exit follows, with Python's own report) when a
    stream cannot be flushed (a closed pipe), or when something could still be
    waiting for the teardown: another thread, an ``atexit`` function.
    """
    try:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    except Exception:
        return
    import _thread

    if _thread._count():  # threads running besides this one (threading's or not)
        return
    import atexit

    callbacks = getattr(atexit, "_ncallbacks", None)  # CPython's count of them
    if callbacks is None or callbacks():
        return
    os._exit(code)


def _exit_interrupted() -> NoReturn:
    """Say so once and end the process at once.

    A store write that was under way has already run its ``finally`` blocks (the
    temporary file is removed, the lock released) on the way up here. ``os._exit``
    rather than ``sys.exit``: a server's thread still blocked reading stdin would
    keep the interpreter from shutting down, and a second Ctrl-C would then print
    the very traceback this avoids.
    """
    # `BaseException`: a second Ctrl-C (a flush blocked on a full pipe or a slow terminal)
    # is a KeyboardInterrupt raised right here; it ends the flush, not in a traceback.
    with contextlib.suppress(BaseException):
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
    with contextlib.suppress(BaseException):
        os.write(sys.stderr.fileno(), f"{INTERRUPTED_MESSAGE}\n".encode())
    os._exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    sys.exit(main())
