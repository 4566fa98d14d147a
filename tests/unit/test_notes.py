"""Parsing a memory file into bullets and notes (SPEC §2)."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from memory_ls.core import notes as notes_module
from memory_ls.core.checks import line_findings, lines_findings, parsed_lines_findings
from memory_ls.core.notes import (
    ParsedFile,
    parse,
    parse_after,
    parse_bullet,
    parse_bullets,
    parse_lines,
    parse_notes,
)
from memory_ls.core.text import BOM, HEADER, HIDDEN_RANGES, split_text
from tests.conftest import store_text


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
        # A key longer than its note (U+0130 lowers to two code points), a form feed, a BOM
        # inside a line, a paragraph separator:
        *["\u0130", "\u0130.", "\x0c", "\ufeff", "\u2029"],
    ]
)
LINES = st.tuples(
    st.sampled_from(["", "- ", "* ", "-  ", "  - ", "\t*\t", "-", "# "]),
    st.lists(LINE_PIECES, max_size=8).map("".join),
).map("".join)


LONG_LINES = st.sampled_from(
    [
        "- " + "y" * 1100,
        "- " + "y" * 500,  # at the limit: no finding
        "- " + "y" * 501,
        "- " + "é" * 260,  # over half the limit in code points, within it in UTF-16
        "- " + "😀" * 250,  # two UTF-16 units each: at the limit
        "- " + "😀" * 251,  # over it
        "- " + "😀" * 200 + "\u200b",
    ]
)


@given(st.lists(LINES | LONG_LINES, max_size=20))
@example(["- ", "- x ", "-  x", "- x  y", "- x\ty", "- \u200bx", "* x", "  - x", "- x", "- -"])
def test_parse_bullets_is_parse_bullet_of_every_line(lines: list[str]) -> None:
    """The editor's cold parse (one loop, helpers inlined) gives the same bullets."""
    assert parse_bullets(lines) == [parse_bullet(line, i) for i, line in enumerate(lines)]


@given(st.lists(LINES | LONG_LINES, max_size=20))
def test_lines_findings_is_line_findings_of_every_bullet(lines: list[str]) -> None:
    """The editor's line findings on open (the common line passed over without a call)."""
    expected = {
        b.line: found
        for b in map(parse_bullet, lines, range(len(lines)))
        if b and (found := line_findings(b))
    }
    assert lines_findings(parse_bullets(lines)) == expected
    odd: list[int] = []
    bullets = parse_bullets(lines, odd)
    assert parsed_lines_findings(lines, bullets, odd) == expected
    assert odd == sorted(set(odd))


def test_no_hidden_character_is_printable() -> None:
    """:func:`lines_findings` passes over a printable note's line without looking for
    hidden characters: true while every character ``hidden-unicode`` reports, and every
    control, is unprintable."""
    hidden = [chr(c) for low, high in HIDDEN_RANGES for c in range(low, high + 1)]
    controls = [chr(c) for c in [*range(0x00, 0x20), *range(0x7F, 0xA0)]]
    assert [c for c in hidden + controls if c.isprintable()] == []


# -- parsing what a write wrote (parse_after) -----------------------------------------

ENDINGS = st.sampled_from(["", "\n", "\r\n", "  \n\n", " \t", "\n\u2028\n", "\r"])


def fresh_parse(content: str) -> object:
    """The parse of ``content`` from scratch (not :func:`parse`'s kept results)."""
    return parse_lines(split_text(content).lines)


WORKED_OUT = st.sets(st.sampled_from(["bullets", "notes", "keys"]))
"""What of the previous parse was read before the write: :func:`parse_after` carries on
only that, and works the rest out when it is first read."""


def previous_parse(content: str, worked_out: set[str]) -> ParsedFile:
    """A parse of ``content`` from scratch, with the ``worked_out`` attributes read."""
    parsed = parse_lines(split_text(content).lines)
    for name in sorted(worked_out):
        getattr(parsed, name)
    return parsed


def assert_same_parse(parsed: ParsedFile, content: str) -> None:
    """``parsed`` is ``content``'s parse: its notes and keys read before its bullets, each
    as a fresh parse works it out."""
    fresh = parse_lines(split_text(content).lines)
    assert parsed.keys == fresh.keys
    assert parsed.notes == fresh.notes
    assert parsed == fresh
    # The keys (worked out from the notes) are the bullets' keys, each to its first note.
    by_bullets: dict[str, str] = {}
    for b in fresh.bullets:
        if b.note:
            by_bullets.setdefault(b.key, b.note)
    assert list(parsed.keys.items()) == list(by_bullets.items())


@given(
    st.booleans(),
    st.lists(LINES, max_size=12),
    ENDINGS,
    st.sampled_from(["\n", "\r\n", "", " ", "\n\n"]),
    st.lists(LINES, max_size=3),
    ENDINGS,
    st.booleans(),
    WORKED_OUT,
)
def test_parse_after_an_append_is_parse(
    bom: bool,
    lines: list[str],
    end: str,
    glue: str,
    more: list[str],
    last: str,
    trim: bool,
    worked_out: set[str],
) -> None:
    """The text a write makes of the previous one (trimmed or whole, then more lines, as
    an add writes it; in any line-ending style), parsed from the previous parse."""
    previous = (BOM if bom else "") + "\n".join(lines) + end
    content = (previous.rstrip() if trim else previous) + glue + "\n".join(more) + last
    after = parse_after(previous_parse(previous, worked_out), previous, content)
    assert_same_parse(after, content)


@given(st.lists(LINES, max_size=10), st.lists(LINES, max_size=10), ENDINGS, ENDINGS, WORKED_OUT)
def test_parse_after_any_other_change_is_parse(
    before: list[str], after: list[str], end: str, other_end: str, worked_out: set[str]
) -> None:
    previous = "\n".join(before) + end
    content = "\n".join(after) + other_end
    parsed = parse_after(previous_parse(previous, worked_out), previous, content)
    assert_same_parse(parsed, content)


@given(
    st.lists(LINES, max_size=8),
    st.lists(
        st.tuples(st.booleans(), st.lists(LINES, max_size=3), ENDINGS, WORKED_OUT), max_size=6
    ),
)
def test_parse_after_a_parse_after_is_parse(
    lines: list[str], writes: list[tuple[bool, list[str], str, set[str]]]
) -> None:
    """Writes in a row, each parsed from the parse of the one before (as the runtime adopts
    them), whatever of each was read in between: each is its text's parse."""
    content = "\n".join(lines)
    parsed = previous_parse(content, set())
    for trim, more, end, worked_out in writes:
        for name in sorted(worked_out):
            getattr(parsed, name)
        new = (content.rstrip() + "\n" if trim else content) + "\n".join(more) + end
        parsed = parse_after(parsed, content, new)
        content = new
        assert_same_parse(parsed, content)


def test_an_add_builds_no_bullets_for_a_store_asked_only_for_its_keys() -> None:
    """An add asks a store for its keys only; neither they nor the parse of what it wrote
    build a bullet per line (~2 MB of a 4,500-note store kept resident, issue 11)."""
    previous = store_text(*(f"note number {i}" for i in range(50)))
    before = parse_lines(split_text(previous).lines)
    assert before.keys["note number 7"] == "note number 7"
    after = parse_after(before, previous, previous + "- The new one.\n")
    assert after.keys["the new one"] == "The new one."
    assert before._bullets is None and after._bullets is None
    assert_same_parse(after, previous + "- The new one.\n")


def test_parse_after_an_add_parses_only_the_new_lines() -> None:
    """The lines an add kept are not parsed again: their bullets are the same objects,
    even with the parser's cache emptied (a parse from scratch would make new ones)."""
    previous = store_text(*(f"note number {i}" for i in range(50)))
    before = parse(previous)
    content = previous.rstrip() + "\n- the new one\n"
    parse_bullet.cache_clear()
    after = parse_after(before, previous, content)
    assert after == fresh_parse(content)
    assert all(a is b for a, b in zip(after.bullets, before.bullets, strict=False))
    assert after.notes[-1] == "the new one" and len(after.notes) == 51


def test_parse_finds_what_parse_after_parsed_by_identity() -> None:
    """The text a write just wrote is found again as that very string (the runtime hands
    it to the next action) for each of the last stores written, without hashing it."""
    olds = [store_text("a", "b"), store_text("x")]
    news = [olds[0] + "- c\n", olds[1] + "- y\n"]
    found = [parse_after(parse(old), old, new) for old, new in zip(olds, news, strict=True)]
    for new, parsed in zip(news, found, strict=True):
        assert parse(new) is parsed
        assert parse(new[:-1] + "\n") == parsed  # an equal text that is another string


def test_parse_after_lets_the_text_it_replaced_go() -> None:
    """A store's older texts are not kept once a write replaced them (a 256 KB store with
    one emoji is a megabyte a text: twenty adds kept four of them, issue 11); the last
    text of each of the other stores written stays."""
    other_old = store_text("x")
    other = other_old + "- y\n"
    parse_after(parse(other_old), other_old, other)
    texts = [store_text("a", "b \U0001f9f9")]
    for i in range(20):
        texts.append(texts[-1] + f"- note {i}\n")
        parse_after(parse(texts[-2]), texts[-2], texts[-1])
    kept = [text for text, _ in notes_module._written]
    assert kept[:2] == [texts[-1], other]
    assert kept[0] is texts[-1] and kept[1] is other
    assert not any(old is text for old in texts[:-1] for text in kept)
    assert parse(texts[-1]) is notes_module._written[0][1]


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
    keys = fast.keys  # worked out before the bullets, from the notes
    assert [b.note for b in slow.bullets if b.note] == fast.notes
    assert fast == slow
    assert keys == {b.key: b.note for b in reversed(slow.bullets) if b.note}


def test_parse_from_many_threads_at_once() -> None:
    """The server parses in its worker threads too: two trimming ``parse``'s kept results
    at the same moment raised ``KeyError`` (switches forced often to make it likely)."""
    import sys
    import threading

    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(2000):
                assert parse(f"- note {k} {i}\n").notes == [f"note {k} {i}"]
        except BaseException as exc:  # any of them fails the test
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
