"""The files of other agents (SPEC §15): reading what ``import`` takes, writing ``export``'s block.

Neither is a store: an import file is only read, and an instruction file
(``AGENTS.md``, …) only ever has its memory-ls block rewritten. Both are
refused as a store would be when they are not regular files (a FIFO must not
hang the command) or not UTF-8 (an instruction file is never rewritten from
replacement characters). The block is written as a store is (SPEC §3 Writing):
under the folder's lock, through :func:`memory_ls.store.files.write_store`'s
temporary file, fsync and rename.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memory_ls.core.bridges import ImportFormat, import_candidates
from memory_ls.core.text import MAX_STORE_BYTES, display_path, first_invalid_utf8
from memory_ls.store.paths import is_pi_memory, is_within, real_path, unfollowable

MAX_IMPORT_BYTES = 8 * 1024 * 1024
"""An import file larger than this is refused: its notes could never fit a store anyway."""


@dataclass(frozen=True, slots=True)
class ReadText:
    """One read of a file that is not a store: its text, or why it cannot be used."""

    text: str | None
    """``None`` when the file does not exist (or could not be read: see ``error``)."""
    error: str | None = None


def read_text_file(path: Path, limit: int, what: str) -> ReadText:
    """Read a regular UTF-8 file of at most ``limit`` bytes; a missing file is ``text=None``.

    ``what`` names the file in refusals ("the import file", "the export target").
    Symlinks are followed (the person named this file); a FIFO or device is
    refused before it is opened for reading.
    """
    shown = display_path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return ReadText(None)
    except OSError as exc:
        # "Too many levels of symbolic links" names no culprit: a loop or a long chain.
        why = unfollowable(path) if exc.errno == errno.ELOOP else None
        reason = f"it {why}" if why is not None else exc.strerror or exc
        return ReadText(None, f"Cannot read {what} {shown}: {reason}")
    what_is = f"{what[0].upper()}{what[1:]}"
    if not stat.S_ISREG(st.st_mode):
        return ReadText(None, f"{what_is} is not a regular file: {shown}")
    if st.st_size > limit:
        return ReadText(None, f"{what_is} is {st.st_size} bytes, larger than {limit}: {shown}")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return ReadText(None)
        return ReadText(None, f"Cannot read {what} {shown}: {exc.strerror or exc}")
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # swapped since the stat
            return ReadText(None, f"{what_is} is not a regular file: {shown}")
        data = f.read(limit + 1)
    if len(data) > limit:
        return ReadText(None, f"{what_is} is larger than {limit} bytes: {shown}")
    try:
        return ReadText(data.decode("utf-8"))
    except UnicodeDecodeError:
        bad = first_invalid_utf8(data)
        return ReadText(
            None,
            f"{what_is} is not valid UTF-8 (first bad byte at offset {bad}): {shown}",
        )


def read_import_file(path: Path) -> ReadText:
    """An import file's text; a missing one is an error here (there is nothing to import)."""
    read = read_text_file(path, MAX_IMPORT_BYTES, "the import file")
    if read.error is None and read.text is None:
        return ReadText(None, f"No such import file: {display_path(path)}")
    return read


def read_export_target(path: Path) -> ReadText:
    """An instruction file's text (``None`` when missing); one over the store cap is refused."""
    return read_text_file(path, MAX_STORE_BYTES, "the export target")


def other_names_message(path: Path, links: int) -> str:
    """Why export may not replace ``path``, an instruction file with ``links`` names (hard
    links): the rename would give this name a new file and leave the others the old text
    (``CLAUDE.md`` hard-linked to ``AGENTS.md``), as a store is never replaced for it
    (:func:`~memory_ls.store.files.hard_links_message`; the export target's symlinks are
    followed before: :func:`export_target`). ``write_store``'s ``linked``: it looks at
    the target before it writes and again right before its rename."""
    return (
        f"Refusing to export into {display_path(path)}: it has {links} hard links "
        "(other names for the same file), and replacing it would leave the others the old "
        "text. Make the other names symlinks to it (export follows a symlink), or this one "
        "a copy of its own."
    )


@dataclass(frozen=True, slots=True)
class ExportTarget:
    """The file export writes (symlinks followed), or why it may not write there."""

    path: Path
    error: str | None = None


def export_target(named: Path, project_root: Path, stores: Sequence[Path]) -> ExportTarget:
    """Resolve the file ``named`` for export, refusing a memory file and a link out of the project.

    A symlink is followed (``CLAUDE.md -> AGENTS.md`` stays a link), except where
    it would make export write what it must not: a memory store (the block's
    bullets would become notes: the global ones copied into the project's
    committed store, all of them doubled on the next export), or, for a file in
    the project, a file outside it (a cloned repository can ship ``AGENTS.md ->
    ~/.bashrc``; a note such as ``$(curl … | sh)`` would then run in the next
    shell), as SPEC §1 refuses a ``.pi`` that leads out. A file outside the
    project named as it is stays the user's choice.
    """
    lexical = os.path.abspath(named)
    why = unfollowable(Path(lexical))
    if why is not None:  # nothing can open it: followed to its end, it would be written
        return ExportTarget(
            Path(lexical), f"Refusing to export to {display_path(lexical)}: it {why}."
        )
    real = real_path(lexical)
    target = Path(real)
    memory_files = {real_path(store) for store in stores}
    if real in memory_files or is_pi_memory(target) or _same_file(real, stores):
        return ExportTarget(
            target,
            f"Refusing to export into a memory file: {display_path(target)} "
            "(export keeps a block in an instruction file such as AGENTS.md).",
        )
    real_root = real_path(project_root)
    # In the project as named, or through a folder that really is in it (a workspace
    # opened through a symlinked path names its files through that path).
    in_project = any(
        is_within(lexical, root) for root in (os.path.abspath(project_root), real_root)
    ) or is_within(real_path(os.path.dirname(lexical)), real_root)
    if in_project and not is_within(real, real_root):
        return ExportTarget(
            target,
            f"Refusing to export to {display_path(lexical)}: it resolves outside the project "
            f"({display_path(real)}).",
        )
    return ExportTarget(target)


def _same_file(path: str, stores: Sequence[Path]) -> bool:
    """Whether ``path`` is one of ``stores`` by another name (a hard link)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    for store in stores:
        try:
            other = os.stat(store)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (other.st_dev, other.st_ino):
            return True
    return False


@dataclass(frozen=True, slots=True)
class ImportFiles:
    """The candidate notes of every file of one import, or why the import cannot start."""

    candidates: list[str]
    error: str | None = None
    empty: tuple[Path, ...] = ()
    """Files that were read but hold no note in the format asked for."""


def read_import_files(paths: list[Path], fmt: ImportFormat) -> ImportFiles:
    """Read every file first: one that cannot be read stops the whole import (nothing is written)."""
    candidates: list[str] = []
    empty: list[Path] = []
    for path in paths:
        read = read_import_file(path)
        if read.error is not None or read.text is None:
            return ImportFiles([], read.error or f"Cannot read {display_path(path)}")
        found = import_candidates(read.text, fmt)
        if not found:
            empty.append(path)
        candidates.extend(found)
    return ImportFiles(candidates, None, tuple(empty))
