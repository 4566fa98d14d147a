"""Parsing a memory file into bullets and notes (SPEC §2)."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from memory_ls.core.checks import line_findings, lines_findings
from memory_ls.core.notes import parse, parse_bullet, parse_bullets, parse_lines, parse_notes
from memory_ls.core.text import BOM, HEADER, split_text


@pytest.mark.parametrize(
    ("line", "note"),
    [
        ("- plain", "plain"),
        ("* star", "star"),
        ("- - z", "- z"),  # Pi: the text of `- - z` is `- z`
        ("* * *", "* *"),
        ("\t* tab", "tab"),
        ("    - indented", "indented"),
        (" \t - mixed indent", "mixed indent"),
        ("-\ttab separator", "tab separator"),
        ("-  \t two  spaces ", "two spaces"),
        ("- trailing   \t", "trailing"),
        ("- a\x1bb", "a b"),
        ("- 😀 日本 שלום", "😀 日本 שלום"),
        ("- a\rb", "a b"),  # a lone CR inside a line is a control, not a line break
        ("- a\u2028b", "a b"),
        ("- -", "-"),
        ("- *", "*"),
    ],
)
def test_bullets(line: str, note: str) -> None:
    bullet = parse_bullet(line)
    assert bullet is not None
    assert bullet.note == note
    assert not bullet.blank


@pytest.mark.parametrize(
    "line",
    [
        "- ",  # marker + a single space and nothing else: not a bullet (as in Pi)
        "* ",
        "-",
        "*",
        "",
        "-x",  # no separator
        "*bold*",
        "+ plus",
        "1. ordered",
        "# heading",
        HEADER,
        "text - with dash",
        "\u00a0- nbsp indent",  # indentation is spaces and tabs
        "-\u00a0nbsp separator",  # the separator is a space or a tab
        BOM + "- bom mid-file",
    ],
)
def test_not_bullets(line: str) -> None:
    assert parse_bullet(line) is None


@pytest.mark.parametrize(
    "line", ["-  ", "*  ", "-   ", "- \t", "-\t ", "-\t\t", "  -  ", "- \x1b", "- \x0b", "- \u00a0"]
)
def test_blank_bullets(line: str) -> None:
    bullet = parse_bullet(line)
    assert bullet is not None
    assert bullet.blank
    assert bullet.note == ""
    assert bullet.key == ""


def test_bullet_columns_cover_the_visible_text() -> None:
    bullet = parse_bullet("  -   hello world  ", 7)
    assert bullet is not None
    assert bullet.line == 7
    assert bullet.indent == "  "
    assert bullet.marker == "-"
    assert "  -   hello world  "[bullet.start : bullet.end] == "hello world"


def test_bullet_key() -> None:
    bullet = parse_bullet("- Use PNPM!")
    assert bullet is not None
    assert bullet.key == "use pnpm"


def test_parse_drops_blank_bullets_and_keeps_file_order() -> None:
    content = f"{HEADER}\n\n# Notes\n- first\n-  \n  * second\nprose - not\n- \n- third\n"
    parsed = parse(content)
    assert parsed.notes == ["first", "second", "third"]
    assert [b.line for b in parsed.bullets] == [3, 4, 5, 8]
    assert parsed.bullets[1].blank


def test_parse_splits_on_lf_and_crlf_only() -> None:
    content = "- a\u2028- b\r\n- c\x0b- d\n- e\x85- f\x1c- g\x0c- h\r- i"
    assert parse_notes(content) == ["a - b", "c - d", "e - f - g - h - i"]


def test_parse_ignores_a_leading_bom() -> None:
    assert parse_notes(BOM + "- first\n- second") == ["first", "second"]
    assert parse_notes(BOM + BOM + "- x") == []


def test_parse_crlf() -> None:
    assert parse_notes("- a\r\n- b\r\n") == ["a", "b"]


def test_parse_empty_and_whitespace() -> None:
    assert parse_notes("") == []
    assert parse_notes("\n\n  \n") == []
    assert parse("").lines == [""]


def test_duplicate_notes_are_all_listed() -> None:
    assert parse_notes("- a\n- a\n- A.\n") == ["a", "a", "A."]


LINE_PIECES = st.sampled_from(
    [
        *[" ", "\t", "  ", "note", "Note.", "x!", "?;", "😀", "日本", "\u200b", "\x07", "\x00"],
        *["\x85", "\u2028", "\ud800", "\xa0", "\u3000", "-", "*", "+", "#", "\r", "\x1f", "\u200d"],
    ]
)
LINES = st.tuples(
    st.sampled_from(["", "- ", "* ", "-  ", "  - ", "\t*\t", "-", "# "]),
    st.lists(LINE_PIECES, max_size=8).map("".join),
).map("".join)


@given(st.lists(LINES, max_size=20))
def test_parse_bullets_is_parse_bullet_of_every_line(lines: list[str]) -> None:
    """The editor's cold parse (one loop, helpers inlined) gives the same bullets."""
    assert parse_bullets(lines) == [parse_bullet(line, i) for i, line in enumerate(lines)]


@given(st.lists(LINES | st.just("- " + "y" * 1100), max_size=20))
def test_lines_findings_is_line_findings_of_every_bullet(lines: list[str]) -> None:
    """The editor's line findings on open (the common line passed over without a call)."""
    expected = {
        b.line: found
        for b in map(parse_bullet, lines, range(len(lines)))
        if b and (found := line_findings(b))
    }
    assert lines_findings(parse_bullets(lines)) == expected


@given(st.lists(LINES, max_size=20), st.sampled_from(["\n", "\r\n"]), st.booleans())
@example(["- a  b", "- c"], "\n", False)  # one text not normalised among normalised ones
@example(["- a ", "- b"], "\n", False)
@example(["- a", "-  "], "\n", False)  # a blank bullet: no note
@example(["- a\tb", "- a\u3000b", "- x"], "\r\n", True)
def test_notes_read_first_are_the_notes_of_the_bullets(
    lines: list[str], eol: str, bom: bool
) -> None:
    """``inject`` reads only the notes, found without the bullets: the same notes."""
    content = (BOM if bom else "") + eol.join(lines)
    fast = parse_lines(split_text(content).lines)
    slow = parse_lines(split_text(content).lines)
    assert [b.note for b in slow.bullets if b.note] == fast.notes
    assert fast == slow
    assert fast.keys == {b.key: b.note for b in reversed(slow.bullets) if b.note}
