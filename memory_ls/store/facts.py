"""What a file on disk says beyond its text, decided once for ``check`` and the editor.

Both fronts need the same facts about a memory file: whether it exists, is a
symlink or a regular file, its size, where its first byte that is not UTF-8
sits, and whether it is a project store that must not be read at all (its
``.pi`` leads out of the project). :func:`memory_file_facts` decides them all,
so the two never report one file two ways (SPEC §1, §8, §9).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from memory_ls.core.records import record
from memory_ls.core.text import display_path, is_utf8
from memory_ls.store.paths import (
    as_written,
    names_global_store,
    project_folder_refusal,
    refused_project_store,
    shared_file_refusal,
)

TYPE_CHECKING = False  # not `typing`'s: the read verbs do without importing it (~3.5 ms)
if TYPE_CHECKING:  # types only: the read verbs do not import the boundary shapes
    from memory_ls.core.models import FileType


def file_type_of(mode: int) -> FileType | None:
    """What an ``lstat`` mode says is at a path: ``None`` for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, name in (
        (stat.S_ISDIR, "directory"),
        (stat.S_ISFIFO, "fifo"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character-device"),
        (stat.S_ISBLK, "block-device"),
        (stat.S_ISLNK, "symlink"),
    ):
        if test(mode):
            return name  # type: ignore[return-value]
    return "other"


def file_type_at(path: Path) -> FileType | None:
    """:func:`file_type_of` the path, without following a symlink; ``None`` when it is a
    regular file, missing or cannot be looked at."""
    try:
        return file_type_of(os.lstat(path).st_mode)
    except OSError:
        return None


def not_regular_message(path: Path) -> str:
    """Refusal for a FIFO, device, socket or folder where a memory file should be."""
    return f"Memory file is not a regular file: {display_path(path)}"


@record
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
    exists: bool = True
    """Something (a file, a symlink, a FIFO…) is at the path."""
    regular: bool = False
    """It is a regular file (not a symlink, FIFO, device, socket or folder)."""

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
        from memory_ls.store.files import read_failed_message  # (it imports this module)

        return DiskBytes(path, error=read_failed_message(path, exc), exists=False)
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
        why = f"Cannot read {display_path(path)}: {exc.strerror or exc}"
        return DiskBytes(path, size=st.st_size, error=why, regular=True)
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
        why = f"Cannot read {display_path(path)}: {exc.strerror or exc}"
        return DiskBytes(path, size=fst.st_size, error=why, regular=True)
    finally:
        if fd >= 0:
            os.close(fd)
    return DiskBytes(path, data, fst.st_size, regular=True)


def invalid_utf8_position(data: bytes, complete: bool = True) -> tuple[int, int, int] | None:
    """``(byte offset, line, column)`` of the first byte that is not UTF-8, or ``None``.

    Line and column are 0-based, the column in characters of the line as a
    reader sees it: a leading byte order mark is set aside, as the parser and
    every editor do, so it is no column. Lines end at ``\\n`` (SPEC §2). For
    ``data`` that is only the start of a file (``complete=False``), a character
    cut off at the end is not an error.
    """
    if is_utf8(data, complete):
        return None
    try:
        data.decode("utf-8")
        return None  # (unreachable: is_utf8 said it is not UTF-8)
    except UnicodeDecodeError as exc:
        if not complete and exc.end == len(data) and exc.reason == "unexpected end of data":
            return None
        offset = exc.start
    prefix = data[:offset].decode("utf-8").removeprefix("\ufeff")
    line = prefix.count("\n")
    column = len(prefix) - (prefix.rfind("\n") + 1)
    return offset, line, column


@record
class FileFacts:
    """Everything the editor and ``check`` know about a memory file on disk, from one look.

    A refused project store (``outside_project``) is not looked at: every other
    fact keeps its default. Otherwise the file is read at most once, never
    through a symlink and never from a FIFO or device.
    """

    path: Path
    exists: bool = False
    symlink: bool = False
    regular: bool = False
    size: int = 0
    """The size on disk, which may exceed ``len(data)``."""
    data: bytes = b""
    """Its first bytes (empty when it was not read)."""
    invalid_utf8_at: tuple[int, int, int] | None = None
    """``(byte offset, line, column)`` of the first byte that is not UTF-8."""
    outside_project: str | None = None
    """Why the file is not read at all: a project store whose ``.pi`` leads out, or that is
    the global store's file."""
    error: str | None = None
    """Why it could not be read (missing, not a regular file, I/O error)."""


def memory_file_facts(
    path: Path, limit: int, project_root: Path | None = None, global_store: Path | None = None
) -> FileFacts:
    """The facts about the memory file at ``path``, reading at most ``limit`` bytes.

    ``project_root`` says the file is that project's store (the caller knows it),
    refused also when it is the ``global_store``'s file; without it, the path as
    written says whether it is a refused project store. Never raises and never blocks.
    """
    if project_root is not None:
        refusal = project_folder_refusal(project_root, global_store=global_store)
    else:
        written = as_written(path)
        refused = refused_project_store(written)
        refusal = None if refused is None else refused[1]
        if (
            refused is not None
            and global_store is not None
            and (
                names_global_store(written, global_store)
                or shared_file_refusal(refused[0], global_store, refused[1]) is not None
            )
        ):
            # The global store, named as the agent dir names it, in a refused `.pi` (the
            # agent dir is that `.pi`, or `<root>/.pi/x/.pi`): usable, as `list`, `add`
            # and `doctor` use it (:func:`classify_store_path`).
            refusal = None
    if refusal is not None:
        return FileFacts(path, outside_project=refusal)
    read = read_disk_bytes(path, limit)
    bad_byte = (
        None if read.error or read.symlink else invalid_utf8_position(read.data, read.complete)
    )
    return FileFacts(
        path,
        exists=read.exists,
        symlink=read.symlink,
        regular=read.regular,
        size=read.size,
        data=read.data,
        invalid_utf8_at=bad_byte,
        error=read.error,
    )
