"""A short switch interval while a background thread works beside the event loop.

CPython hands the GIL over at most every switch interval (5 ms by default). A thread
that asks for it back, after a system call or between ``cdist``'s steps, waits up to
that long while another thread runs Python: a ``similar`` thread beside ``check``'s
checks, or a hover (~50 ``stat`` calls) beside the thread reading a project's build
files. While such a thread runs, the interval is shortened; the one found is put back
when the last ends.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator

SWITCH_INTERVAL = 0.0002
"""The interpreter's switch interval (seconds) while such a thread runs. A ``similar``
thread beside other work (``check``'s checks, or the other thread in the worker): On one worker, ``cdist``
takes the GIL back between its steps of 4-32 rows (to look for Ctrl-C); at the default
5 ms each step waits that long for the Python checks to let go, so the pass would crawl
beside them (4500 notes: ~110 ms of Python beside it took it from ~130 to ~280 ms,
docs/performance.md)."""

_switches_lock = threading.Lock()
_switches_held = 0
_switches_saved = 0.0


def short_switches(hold: bool) -> None:
    """Shorten the switch interval while any such thread runs (``hold``), and put the one
    found back when the last ends (``hold`` false, once for each true)."""
    global _switches_held, _switches_saved
    with _switches_lock:
        if hold:
            if _switches_held == 0:
                _switches_saved = sys.getswitchinterval()
                sys.setswitchinterval(min(_switches_saved, SWITCH_INTERVAL))
            _switches_held += 1
        else:
            _switches_held -= 1
            if _switches_held == 0:
                sys.setswitchinterval(_switches_saved)


@contextlib.contextmanager
def switches_shortened() -> Iterator[None]:
    """:func:`short_switches` for the duration of a block."""
    short_switches(True)
    try:
        yield
    finally:
        short_switches(False)
