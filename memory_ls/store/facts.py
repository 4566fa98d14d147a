"""What a file on disk says beyond its text, decided once for ``check`` and the editor.

Both fronts read a memory file's bytes for the same two facts: whether it may
be read at all (a symlink, a FIFO or a device may not), and where its first
byte that is not UTF-8 sits. One module decides both, so the two never report
one file two ways (SPEC §8, §9).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from memory_ls.core.text import display_path


def not_regular_message(path: Path) -> str:
    """Refusal for a FIFO, device, socket or folder where a memory file should be."""
    return f"Memory file is not a regular file: {display_path(path)}"


@dataclass(frozen=True, slots=True)
class DiskBytes:
    """One read of a file: its first bytes, or why they were not read."""

    path: Path
    data: bytes = b""
    size: int = 0
    """The size on disk, which may exceed ``len(data)``."""
    symlink: bool = False
    """The path is a symlink: it is never followed, so ``data`` is empty."""
    error: str | None = None
    """Why the file could not be read (missing, not a regular file, I/O error)."""

    @property
    def complete(self) -> bool:
        """Whether ``data`` holds the whole file."""
        return len(self.data) >= self.size


def read_disk_bytes(path: Path, limit: int) -> DiskBytes:
    """Read up to ``limit`` bytes of a regular file without following a symlink or blocking.

    A FIFO, device or socket is refused before it is opened for reading, and the
    open itself is non-blocking (and checked again), so a file swapped for a FIFO
    in between cannot hang the caller either. Never raises.
    """
    try:
        st = os.lstat(path)
    except OSError as exc:
        return DiskBytes(path, error=f"Cannot read {display_path(path)}: {exc.strerror or exc}")
    if stat.S_ISLNK(st.st_mode):
        return DiskBytes(path, size=st.st_size, symlink=True)
    if not stat.S_ISREG(st.st_mode):
        return DiskBytes(path, size=st.st_size, error=not_regular_message(path))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return DiskBytes(path, size=st.st_size, symlink=True)
        return DiskBytes(path, error=f"Cannot read {display_path(path)}: {exc.strerror or exc}")
    try:
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode):
            return DiskBytes(path, size=fst.st_size, error=not_regular_message(path))
        with contextlib.suppress(OSError, AttributeError):
            os.set_blocking(fd, True)  # a regular file: ordinary reads from here on
        with os.fdopen(fd, "rb") as handle:
            fd = -1  # the file object owns it now
            data = handle.read(limit)
    except OSError as exc:
        return DiskBytes(path, error=f"Cannot read {display_path(path)}: {exc.strerror or exc}")
    finally:
        if fd >= 0:
            os.close(fd)
    return DiskBytes(path, data, fst.st_size)


def invalid_utf8_position(data: bytes, complete: bool = True) -> tuple[int, int, int] | None:
    """``(byte offset, line, column)`` of the first byte that is not UTF-8, or ``None``.

    Line and column are 0-based, the column in characters of the line as a
    reader sees it: a leading byte order mark is set aside, as the parser and
    every editor do, so it is no column. Lines end at ``\\n`` (SPEC §2). For
    ``data`` that is only the start of a file (``complete=False``), a character
    cut off at the end is not an error.
    """
    try:
        data.decode("utf-8")
        return None
    except UnicodeDecodeError as exc:
        if not complete and exc.end == len(data) and exc.reason == "unexpected end of data":
            return None
        offset = exc.start
    prefix = data[:offset].decode("utf-8").removeprefix("\ufeff")
    line = prefix.count("\n")
    column = len(prefix) - (prefix.rfind("\n") + 1)
    return offset, line, column
