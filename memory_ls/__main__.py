"""The ``memory-ls`` command: the console script and ``python -m memory_ls`` both run :func:`main`.

Only what no verb can do for itself lives here: Ctrl-C. A person who presses
it (while ``add`` waits for another writer's lock, during a long ``check``, or
to stop ``serve`` or ``mcp``) wants the command to stop, not a Python traceback.
"""

from __future__ import annotations

import contextlib
import os
import signal
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; Ctrl-C ends it with one line on stderr and exit status 130."""
    # A SIGINT the parent set to be ignored (a background job) stays ignored.
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)
    try:
        from memory_ls.cli import main as cli_main

        code = cli_main(argv)
    except KeyboardInterrupt:
        _exit_interrupted()
    except BaseException:
        # Ctrl-C can land inside a library's own bookkeeping, which then fails with an
        # error of its own (anyio's cancel scopes, in ``mcp``: a RuntimeError in an
        # exception group) instead of letting the KeyboardInterrupt through.
        if _interrupted:
            _exit_interrupted()
        raise
    if _interrupted:  # the interrupt was caught on the way (``serve`` on stdio)
        _exit_interrupted()
    return code


def _exit_interrupted() -> NoReturn:
    """Say so once and end the process at once.

    A store write that was under way has already run its ``finally`` blocks (the
    temporary file is removed, the lock released) on the way up here. ``os._exit``
    rather than ``sys.exit``: a server's thread still blocked reading stdin would
    keep the interpreter from shutting down, and a second Ctrl-C would then print
    the very traceback this avoids.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(Exception):
        os.write(sys.stderr.fileno(), f"{INTERRUPTED_MESSAGE}\n".encode())
    os._exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    sys.exit(main())
