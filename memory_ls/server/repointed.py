"""A buffer whose path now leads to another file than the one its text came from.

An open document's path may run through a symlinked folder (``/w/link/.pi/memory.md``
with ``/w/link`` leading to ``/w/projA``). When the link is pointed elsewhere
(``/w/projB``), the path, and so the editor's next save, leads to another file. The
document follows its path (it is the store of the file it leads to now: diagnostics,
hover and commands agree), and a buffer whose text is not that file's is marked
``buffer-behind-file`` until it is, or until it is saved (SPEC §7 Open buffers;
``docs/lsp.md``). What decides it is here: pure, apart from :func:`file_holds_buffer`'s
one read of the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memory_ls.core.text import display_path
from memory_ls.store.facts import DiskBytes, read_disk_bytes

REPOINTED_MESSAGE = (
    "this buffer was opened from {opened_from}; its path now leads to {leads_to}; "
    "saving it would overwrite that file — revert the buffer to reload it"
)
REPOINTED_MISSING_MESSAGE = (
    "this buffer was opened from {opened_from}; its path now leads to {leads_to}, "
    "which does not exist; saving it would write this buffer's text there — revert "
    "the buffer to reload it"
)
SAVED_OVER_MESSAGE = (
    "this buffer was opened from {opened_from}; its path now leads to {leads_to}, and "
    "saving it wrote this buffer's text over that file"
)
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class Repointed:
    """A buffer opened from one file whose path now leads to another (canonical paths)."""

    opened_from: str
    leads_to: str
    exists: bool = True
    """Whether a file is at :attr:`leads_to` (a dangling link leads nowhere yet)."""

    @property
    def message(self) -> str:
        """The ``buffer-behind-file`` message (and its warning)."""
        template = REPOINTED_MESSAGE if self.exists else REPOINTED_MISSING_MESSAGE
        return template.format(
            opened_from=display_path(self.opened_from),
            leads_to=display_path(self.leads_to),
        )

    @property
    def saved_message(self) -> str:
        """The warning when the buffer was saved before the move was noticed."""
        return SAVED_OVER_MESSAGE.format(
            opened_from=display_path(self.opened_from),
            leads_to=display_path(self.leads_to),
        )


def encoded(text: str) -> bytes | None:
    """``text`` in UTF-8 without a leading byte order mark (``None``: lone surrogates,
    which no file read as UTF-8 holds)."""
    try:
        return text.encode("utf-8").removeprefix(_BOM)
    except UnicodeEncodeError:
        return None


def holds(text: bytes | None, file: DiskBytes) -> bool:
    """Whether a buffer's text (:func:`encoded`) is what ``file`` holds, so saving it
    would change nothing there. A missing file holds only the empty text; a symlink, a
    file that could not be read or was read in part holds no buffer's text. A byte
    order mark on either side is no difference (editors keep it out of the text)."""
    if text is None:
        return False
    if not file.exists:
        return text == b""
    if file.symlink or file.error is not None or not file.complete:
        return False
    return file.data.removeprefix(_BOM) == text


def repointed_mark(
    opened_from: str, leads_to: str, text: bytes | None, file: DiskBytes
) -> Repointed | None:
    """The mark of a buffer whose text came from ``opened_from`` and whose path leads to
    ``leads_to`` (read as ``file``), or ``None`` when it needs none: its path leads
    where its text came from, or its text is that file's (it is that file's buffer now)."""
    if opened_from == leads_to or holds(text, file):
        return None
    return Repointed(opened_from, leads_to, exists=file.exists)


def read_for(path: str, text: bytes | None) -> DiskBytes:
    """The file at ``path`` (canonical), read far enough to tell whether it holds
    ``text``: never through a symlink, never from a FIFO or device, never raising."""
    return read_disk_bytes(Path(path), (0 if text is None else len(text)) + len(_BOM) + 1)


def file_holds_buffer(path: str, text: str) -> bool:
    """Whether the file at ``path`` holds ``text`` (:func:`holds`, after one read)."""
    data = encoded(text)
    return holds(data, read_for(path, data))
