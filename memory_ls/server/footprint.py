"""What ``serve`` keeps resident beyond what it holds (issue 11: peak RSS ≤ 60 MB).

Called by the CLI's ``serve`` before the server's modules are imported; nothing here
changes what the server answers. ``docs/performance.md`` ("h/rss") has the figures.

- :func:`import_server` imports the language server without the ``ssl`` module.
  asyncio imports it at start-up for TLS, which ``serve`` over stdio or TCP never uses,
  and loading it maps OpenSSL (``libssl``, ``libcrypto``): 1.4 MB resident, and with
  ``_hashlib`` 4.8 MB. memory-ls's own modules load hashlib only for a proposal's id
  (a publish's note hashes take BLAKE2b from ``_blake2``, as hashlib does). asyncio is written to run without it (``ssl = None`` when its import
  fails). Only the import is blocked: a later ``import ssl`` loads it as usual.
- :func:`limit_malloc` gives glibc's allocator one arena. By default each thread that
  allocates gets an arena of its own (up to eight per core), and what a thread frees
  stays in its arena for that thread. ``memory.add`` runs in a worker thread and makes
  a few copies of the store's text (a string of up to four bytes a character: a
  256 KB store with one emoji is a megabyte), so its arena grew by megabytes next to
  the main one, which had as much free after the document closed. With one arena
  the worker reuses that memory. The GIL already runs one thread at a time, so the
  arena's lock is not contended.
- :func:`import_server` also runs the import with fewer young collections
  (:data:`IMPORT_GC_THRESHOLD`): lsprotocol and pygls make ~90,000 lasting objects (their
  classes, functions and annotations), which Python's threshold of 700 had the collector
  walk again and again, ~55 ms of a cold start's CPU (127 young, 11 middle and a full
  collection). Garbage is still collected, in fewer, larger batches.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterator
from types import ModuleType

ARENAS = 1
"""glibc malloc arenas for the whole process (``M_ARENA_MAX``)."""

_M_ARENA_MAX = -8
"""``mallopt``'s parameter number for ``M_ARENA_MAX`` (``malloc.h``)."""

NO_TLS = ("ssl", "_ssl")
"""Modules the server's import is made without (TLS: unused over stdio and TCP)."""

IMPORT_GC_THRESHOLD = 10_000
"""The collector's first threshold while the server is imported (Python's is 700)."""


def limit_malloc() -> bool:
    """Limit glibc's malloc to :data:`ARENAS` arenas; whether it was set.

    A no-op (``False``) where the C library is not glibc.
    """
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return False
    except (ValueError, OSError):  # not glibc, or no confstr at all
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(_M_ARENA_MAX, ARENAS))
    except (OSError, AttributeError):
        return False


@contextlib.contextmanager
def without(names: tuple[str, ...]) -> Iterator[None]:
    """Imports of ``names`` fail (``ImportError``) inside the block; after it, they load
    as usual. A module already loaded stays loaded."""
    blocked = [name for name in names if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # the import system's "absent"
    try:
        yield
    finally:
        for name in blocked:
            if sys.modules.get(name, ...) is None:
                del sys.modules[name]


def import_server(tls: bool = False) -> ModuleType:
    """``memory_ls.server.server``, imported without TLS unless ``tls``, and with
    :data:`IMPORT_GC_THRESHOLD` as the collector's first threshold meanwhile."""
    threshold = gc.get_threshold()
    if threshold[0]:  # (0: collections switched off by whoever runs us; left so)
        gc.set_threshold(max(IMPORT_GC_THRESHOLD, threshold[0]), *threshold[1:])
    try:
        with contextlib.nullcontext() if tls else without(NO_TLS):
            from memory_ls.server import server
    finally:
        gc.set_threshold(*threshold)
    return server
