"""A buffer whose path leads to another file than its text came from (a symlinked folder
pointed elsewhere): the pure decision of ``server/repointed.py`` (SPEC §7 Open buffers)."""

from __future__ import annotations

from pathlib import Path

from memory_ls.server.repointed import (
    Repointed,
    encoded,
    file_holds_buffer,
    holds,
    read_for,
    repointed_mark,
)
from memory_ls.store.facts import DiskBytes

A = "/w/projA/.pi/memory.md"
B = "/w/projB/.pi/memory.md"
FILE = DiskBytes(Path(B), b"- o\n", 4, regular=True)


def test_a_buffer_whose_path_leads_where_its_text_came_from_needs_no_mark() -> None:
    assert repointed_mark(A, A, encoded("- a\n"), FILE) is None


def test_a_buffer_holding_the_new_files_text_is_that_files_buffer() -> None:
    assert repointed_mark(A, B, encoded("- o\n"), FILE) is None
    # A byte order mark on one side only is no difference.
    assert repointed_mark(A, B, encoded("\ufeff- o\n"), FILE) is None
    with_bom = DiskBytes(Path(B), b"\xef\xbb\xbf- o\n", 7, regular=True)
    assert repointed_mark(A, B, encoded("- o\n"), with_bom) is None


def test_a_buffer_holding_another_files_text_is_marked_with_what_a_save_would_do() -> None:
    mark = repointed_mark(A, B, encoded("- a\n"), FILE)
    assert mark == Repointed(A, B, exists=True)
    assert mark.message == (
        f"this buffer was opened from {A}; its path now leads to {B}; saving it would "
        "overwrite that file — revert the buffer to reload it"
    )
    assert mark.saved_message == (
        f"this buffer was opened from {A}; its path now leads to {B}, and saving it wrote "
        "this buffer's text over that file"
    )


def test_a_path_leading_nowhere_holds_only_the_empty_text() -> None:
    missing = DiskBytes(Path(B), error="Cannot read", exists=False)
    assert repointed_mark(A, B, encoded(""), missing) is None
    mark = repointed_mark(A, B, encoded("- a\n"), missing)
    assert mark is not None and not mark.exists
    assert "which does not exist; saving it would write this buffer's text there" in mark.message


def test_what_cannot_be_compared_holds_no_buffer() -> None:
    text = encoded("- o\n")
    assert not holds(text, DiskBytes(Path(B), size=10, symlink=True))
    assert not holds(text, DiskBytes(Path(B), b"- o\n", 4, error="Cannot read", regular=True))
    assert not holds(text, DiskBytes(Path(B), b"- o\n", 9, regular=True))  # read in part
    assert encoded("\ud800") is None  # a lone surrogate: no file holds it
    assert not holds(None, FILE)
    assert not holds(None, DiskBytes(Path(B), exists=False))


def test_paths_in_the_message_cannot_forge_a_line() -> None:
    mark = Repointed("/w/a\nfake/.pi/memory.md", B)
    assert "\n" not in mark.message and "\\n" in mark.message


def test_the_file_is_read_far_enough_to_compare(tmp_path: Path) -> None:
    store = tmp_path / "memory.md"
    store.write_bytes(b"- o\n- longer than the buffer\n")
    assert not file_holds_buffer(str(store), "- o\n")
    assert file_holds_buffer(str(store), "- o\n- longer than the buffer\n")
    assert not read_for(str(store), encoded("- o\n")).complete
    assert not file_holds_buffer(str(tmp_path / "missing.md"), "- o\n")
    assert file_holds_buffer(str(tmp_path / "missing.md"), "")
    (tmp_path / "link.md").symlink_to(store)
    assert not file_holds_buffer(str(tmp_path / "link.md"), "- o\n- longer than the buffer\n")
