"""Files as a coarse file system leaves them: aged past the racy margin, or rewritten
within one timestamp tick (git's "racily clean" case, ``RACY_MARGIN_NS``).

A test that counts reads or decisions right after writing its files ages them first
(:func:`age`): a file written a moment ago has a racy stamp, which the runtime does not
trust to say "unchanged", so it would be read again at the next look. Trust also consults
folders that are not the test's (every ancestor up to ``/``, ``/tmp`` among them, changed
by anything on the machine): a test whose count depends on those runs with
:func:`clock_ahead`, which ages every file at once, never by touching them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from memory_ls.store import files
from memory_ls.store.files import RACY_MARGIN_NS

AGE_NS = 5 * RACY_MARGIN_NS
"""How far :func:`age` sets a file's times back: well past the racy margin."""


def age(*paths: Path) -> None:
    """Set each path's access and modification times :data:`AGE_NS` into the past."""
    for path in paths:
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns - AGE_NS, st.st_mtime_ns - AGE_NS))


def rewrite_in_one_tick(path: Path, data: bytes) -> None:
    """Overwrite ``path`` in place with ``data`` of the same size (same inode) and set its
    mtime back to what it was: what a file system whose clock ticks coarser than the two
    writes shows (FAT's 2 s, ext3's 1 s). No stamp tells the two versions apart."""
    st = os.stat(path)
    assert len(data) == st.st_size, "a same-size rewrite"
    with open(path, "r+b") as handle:
        handle.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == (
        st.st_mtime_ns,
        st.st_size,
        st.st_ino,
    )


def clock_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    """Judge every stamp as if taken :data:`AGE_NS` later: every file on disk is old (its
    stamp trusted), as if the test had waited past the racy margin; none is touched."""
    racy = files.is_racy

    def later(mtime_ns: int, now_ns: int | None = None) -> bool:
        return racy(mtime_ns, (time.time_ns() if now_ns is None else now_ns) + AGE_NS)

    monkeypatch.setattr(files, "is_racy", later)
