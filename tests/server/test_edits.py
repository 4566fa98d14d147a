"""Edits in the client's terms (``server/edits.py``): the edit that brings an open buffer
to a command's new text (issue 9 item 9), and core edits in the negotiated encoding.

:func:`replacing_edit` is pure: old lines, new text, line ending and position
encoding in, one LSP text edit out. Applied the way an editor applies it, the
edit must turn the old text into the new one exactly, whatever the two share.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from lsprotocol import types as lsp

from memory_ls.core.actions import apply_add, apply_clear, apply_forget
from memory_ls.core.fixes import Edit
from memory_ls.core.text import BOM, HEADER, split_text
from memory_ls.server.documents import MemoryDocument
from memory_ls.server.edits import position, replacing_edit, text_edits, text_range
from memory_ls.server.positions import UTF8, UTF16, UTF32, from_client

ENCODINGS = st.sampled_from([UTF8, UTF16, UTF32])
EOLS = st.sampled_from(["\n", "\r\n"])
LINE = st.one_of(
    st.sampled_from(["", "- a", "- b", "a", "😀 x", "日本語", "é", "  - 中", "\t", HEADER]),
    st.text(st.characters(blacklist_characters="\r\n"), max_size=5),
)
LINES = st.lists(LINE, max_size=5)


def apply(old: str, eol: str, edit: lsp.TextEdit | None, encoding: str) -> str:
    """Apply ``edit`` to ``old`` as an editor does (positions in ``encoding`` units)."""
    if edit is None:
        return old
    lines = old.split(eol)

    def offset(pos: lsp.Position) -> int:
        assert 0 <= pos.line < len(lines), "the edit points past the text"
        line = lines[pos.line]
        col = from_client(line, pos.character, encoding)
        assert pos.character == 0 or col > 0, "the column is not in the line"
        return sum(len(x) + len(eol) for x in lines[: pos.line]) + col

    start, end = offset(edit.range.start), offset(edit.range.end)
    assert start <= end
    return old[:start] + edit.new_text + old[end:]


def check(old: str, new: str, eol: str, encoding: str) -> lsp.TextEdit | None:
    edit = replacing_edit(split_text(old).lines, new, eol, encoding)
    assert apply(old, eol, edit, encoding) == new.removeprefix(BOM)
    return edit


@settings(max_examples=400, deadline=None)
@given(
    first=LINES,
    old_middle=LINES,
    new_middle=LINES,
    last=LINES,
    eol=EOLS,
    encoding=ENCODINGS,
    bom=st.booleans(),
)
@example(  # the issue: clear leaves "HEADER\n" and the buffer kept a blank line
    first=[HEADER, ""], old_middle=["- one", "- two", ""], new_middle=[], last=[],
    eol="\n", encoding=UTF16, bom=False,
)  # fmt: skip
@example(first=[], old_middle=["a"], new_middle=[], last=[], eol="\r\n", encoding=UTF8, bom=False)
@example(first=[], old_middle=[], new_middle=["a", ""], last=[], eol="\n", encoding=UTF8, bom=True)
def test_the_edit_turns_the_old_text_into_the_new(
    first: list[str],
    old_middle: list[str],
    new_middle: list[str],
    last: list[str],
    eol: str,
    encoding: str,
    bom: bool,
) -> None:
    """Shared beginnings and ends (prefixes, suffixes, empty texts), LF and CRLF."""
    old = eol.join(first + old_middle + last)
    new = eol.join(first + new_middle + last)
    check(old, (BOM if bom else "") + new, eol, encoding)


@settings(max_examples=200, deadline=None)
@given(old=LINES, new=LINES, eol=EOLS, encoding=ENCODINGS)
def test_any_two_texts(old: list[str], new: list[str], eol: str, encoding: str) -> None:
    check(eol.join(old), eol.join(new), eol, encoding)


def test_the_same_text_needs_no_edit() -> None:
    assert replacing_edit(["a", ""], "a\n", "\n", UTF16) is None
    assert replacing_edit([""], "", "\n", UTF16) is None


def test_clear_drops_the_trailing_lines() -> None:
    """The bug: the new text is a prefix of the old one, so no line is shared at the end."""
    old = f"{HEADER}\n\n- one\n- two\n"
    new = apply_clear(old).content
    assert new == f"{HEADER}\n"
    edit = check(old, new, "\n", UTF16)
    assert edit is not None and edit.new_text == ""
    assert edit.range.start == lsp.Position(line=1, character=0)


def test_add_inserts_one_line_and_forget_removes_one() -> None:
    old = f"{HEADER}\r\n\r\n- 😀 one\r\n- two\r\n"
    added = apply_add(old, "three").content
    edit = check(old, added, "\r\n", UTF16)
    assert edit is not None and edit.new_text == "- three\r\n"
    assert edit.range.start == edit.range.end == lsp.Position(line=4, character=0)
    forgot = apply_forget(old, "😀 one", "project").content
    edit = check(old, forgot, "\r\n", UTF16)
    assert edit is not None and edit.new_text == ""
    assert (edit.range.start.line, edit.range.end.line) == (2, 3)


# -- core edits as LSP edits ---------------------------------------------------------------


DOC = MemoryDocument("file:///p/.pi/memory.md", Path("/p/.pi/memory.md"), "- 😀 a\n- b\n", 1)


@pytest.mark.parametrize(("encoding", "column"), [(UTF8, 7), (UTF16, 5), (UTF32, 4)])
def test_core_edits_count_columns_in_the_negotiated_encoding(encoding: str, column: int) -> None:
    """``a`` is the fifth character of ``- 😀 a``: after a 4-byte, 2-unit emoji."""
    [edit] = text_edits(DOC, [Edit(0, 4, 0, 5, "x")], encoding)
    assert edit.range == lsp.Range(
        start=lsp.Position(line=0, character=column),
        end=lsp.Position(line=0, character=column + 1),
    )
    assert edit.new_text == "x"


def test_an_edit_across_lines_and_past_the_last_line() -> None:
    [edit] = text_edits(DOC, [Edit(0, 5, 1, 3, "")], UTF16)
    assert edit.range.start == lsp.Position(line=0, character=6)
    assert edit.range.end == lsp.Position(line=1, character=3)
    assert position(DOC, 9, 2, UTF16) == lsp.Position(line=9, character=2)
    assert text_range(DOC, 1, 0, 1, 3, UTF8) == lsp.Range(
        start=lsp.Position(line=1, character=0), end=lsp.Position(line=1, character=3)
    )


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_columns_round_trip_over_a_lone_surrogate(encoding: str) -> None:
    """A client may send "\\ud800" in JSON; from_client must undo to_client on it too."""
    from memory_ls.server.positions import from_client, to_client

    line = "a\ud800é😀b"
    for col in range(len(line) + 1):
        assert from_client(line, to_client(line, col, encoding), encoding) == col


def test_ranges_read_from_a_client_are_checked_not_coerced() -> None:
    """``memory.reveal``'s ``range`` (any JSON a caller sends) is read by hand, not by a
    converter: only integers in LSP's uinteger range are positions."""
    from memory_ls.server.edits import range_from_json, range_json

    good = {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 7}}
    read = range_from_json(good)
    assert read == lsp.Range(lsp.Position(2, 0), lsp.Position(2, 7))
    assert read is not None and range_json(read) == good
    end = good["end"]
    for bad in (
        None,
        [],
        "1:2",
        {"start": {"line": 2, "character": 0}},
        {"start": 1, "end": end},
        {"start": {"line": "2", "character": 0}, "end": end},
        {"start": {"line": 2.0, "character": 0}, "end": end},
        {"start": {"line": True, "character": 0}, "end": end},
        {"start": {"line": -1, "character": 0}, "end": end},
        {"start": {"line": 2**31, "character": 0}, "end": end},
        {"start": {"line": 2}, "end": end},
    ):
        assert range_from_json(bad) is None, bad
