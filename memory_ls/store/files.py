"""The only code that reads or writes a store file: refusals, stamps, lock, atomic write.

A write is a read-modify-write under two locks: a ``threading.Lock`` per path
(threads of this process, e.g. the MCP SDK's workers) and an exclusive ``flock``
on the store's *directory* (every process on the machine). Locking the
directory rather than a lock file means nothing but ``memory.md`` is ever left
in ``.pi/``; locking the store file itself would not work, since each write
replaces it with a new inode. Waiting for either lock is bounded
(:func:`lock_timeout`); an operation on two stores (``move``) takes both, in
one fixed order (:func:`store_locks`), so it cannot deadlock with another.

Under the lock every read and write goes through the folder's open descriptor
(``dir_fd``), after the caller has checked where that very folder is: a symlink
swapped in for the folder's path afterwards cannot redirect the write (SPEC §1),
and the folder is checked once more right before the rename.

A program that does not take the lock (an editor saving the file) may still
change the store between our read and our rename. :func:`rewrite_store` re-reads
the file right before the rename and, when it changed, does the whole
read-modify-write again (:data:`WRITE_TRIES` times at most). What remains is the
moment between that last comparison and ``rename(2)`` itself, which no file
system API closes without the other program's cooperation.
"""

from __future__ import annotations

import _thread
import contextlib
import errno
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from memory_ls.core.records import field, overload, record
from memory_ls.core.text import (
    MAX_STORE_BYTES,
    compiled,
    decode_for_display,
    display_path,
    first_invalid_utf8,
)
from memory_ls.store.facts import not_regular_message
from memory_ls.store.paths import inbox_path, real_path, unfollowable

TYPE_CHECKING = False  # not `typing`'s: the read verbs do without importing it (~3.5 ms)
if TYPE_CHECKING:
    from typing import Literal


LOCK_TIMEOUT = 10.0
"""Seconds a write waits for another writer's lock before giving up (default)."""
LOCK_TIMEOUT_ENV = "MEMORY_LS_LOCK_TIMEOUT"
"""The environment variable that overrides :data:`LOCK_TIMEOUT` (seconds, a float)."""
WRITE_TRIES = 5
"""How many times a write is redone when another program changed the file meanwhile."""


RACY_MARGIN_NS = 2_000_000_000
"""How far in the past a file's mtime must be, when its stamp is taken, for that stamp to
be trusted to say "unchanged" later (git's "racily clean" rule).

A file system stores mtimes at its own granularity: 2 s on FAT, 1 s on ext3, HFS+ and
some network mounts, a kernel tick (a few ms) on ext4 and tmpfs, whose clock is also a
little behind :func:`time.time_ns`. A rewrite of the same size in place (same inode) within
one such tick of our read keeps the stamp our read took, so a cache keyed by it would keep
the old text or decision for good. 2 s covers the coarsest of them, and a clock a little
off; an mtime in the future (a skewed clock) counts as within the margin too.

The moment is :func:`time.time_ns`, read just after the ``stat``: the realtime clock local
file systems stamp files from (Linux stamps with its coarse copy, up to a tick behind, so
an mtime is never ahead of it by itself). A network mount stamps with its server's clock:
one more than the margin behind ours is not covered; one ahead only makes stamps racy,
i.e. read again at each look, until ours passes the mtime by the margin."""


def is_racy(mtime_ns: int, now_ns: int | None = None) -> bool:
    """Whether a stamp with ``mtime_ns``, taken at ``now_ns`` (default: now), may hide a
    later change of the same size: the mtime is not :data:`RACY_MARGIN_NS` in the past."""
    return (time.time_ns() if now_ns is None else now_ns) - mtime_ns < RACY_MARGIN_NS


@record
class Stamp:
    """What tells a store's versions apart without reading it."""

    mtime_ns: int
    size: int
    inode: int
    racy: bool = field(default=False, compare=False)
    """Taken while the mtime was within :data:`RACY_MARGIN_NS` of the clock (:func:`is_racy`):
    a later equal stamp does not prove the file unchanged (:func:`unchanged`). Not compared."""


def stamp_from(st: os.stat_result) -> Stamp:
    """The stamp of a ``stat`` result taken just now, racy or not (:func:`is_racy`)."""
    mtime = st.st_mtime_ns
    return Stamp(mtime, st.st_size, st.st_ino, is_racy(mtime))


def unchanged(cached: object, current: object) -> bool:
    """Whether what was read with stamp ``cached`` still stands, the file now having stamp
    ``current``: equal stamps, and ``cached`` not racy (then the caller reads again, and
    keeps that read's stamp, racy or not, until one is taken once the mtime is old enough).
    Any other key (``None`` for a missing file, a folder's names) compares by ``==``."""
    return cached == current and not (isinstance(cached, Stamp) and cached.racy)


# -- messages (every one names the file, and most say what to do) --------------------


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


def write_failed_message(path: Path, exc: OSError) -> str:
    """An I/O failure while writing the store at ``path``. A folder on the way that is not
    a folder (an agent dir that is a file) is named: creating the folders fails with "File
    exists" or "Not a directory", which names no culprit. So is one that leads nowhere:
    a project's ``.pi`` is not created, and the lock made in it fails with "No such file
    or directory"."""
    why = exc.strerror or str(exc)
    if exc.errno in (errno.EEXIST, errno.ENOTDIR, errno.ENOENT, errno.ELOOP):
        why = _folder_on_the_way(path) or why
    return f"Cannot write the memory file {display_path(path)}: {why}"


def read_failed_message(path: Path, exc: OSError) -> str:
    """An I/O failure while reading the store at ``path``. A folder on the way that is a
    symlink loop (an agent dir linked to itself), a symlink to nothing or not a folder is
    named, as for a write: the bare "Too many levels of symbolic links" or "Not a
    directory" names no culprit."""
    why = exc.strerror or str(exc)
    if exc.errno in (errno.ENOTDIR, errno.ENOENT, errno.ELOOP):
        why = _folder_on_the_way(path) or why
    return f"Cannot read {display_path(path)}: {why}"


def unreachable_message(path: Path, exc: OSError) -> str | None:
    """Why the store at ``path``, which could not be looked at (``exc``), cannot be read,
    or ``None`` when it is simply not there yet (then it reads as empty, and a write
    creates it). Not there through a folder on the way that is a symlink to nothing
    (an agent dir linked to an unmounted disk) is not "not there yet": nothing can be
    created there, so it is named (:func:`read_failed_message`), as a loop or a file
    where a folder should be are. The one rule for reads: ``list``, ``inject``, the
    doctor, ``check`` and the editor say the same of one store."""
    if exc.errno == errno.ENOENT and _folder_on_the_way(path) is None:
        return None
    return read_failed_message(path, exc)


def unreachable_store(path: Path) -> str | None:
    """:func:`unreachable_message` of a store found missing by another look (``check``'s):
    ``None`` when it is there or simply not there yet."""
    try:
        os.lstat(path)
    except OSError as exc:
        return unreachable_message(path, exc)
    except ValueError:
        return None  # a path no file can have (a NUL): not there
    return None


def _folder_on_the_way(path: Path) -> str | None:
    """What is wrong with the nearest folder above ``path`` that exists (as a name): a
    symlink to nothing, a symlink loop (or a chain of more links than the system follows),
    or not a folder; ``None`` when it is a folder."""
    for folder in path.parents:
        if os.path.lexists(folder):
            if not os.path.exists(folder):  # a symlink that leads nowhere
                why = unfollowable(folder)
                if why is not None:
                    return f"{display_path(folder)} {why}"
                return f"{display_path(folder)} is a symlink to nothing (a dangling link)"
            if not os.path.isdir(folder):
                return f"{display_path(folder)} is not a directory"
            return None  # the nearest one that exists decides
    return None


def locked_message(path: Path, timeout: float) -> str:
    """Refusal after waiting ``timeout`` seconds for another writer's lock."""
    return f"Memory file is locked by another process (waited {timeout:g} s): {display_path(path)}"


def read_only_message(path: Path) -> str:
    """Refusal to replace a store whose owner may not write it (mode without ``u+w``)."""
    return (
        "Memory file is read-only (no write permission for its owner; chmod u+w to allow "
        f"changes): {display_path(path)}"
    )


def foreign_owner_message(path: Path, owner: int) -> str:
    """Refusal to replace a store owned by another user (the new file would be ours)."""
    return (
        f"Memory file belongs to another user (uid {owner}); replacing it would change "
        f"its owner, so run memory-ls as that user: {display_path(path)}"
    )


def foreign_group_message(path: Path, group: int) -> str:
    """Refusal to replace a store whose group this user cannot give the new file."""
    return (
        f"Memory file belongs to group {group}, which this user cannot give the new file; "
        f"replacing it would change its group, so run memory-ls as a member: {display_path(path)}"
    )


def hard_links_message(path: Path, links: int) -> str:
    """Refusal to replace a store that has other names (hard links): the new file would be
    this name's alone, and the others would keep the old notes, silently apart from now on."""
    return (
        f"Memory file has {links} hard links (other names for the same file); replacing it "
        "would leave the others with the old notes. Remove the other names, or make this "
        f"one a copy of its own, to change it: {display_path(path)}"
    )


def folder_changed_message(folder: Path) -> str:
    """Refusal when the store's folder is no longer the folder that was checked and locked."""
    return (
        "The memory folder was moved or replaced (e.g. by a symlink) while it was being "
        f"written; nothing was written. Check what is there now: {display_path(folder)}"
    )


def kept_changing_message(path: Path, tries: int) -> str:
    """Refusal after another program changed the store during each of ``tries`` writes."""
    return (
        f"Memory file kept changing while it was being written ({tries} tries); nothing "
        f"was written. Try again once the other program has saved it: {display_path(path)}"
    )


# -- pure decisions ------------------------------------------------------------------

_TEMP_SUFFIX = r"[0-9a-f]{12}\.tmp"


def temp_name(store_name: str, token: str) -> str:
    """The name of a temporary for ``store_name``; ``token`` is 12 lowercase hex digits."""
    return f".{store_name}.{token}.tmp"


def is_temp_name(store_name: str, name: str) -> bool:
    """Whether ``name`` is exactly a temporary :func:`temp_name` makes for ``store_name``.

    Only these are ever removed as a dead writer's leftovers: a user's
    ``memory.md.tmp-notes``, ``memory.md~`` or ``.memory.md.old.tmp`` is not ours.
    """
    prefix = f".{store_name}."
    return (
        name.startswith(prefix)
        and compiled(_TEMP_SUFFIX).fullmatch(name[len(prefix) :]) is not None
    )


def lock_timeout(env: Mapping[str, str]) -> float:
    """Seconds to wait for a lock: ``MEMORY_LS_LOCK_TIMEOUT`` if it is a number >= 0, else 10."""
    import math  # here: the read verbs take no lock (~0.3 ms)

    raw = env.get(LOCK_TIMEOUT_ENV, "").strip()
    try:
        value = float(raw)
    except ValueError:
        return LOCK_TIMEOUT
    return value if math.isfinite(value) and value >= 0 else LOCK_TIMEOUT


def replace_refusal(
    path: Path,
    mode: int,
    owner: int,
    group: int,
    euid: int,
    groups: Sequence[int],
    links: int = 1,
    linked: Callable[[Path, int], str] = hard_links_message,
) -> str | None:
    """Why a store with this mode, owner and group may not be replaced by this user.

    Replacing is a rename, which the folder's permissions allow whatever the
    file's own: so the file's are checked here. A file without its owner's
    write bit is read-only (for root too, who bypasses permission checks). Only
    root can give the new file another user's ownership; anyone else would take
    the file over, so a file of another user, or of a group this user is not
    in, is refused instead. A store with ``links`` > 1 names (hard links) is refused
    too: the rename would give this name a new file and leave the others the old one,
    two stores from then on where there was one (the project store hard-linked to
    the global one, say), without a word: ``linked(path, links)`` says so (export's words
    are its own).
    """
    if links > 1:
        return linked(path, links)
    if not mode & stat.S_IWUSR:
        return read_only_message(path)
    if euid == 0:
        return None
    if owner != euid:
        return foreign_owner_message(path, owner)
    if group not in groups:
        return foreign_group_message(path, group)
    return None


# -- reading -------------------------------------------------------------------------


@record
class StoreFile:
    """One read of a store: its text (if readable) and why it may not be used."""

    path: Path
    exists: bool
    content: str
    stamp: Stamp | None
    error: str | None = None
    """Why the store may not be read at all (symlink, oversize, I/O error)."""
    invalid_utf8_at: int | None = None
    data: bytes | None = None
    """The file's bytes, exactly ``content`` in UTF-8, when it was read (or written) whole
    here: a read under the lock that finds these very bytes again takes ``content`` as
    it is instead of decoding them (:func:`read_store`'s ``known``)."""

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
    return stamp_from(st)


@record
class LockedFolder:
    """A store's folder, held open and locked by :func:`store_lock`.

    ``fd`` is the open directory (``None`` where the platform has no ``dir_fd``,
    i.e. Windows): reads and writes under the lock name the store relative to
    it, so they reach the folder that was checked whatever its path names now.
    ``real`` is the folder's real path when it was opened.
    """

    path: Path
    fd: int | None
    real: str = ""


def _at(path: Path, folder: LockedFolder | None) -> str | Path:
    """How to name ``path`` for an ``os`` call with ``dir_fd=_dir_fd(folder)``."""
    return path.name if folder is not None and folder.fd is not None else path


def _dir_fd(folder: LockedFolder | None) -> int | None:
    return folder.fd if folder is not None else None


def read_store(
    path: Path, folder: LockedFolder | None = None, known: StoreFile | None = None
) -> StoreFile:
    """Read a store, refusing a symlink and a file over the cap; missing reads as empty.

    Under :func:`store_lock`, pass the :class:`LockedFolder` so the read goes
    through the locked folder. ``known`` is an earlier read of the same store (a
    cached view): the file is read whole all the same, and when it holds exactly
    ``known``'s bytes, ``known``'s text is taken rather than decoded again (a
    256 KB store with one emoji takes ~0.5 ms to decode).
    """
    name, dir_fd = _at(path, folder), _dir_fd(folder)
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError as exc:
        # Missing reads as empty; under the lock its folder is held open, so missing is
        # all ENOENT can mean.
        locked = folder is not None and exc.errno == errno.ENOENT
        return StoreFile(
            path, False, "", None, error=None if locked else unreachable_message(path, exc)
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
    stamp = stamp_from(fst)  # taken before the read: a later write shows, or it is racy
    if known is not None and known.data is not None and known.data == data:
        return StoreFile(path, True, known.content, stamp, data=known.data)
    try:  # one decode in the common case; the slow path only for a broken file
        return StoreFile(path, True, data.decode("utf-8"), stamp, data=data)
    except UnicodeDecodeError:
        bad = first_invalid_utf8(data)
        return StoreFile(path, True, decode_for_display(data), stamp, invalid_utf8_at=bad)


# -- locking -------------------------------------------------------------------------

# `_thread`'s locks are `threading.Lock`'s own; `threading` itself (~1 ms) is not imported
# by the read verbs.
_thread_locks: dict[str, _thread.LockType] = {}
_thread_locks_guard = _thread.allocate_lock()


def _thread_lock(path: Path) -> _thread.LockType:
    with _thread_locks_guard:
        return _thread_locks.setdefault(str(path), _thread.allocate_lock())


@record
class LockRequest:
    """One store to lock: its path, whether its folder's parents may be created, its check.

    ``check`` is asked, once the lock is held, about the real path of the folder
    actually opened; a message from it is raised as :class:`StoreRefused` before
    anything in that folder is touched.
    """

    path: Path
    make_parents: bool = False
    check: Callable[[str], str | None] | None = None


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
    ``FileNotFoundError`` instead of being created. See :class:`LockRequest`
    for ``check``. Waiting is bounded by :func:`lock_timeout`.
    """
    with store_locks([LockRequest(path, make_parents, check)]) as folders:
        yield folders[0]


@contextlib.contextmanager
def store_locks(requests: Sequence[LockRequest]) -> Iterator[list[LockedFolder]]:
    """Hold the write locks of several stores at once; the folders in ``requests``' order.

    The locks are taken in one fixed order (by real path), so two operations
    that each need both stores (a ``move`` each way) cannot deadlock; a store
    named twice (one file under two names) is locked once. The whole wait is
    bounded by :func:`lock_timeout`, after which :class:`StoreRefused` says so.
    """
    timeout = lock_timeout(os.environ)
    deadline = time.monotonic() + timeout
    keys = [real_path(r.path) for r in requests]
    held: dict[str, LockedFolder] = {}
    with contextlib.ExitStack() as stack:
        for key in sorted(set(keys)):
            request = requests[keys.index(key)]
            held[key] = stack.enter_context(_one_lock(request, deadline, timeout))
        yield [held[key] for key in keys]


@contextlib.contextmanager
def _one_lock(request: LockRequest, deadline: float, timeout: float) -> Iterator[LockedFolder]:
    path, check = request.path, request.check
    folder = path.parent
    if request.make_parents:
        folder.mkdir(parents=True, exist_ok=True)
    else:
        # mkdir never follows a symlink: a `.pi` link (even dangling) is left as it is.
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder)
    thread_lock = _thread_lock(path)
    if not thread_lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
        raise StoreRefused(locked_message(path, timeout))
    try:
        if sys.platform == "win32":  # pragma: no cover - no flock on Windows
            import tempfile

            from filelock import FileLock, Timeout

            name = f"memory-ls-{abs(hash(str(path)))}.lock"
            try:
                file_lock = FileLock(os.path.join(tempfile.gettempdir(), name))
                file_lock.acquire(timeout=max(0.0, deadline - time.monotonic()))
            except Timeout:
                raise StoreRefused(locked_message(path, timeout)) from None
            try:
                _check_folder(check, real_path(folder))
                yield LockedFolder(folder, None, real_path(folder))
            finally:
                file_lock.release()
            return
        import fcntl

        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            # The real path now, next to the open: what the folder must still be later.
            locked = LockedFolder(folder, fd, real_path(folder))
            _flock_until(fd, deadline, path, timeout)
            try:
                verify_folder(locked)
                _check_folder(check, locked.real)
                _remove_stale_temps(path, locked)
                yield locked
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
    finally:
        thread_lock.release()


def _flock_until(fd: int, deadline: float, path: Path, timeout: float) -> None:
    """Take the exclusive ``flock`` on ``fd``, polling until ``deadline``."""
    import fcntl

    pause = 0.005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise StoreRefused(locked_message(path, timeout))
        time.sleep(min(pause, remaining))
        pause = min(pause * 2, 0.05)


def _check_folder(check: Callable[[str], str | None] | None, real: str) -> None:
    refusal = check(real) if check is not None else None
    if refusal is not None:
        raise StoreRefused(refusal)


def verify_folder(folder: LockedFolder) -> None:
    """Refuse unless the folder's path still leads to the very directory held open.

    Its real path must be the one it had when it was opened, and that path must
    name the same directory (device and inode) as the descriptor: a ``.pi``
    moved away and replaced by a symlink (to anywhere, even back to it) is
    refused, and nothing is written through it.
    """
    if folder.fd is None:  # pragma: no cover - Windows: no descriptor to compare with
        return
    held = os.fstat(folder.fd)
    try:
        real = real_path(folder.path)
        named = os.stat(real)
    except (OSError, ValueError):
        raise StoreRefused(folder_changed_message(folder.path)) from None
    if real != folder.real or (named.st_dev, named.st_ino) != (held.st_dev, held.st_ino):
        raise StoreRefused(folder_changed_message(folder.path))


def _remove_stale_temps(path: Path, folder: LockedFolder) -> None:
    """Remove temporaries of writers that died mid-write (safe: we hold the lock).

    The lock covers the store and its review inbox, so both files' leftovers go.
    """
    names = (path.name, inbox_path(path).name)
    listing: int | Path = folder.fd if folder.fd is not None else folder.path
    with contextlib.suppress(OSError), os.scandir(listing) as entries:
        for entry in entries:
            if any(is_temp_name(name, entry.name) for name in names):
                with contextlib.suppress(OSError):
                    os.unlink(_at(path.parent / entry.name, folder), dir_fd=folder.fd)


# -- writing -------------------------------------------------------------------------


def rewrite_store(
    path: Path,
    folder: LockedFolder,
    decide: Callable[[StoreFile], str | None],
    known: StoreFile | None = None,
) -> StoreFile | None:
    """One read-modify-write of a store under :func:`store_lock`; the file written, if any.

    ``decide`` gets the store as read now and returns its new text, or ``None``
    to leave it as it is. When another program (one that does not take the
    lock) changed the file between the read and the rename, the write is
    dropped and ``decide`` asked again about the new text. When it saved in
    place into the very file being replaced, after the last look and before
    the rename, its text is read back from that file and ``decide`` asked about
    it, so its save is written again with the change. After
    :data:`WRITE_TRIES` rounds :class:`StoreRefused` says the file kept changing.

    ``known`` (a cached read of the store) spares decoding the store when it still
    holds the same bytes (:func:`read_store`); it is read under the lock all the same.
    """
    base = read_store(path, folder, known)
    on_disk = _bytes_of(base)
    written: StoreFile | None = None
    restoring = False
    for _ in range(WRITE_TRIES):
        content = decide(base)
        if content is None:
            if not restoring or base.mutation_error is not None:
                return written
            content = base.content  # nothing to change in their save: put it back as it was
        data = _encoded(content, base)
        outcome = write_store(
            path, content, folder, expected=on_disk, check=True, data=data, one_name=True
        )
        if outcome.stamp is None:  # changed before the rename: nothing written, read again
            base, restoring = read_store(path, folder, known), False
            on_disk = _bytes_of(base)
            continue
        written = StoreFile(path, True, content, outcome.stamp, data=data)
        if outcome.overwritten is None:
            return written
        # A save into the old file just before the rename: make the change on it too.
        base, restoring = _from_bytes(path, outcome.overwritten), True
        on_disk = data
    raise StoreRefused(kept_changing_message(path, WRITE_TRIES))


def _bytes_of(file: StoreFile) -> bytes | None:
    """What the store must still hold for a write made from ``file`` (``None``: missing)."""
    if not file.exists:
        return None
    return file.data if file.data is not None else file.content.encode("utf-8")


def _encoded(content: str, base: StoreFile) -> bytes:
    """``content`` in UTF-8; when it is ``base``'s text and more (an add), only the rest is
    encoded (UTF-8 encodes a text piece by piece: ``base.data`` is its text's own bytes)."""
    if base.data is not None and content.startswith(base.content):
        return base.data + content[len(base.content) :].encode("utf-8")
    return content.encode("utf-8")


def _from_bytes(path: Path, data: bytes) -> StoreFile:
    """A :class:`StoreFile` of text read from a file no longer at ``path``."""
    if len(data) > MAX_STORE_BYTES:
        return StoreFile(path, True, "", None, error=oversize_message(path, len(data)))
    try:
        return StoreFile(path, True, data.decode("utf-8"), None, data=data)
    except UnicodeDecodeError:
        bad = first_invalid_utf8(data)
        return StoreFile(path, True, decode_for_display(data), None, invalid_utf8_at=bad)


@record
class WriteOutcome:
    """What :func:`write_store` did when asked to check the file first."""

    stamp: Stamp | None
    """The new file's stamp; ``None`` when the store had changed and nothing was written."""
    overwritten: bytes | None = None
    """The replaced file's bytes when it changed after the last look (an in-place save)."""


@overload
def write_store(
    path: Path,
    content: str,
    folder: LockedFolder | None = ...,
    *,
    expected: bytes | None = ...,
    check: Literal[False] = ...,
    data: bytes | None = ...,
    one_name: bool = ...,
    linked: Callable[[Path, int], str] = ...,
) -> Stamp: ...


@overload
def write_store(
    path: Path,
    content: str,
    folder: LockedFolder | None = ...,
    *,
    expected: bytes | None = ...,
    check: Literal[True],
    data: bytes | None = ...,
    one_name: bool = ...,
    linked: Callable[[Path, int], str] = ...,
) -> WriteOutcome: ...


def write_store(
    path: Path,
    content: str,
    folder: LockedFolder | None = None,
    *,
    expected: bytes | None = None,
    check: bool = False,
    data: bytes | None = None,
    one_name: bool = False,
    linked: Callable[[Path, int], str] = hard_links_message,
) -> Stamp | WriteOutcome:
    """Replace the store atomically with ``content``; call under :func:`store_lock`.

    The text goes to a temporary file in the same folder, is given the store's
    mode, owner and group, flushed to disk and renamed over the store, so a
    reader or a crash sees the old or the new file. Pass the
    :class:`LockedFolder` so every step goes through the locked folder (which
    is checked again right before the rename). With ``check``, the store must
    still hold exactly ``expected`` (``None``: be missing) right before the
    rename, else nothing is written; the replaced file is read again after the
    rename through a descriptor held open, so a save into it in between is
    returned (:class:`WriteOutcome`) rather than lost. ``data``, when the caller has
    it, is ``content`` in UTF-8 already. ``one_name`` (a memory store) refuses a file
    with other names (hard links), also one given a name right before the rename: the
    rename would leave them the old file (:func:`replace_refusal`; ``linked`` words the
    refusal, from the path and its number of names).
    """
    if data is None:
        data = content.encode("utf-8")
    if len(data) > MAX_STORE_BYTES:
        raise StoreRefused(oversize_message(path, len(data)))
    name, dir_fd = _at(path, folder), _dir_fd(folder)
    try:
        old: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        old = None
    if old is not None:
        _refuse_to_replace(path, old, one_name, linked)
    tmp_path = path.parent / temp_name(path.name, os.urandom(6).hex())
    tmp = _at(tmp_path, folder)
    # A new store gets the usual 0o666-minus-umask; an existing one keeps its mode.
    # O_EXCL never follows a symlink, so the temporary is always a new file here.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o666 if old is None else 0o600, dir_fd=dir_fd)
    held: int | None = None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if old is not None:  # owner first: a chown clears set-id bits the mode restores
                _keep_owner(f.fileno(), path, old)
                _set_mode(f.fileno(), tmp_path, stat.S_IMODE(old.st_mode))
            os.fsync(f.fileno())
        if folder is not None:
            verify_folder(folder)
        if check:
            held, now = _look(name, dir_fd)
            if now != expected:
                os.unlink(tmp, dir_fd=dir_fd)
                return WriteOutcome(None)
            if one_name and held is not None and (links := os.fstat(held).st_nlink) > 1:
                raise StoreRefused(linked(path, links))  # linked meanwhile
        elif one_name:
            # The same last look without the bytes (an inbox, export's target): linked
            # meanwhile?
            with contextlib.suppress(FileNotFoundError):
                now_st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                if stat.S_ISREG(now_st.st_mode) and now_st.st_nlink > 1:
                    raise StoreRefused(linked(path, now_st.st_nlink))
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        overwritten = None
        if held is not None:
            again = os.pread(held, MAX_STORE_BYTES + 1, 0)
            overwritten = again if again != expected else None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    finally:
        if held is not None:
            os.close(held)
    _fsync_dir(path.parent, folder)
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    stamp = stamp_from(st)  # racy: another writer's same-size edit may share its tick
    return WriteOutcome(stamp, overwritten) if check else stamp


def _look(name: str | Path, dir_fd: int | None) -> tuple[int | None, bytes | None]:
    """The store's bytes now (``None``: missing or not a regular file), and its open descriptor.

    The descriptor stays open so the file can be read again once it has been
    replaced: a program saving into it in place after this look is seen then.
    """
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0), dir_fd=dir_fd)
    except OSError:
        return None, None  # missing, or a symlink now: either way not what was read
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None, b""  # never equal to a read text: the retry refuses it
    return fd, os.pread(fd, MAX_STORE_BYTES + 1, 0)


def write_refusal(path: Path) -> str | None:
    """Why the regular file at ``path`` would not be replaced now (other names, no write
    bit for its owner, another owner or group: :func:`replace_refusal`), else ``None``,
    also when it is missing or no regular file (which its read says): what a write would
    say, for a report that writes nothing."""
    try:
        st = os.lstat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    try:
        _refuse_to_replace(path, st, one_name=True)
    except StoreRefused as exc:
        return str(exc)
    return None


def refuse_change(path: Path, folder: LockedFolder | None = None, one_name: bool = False) -> None:
    """Raise :class:`StoreRefused` when the existing file at ``path`` may not be replaced or
    removed by us (symlink, not a regular file, read-only, another owner; with
    ``one_name``, other names: hard links); call under the lock.

    What :func:`write_store` checks first, for a caller that must know before it
    writes another file (accepting writes the store, then its inbox).
    """
    try:
        old = os.stat(_at(path, folder), dir_fd=_dir_fd(folder), follow_symlinks=False)
    except FileNotFoundError:
        return
    _refuse_to_replace(path, old, one_name)


def _refuse_to_replace(
    path: Path,
    old: os.stat_result,
    one_name: bool = False,
    linked: Callable[[Path, int], str] = hard_links_message,
) -> None:
    """Raise :class:`StoreRefused` when the existing store may not be replaced by us; with
    ``one_name`` (a memory store), also when it has other names (hard links): ``linked``."""
    if stat.S_ISLNK(old.st_mode):
        raise StoreRefused(symlink_message(path))
    if not stat.S_ISREG(old.st_mode):
        raise StoreRefused(not_regular_message(path))
    if sys.platform == "win32":  # pragma: no cover - no uids; a read-only file fails to rename
        return
    refusal = replace_refusal(
        path,
        old.st_mode,
        old.st_uid,
        old.st_gid,
        os.geteuid(),
        [os.getegid(), *os.getgroups()],
        old.st_nlink if one_name else 1,
        linked,
    )
    if refusal is not None:
        raise StoreRefused(refusal)


def _keep_owner(fd: int, path: Path, old: os.stat_result) -> None:
    """Give the temporary the store's owner and group (before it gets its mode back)."""
    if not hasattr(os, "fchown"):  # pragma: no cover - Windows
        return
    st = os.fstat(fd)
    if (st.st_uid, st.st_gid) == (old.st_uid, old.st_gid):
        return
    uid = old.st_uid if os.geteuid() == 0 else -1  # only root may give a file away
    try:
        os.fchown(fd, uid, old.st_gid)
    except PermissionError:
        raise StoreRefused(foreign_group_message(path, old.st_gid)) from None


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
