"""The only code that reads or writes a store file: refusals, stamps, lock, atomic write.

A write is a read-modify-write under two locks: a ``threading.Lock`` per path
(threads of this process, e.g. the MCP SDK's workers) and an exclusive ``flock``
on the store's *directory* (every process on the machine). Locking the
directory rather than a lock file means nothing but ``memory.md`` is ever left
in ``.pi/``; locking the store file itself would not work, since each write
replaces it with a new inode.

Under the lock every read and write goes through the folder's open descriptor
(``dir_fd``), after the caller has checked where that very folder is: a symlink
swapped in for the folder's path afterwards cannot redirect the write (SPEC §1).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from memory_ls.core.text import (
    MAX_STORE_BYTES,
    decode_for_display,
    display_path,
    first_invalid_utf8,
)
from memory_ls.store.facts import not_regular_message


@dataclass(frozen=True, slots=True)
class Stamp:
    """What tells a store's versions apart without reading it."""

    mtime_ns: int
    size: int
    inode: int


def symlink_message(path: Path) -> str:
    """Refusal for a symlinked store path."""
    return f"Refusing to use the symlinked memory file: {display_path(path)}"


def oversize_message(path: Path, size: int) -> str:
    """Refusal for a store over the size cap."""
    return f"Memory file is {size} bytes, larger than the {MAX_STORE_BYTES}-byte limit: {display_path(path)}"


def invalid_utf8_message(path: Path, offset: int) -> str:
    """Refusal to rewrite a store that is not valid UTF-8."""
    return (
        f"Memory file is not valid UTF-8 (first bad byte at offset {offset}): {display_path(path)}"
    )


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


@dataclass(frozen=True, slots=True)
class LockedFolder:
    """A store's folder, held open and locked by :func:`store_lock`.

    ``fd`` is the open directory (``None`` where the platform has no ``dir_fd``,
    i.e. Windows): reads and writes under the lock name the store relative to
    it, so they reach the folder that was checked whatever its path names now.
    """

    path: Path
    fd: int | None


def _at(path: Path, folder: LockedFolder | None) -> str | Path:
    """How to name ``path`` for an ``os`` call with ``dir_fd=_dir_fd(folder)``."""
    return path.name if folder is not None and folder.fd is not None else path


def _dir_fd(folder: LockedFolder | None) -> int | None:
    return folder.fd if folder is not None else None


def read_store(path: Path, folder: LockedFolder | None = None) -> StoreFile:
    """Read a store, refusing a symlink and a file over the cap; missing reads as empty.

    Under :func:`store_lock`, pass the :class:`LockedFolder` so the read goes
    through the locked folder.
    """
    name, dir_fd = _at(path, folder), _dir_fd(folder)
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return StoreFile(path, False, "", None)
    except OSError as exc:
        return StoreFile(
            path, False, "", None, error=f"Cannot read {display_path(path)}: {exc.strerror}"
        )
    if stat.S_ISLNK(st.st_mode):
        return StoreFile(path, True, "", None, error=symlink_message(path))
    if not stat.S_ISREG(st.st_mode):
        return StoreFile(path, True, "", None, error=not_regular_message(path))
    if st.st_size > MAX_STORE_BYTES:
        return StoreFile(path, True, "", None, error=oversize_message(path, st.st_size))
    try:
        # O_NOFOLLOW closes the race between the lstat above and this open.
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0), dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return StoreFile(path, True, "", None, error=symlink_message(path))
        if exc.errno == errno.ENOENT:
            return StoreFile(path, False, "", None)
        return StoreFile(
            path, True, "", None, error=f"Cannot read {display_path(path)}: {exc.strerror}"
        )
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
def store_lock(
    path: Path,
    *,
    make_parents: bool = False,
    check: Callable[[str], str | None] | None = None,
) -> Iterator[LockedFolder]:
    """Hold the store's write lock (threads and processes); creates its folder.

    Only the store's own folder is created (``.pi/``) unless ``make_parents``
    (the agent dir may need its parents): a missing project root raises
    ``FileNotFoundError`` instead of being created. ``check`` is asked, once
    the lock is held, about the real path of the folder actually opened; a
    message from it is raised as :class:`StoreRefused` before anything in that
    folder is touched.
    """
    folder = path.parent
    if make_parents:
        folder.mkdir(parents=True, exist_ok=True)
    else:
        # mkdir never follows a symlink: a `.pi` link (even dangling) is left as it is.
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder)
    with _thread_lock(path):
        if sys.platform == "win32":  # pragma: no cover - no flock on Windows
            import tempfile

            from filelock import FileLock

            name = f"memory-ls-{abs(hash(str(path)))}.lock"
            with FileLock(os.path.join(tempfile.gettempdir(), name)):
                _check_folder(check, os.path.realpath(folder))
                yield LockedFolder(folder, None)
            return
        import fcntl

        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                locked = LockedFolder(folder, fd)
                _check_folder(check, _real_path_of(locked))
                _remove_stale_temps(path, locked)
                yield locked
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _check_folder(check: Callable[[str], str | None] | None, real: str) -> None:
    refusal = check(real) if check is not None else None
    if refusal is not None:
        raise StoreRefused(refusal)


def _real_path_of(folder: LockedFolder) -> str:
    """The real path of the directory held open, not merely of what its path names now.

    The path is resolved and the result must be the very directory held (same
    device and inode); if the path was re-pointed in between, no name can be
    trusted and the write is refused.
    """
    assert folder.fd is not None
    real = os.path.realpath(folder.path)
    held = os.fstat(folder.fd)
    try:
        named = os.stat(real)
    except OSError:
        named = None
    if named is None or (named.st_dev, named.st_ino) != (held.st_dev, held.st_ino):
        raise StoreRefused(
            f"The memory folder changed while it was being locked: {display_path(folder.path)}"
        )
    return real


def _temp_prefix(path: Path) -> str:
    return f".{path.name}."


def _remove_stale_temps(path: Path, folder: LockedFolder) -> None:
    """Remove temporaries of writers that died mid-write (safe: we hold the lock)."""
    prefix = _temp_prefix(path)
    listing: int | Path = folder.fd if folder.fd is not None else folder.path
    with contextlib.suppress(OSError), os.scandir(listing) as entries:
        for entry in entries:
            if entry.name.startswith(prefix) and entry.name.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    os.unlink(_at(path.parent / entry.name, folder), dir_fd=folder.fd)


def write_store(path: Path, content: str, folder: LockedFolder | None = None) -> Stamp:
    """Replace the store atomically with ``content``; call under :func:`store_lock`.

    The text goes to a temporary file in the same folder, is flushed to disk and
    renamed over the store, so a reader or a crash sees the old or the new file.
    Pass the :class:`LockedFolder` so every step goes through the locked folder.
    """
    data = content.encode("utf-8")
    if len(data) > MAX_STORE_BYTES:
        raise StoreRefused(oversize_message(path, len(data)))
    name, dir_fd = _at(path, folder), _dir_fd(folder)
    mode: int | None = None
    with contextlib.suppress(FileNotFoundError):
        mode = stat.S_IMODE(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    tmp_path = path.parent / f"{_temp_prefix(path)}{os.urandom(6).hex()}.tmp"
    tmp = _at(tmp_path, folder)
    # A new store gets the usual 0o666-minus-umask; an existing one keeps its mode.
    # O_EXCL never follows a symlink, so the temporary is always a new file here.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o666 if mode is None else 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            if mode is not None:
                _set_mode(f.fileno(), tmp_path, mode)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    _fsync_dir(path.parent, folder)
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    return Stamp(st.st_mtime_ns, st.st_size, st.st_ino)


def _set_mode(fd: int, path: Path, mode: int) -> None:
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)
    else:  # pragma: no cover - Windows before 3.13
        os.chmod(path, mode)


def _fsync_dir(path: Path, folder: LockedFolder | None) -> None:
    if folder is not None and folder.fd is not None:
        with contextlib.suppress(OSError):
            os.fsync(folder.fd)
        return
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class StoreRefused(Exception):
    """A write that the rules refuse; its message is the user-facing error."""
