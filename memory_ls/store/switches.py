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
thread's ``cdist`` takes the GIL back between its steps of 4-32 rows (to look for
Ctrl-C); at the default 5 ms each step waits that long for the Python beside it
(``check``'s checks, or the worker's other thread) to let go, so the pass would crawl
(4500 notes: ~110 ms of Python beside it took it from ~130 to ~280 ms,
docs/performance.md)."""

_switches_lock = threading.Lock()
_switches_held = 0
_switches_saved: float | None = None
"""The interval found when the first hold was taken, if it was shortened (``None``: it
was no longer than :data:`SWITCH_INTERVAL`, and is left as it is)."""


def _put_back(interval: float) -> None:
    """Set the switch interval to ``interval``, a value it read back, so that it reads back
    the same again. CPython keeps whole microseconds, rounded down, and reads them back
    times 1e-6: setting what it read can keep one microsecond less (209 µs reads back as
    0.00020899999999999998, which sets 208 µs); half a microsecond more keeps the same."""
    sys.setswitchinterval(interval)
    if sys.getswitchinterval() != interval:
        sys.setswitchinterval(interval + 0.5e-6)


def short_switches(hold: bool) -> None:
    """Shorten the switch interval while any such thread runs (``hold``), and put the one
    found back when the last ends (``hold`` false, once for each true)."""
    global _switches_held, _switches_saved
    with _switches_lock:
        if hold:
            if _switches_held == 0:
                found = sys.getswitchinterval()
                _switches_saved = found if found > SWITCH_INTERVAL else None
                if _switches_saved is not None:
                    sys.setswitchinterval(SWITCH_INTERVAL)
            _switches_held += 1
        else:
            _switches_held -= 1
            if _switches_held == 0 and _switches_saved is not None:
                _put_back(_switches_saved)
                _switches_saved = None


@contextlib.contextmanager
def switches_shortened() -> Iterator[None]:
    """:func:`short_switches` for the duration of a block."""
    short_switches(True)
    try:
        yield
    finally:
        short_switches(False)
