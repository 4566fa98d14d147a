"""The only code that reads or writes a store file: refusals, stamps, lock, atomic write.

A write is a read-modify-write under two locks: a ``threading.Lock`` per path
(threads of this process, e.g. the MCP SDK's workers) and an exclusive ``flock``
on the store's *directory* (every process on the machine). Locking the
directory rather than a lock file means nothing but ``memory.md`` is ever left
in ``.pi/``; locking the store file itself would not work, since each write
replaces it with a new inode.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memory_ls.core.text import MAX_STORE_BYTES, decode_for_display, first_invalid_utf8


@dataclass(frozen=True, slots=True)
class Stamp:
    """What tells a store's versions apart without reading it."""

    mtime_ns: int
    size: int
    inode: int


def symlink_message(path: Path) -> str:
    """Refusal for a symlinked store path."""
    return f"Refusing to use the symlinked memory file: {path}"


def oversize_message(path: Path, size: int) -> str:
    """Refusal for a store over the size cap."""
    return f"Memory file is {size} bytes, larger than the {MAX_STORE_BYTES}-byte limit: {path}"


def invalid_utf8_message(path: Path, offset: int) -> str:
    """Refusal to rewrite a store that is not valid UTF-8."""
    return f"Memory file is not valid UTF-8 (first bad byte at offset {offset}): {path}"


@dataclass(frozen=True, slots=True)
class StoreFile:
    """One read of a store: its text (if readable) and why it may not be used."""

    path: Path
    exists: bool
    content: str
    stamp: Stamp | None
    error: str | None = None
    """Why the store may not be read at all (symlink, oversize, I/O error)."""
    invalid_utf8_at: int | None = None

    @property
    def mutation_error(self) -> str | None:
        """Why the store may not be changed, if it may not."""
        if self.error:
            return self.error
        if self.invalid_utf8_at is not None:
            return invalid_utf8_message(self.path, self.invalid_utf8_at)
        return None


def stamp_of(path: Path) -> Stamp | None:
    """The path's stamp without following a symlink; ``None`` when missing."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return Stamp(st.st_mtime_ns, st.st_size, st.st_ino)


def read_store(path: Path) -> StoreFile:
    """Read a store, refusing a symlink and a file over the cap; missing reads as empty."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return StoreFile(path, False, "", None)
    except OSError as exc:
        return StoreFile(path, False, "", None, error=f"Cannot read {path}: {exc.strerror}")
    if stat.S_ISLNK(st.st_mode):
        return StoreFile(path, True, "", None, error=symlink_message(path))
    if not stat.S_ISREG(st.st_mode):
        return StoreFile(path, True, "", None, error=f"Memory file is not a regular file: {path}")
    if st.st_size > MAX_STORE_BYTES:
        return StoreFile(path, True, "", None, error=oversize_message(path, st.st_size))
    try:
        # O_NOFOLLOW closes the race between the lstat above and this open.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return StoreFile(path, True, "", None, error=symlink_message(path))
        if exc.errno == errno.ENOENT:
            return StoreFile(path, False, "", None)
        return StoreFile(path, True, "", None, error=f"Cannot read {path}: {exc.strerror}")
    with os.fdopen(fd, "rb") as f:
        fst = os.fstat(f.fileno())
        data = f.read(MAX_STORE_BYTES + 1)
    if len(data) > MAX_STORE_BYTES:
        return StoreFile(path, True, "", None, error=oversize_message(path, fst.st_size))
    stamp = Stamp(fst.st_mtime_ns, fst.st_size, fst.st_ino)
    try:  # one decode in the common case; the slow path only for a broken file
        return StoreFile(path, True, data.decode("utf-8"), stamp)
    except UnicodeDecodeError:
        bad = first_invalid_utf8(data)
        return StoreFile(path, True, decode_for_display(data), stamp, invalid_utf8_at=bad)


_thread_locks: dict[str, threading.Lock] = {}
_thread_locks_guard = threading.Lock()


def _thread_lock(path: Path) -> threading.Lock:
    with _thread_locks_guard:
        return _thread_locks.setdefault(str(path), threading.Lock())


@contextlib.contextmanager
def store_lock(path: Path) -> Iterator[None]:
    """Hold the store's write lock (threads and processes); creates its folder."""
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    with _thread_lock(path):
        if sys.platform == "win32":  # pragma: no cover - no flock on Windows
            import tempfile

            from filelock import FileLock

            name = f"memory-ls-{abs(hash(str(path)))}.lock"
            with FileLock(os.path.join(tempfile.gettempdir(), name)):
                yield
            return
        import fcntl

        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                _remove_stale_temps(path)
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _temp_prefix(path: Path) -> str:
    return f".{path.name}."


def _remove_stale_temps(path: Path) -> None:
    """Remove temporaries of writers that died mid-write (safe: we hold the lock)."""
    prefix = _temp_prefix(path)
    with contextlib.suppress(OSError):
        for entry in os.scandir(path.parent):
            if entry.name.startswith(prefix) and entry.name.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def write_store(path: Path, content: str) -> Stamp:
    """Replace the store atomically with ``content``; call under :func:`store_lock`.

    The text goes to a temporary file in the same folder, is flushed to disk and
    renamed over the store, so a reader or a crash sees the old or the new file.
    """
    data = content.encode("utf-8")
    if len(data) > MAX_STORE_BYTES:
        raise StoreRefused(oversize_message(path, len(data)))
    mode: int | None = None
    with contextlib.suppress(FileNotFoundError):
        mode = stat.S_IMODE(os.lstat(path).st_mode)
    tmp = path.parent / f"{_temp_prefix(path)}{os.urandom(6).hex()}.tmp"
    # A new store gets the usual 0o666-minus-umask; an existing one keeps its mode.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)
    stamp = stamp_of(path)
    assert stamp is not None
    return stamp


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class StoreRefused(Exception):
    """A write that the rules refuse; its message is the user-facing error."""
