"""Text rules (SPEC §2): normalisation, the near-duplicate key, lengths, line splitting."""

from __future__ import annotations

import os

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memory_ls.core import text as text_module
from memory_ls.core.text import (
    BOM,
    HEADER,
    MAX_NOTE_UTF16,
    MAX_STORE_BYTES,
    decode_for_display,
    first_invalid_utf8,
    has_controls,
    hidden_characters,
    is_utf8,
    near_duplicate_key,
    normalise,
    remove_hidden,
    split_text,
    utf8_length,
    utf16_length,
    without_lone_surrogates,
)


def test_constants_match_spec() -> None:
    assert HEADER == (
        "<!-- Pi memory: one note per bullet; written by the memory tool and /memory -->"
    )
    assert MAX_NOTE_UTF16 == 500
    assert MAX_STORE_BYTES == 262_144


# -- normalisation -------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("plain", "plain"),
        ("  padded  ", "padded"),
        ("a   b", "a b"),
        ("a\tb", "a b"),
        ("a\x1bb", "a b"),  # ESC
        ("a\rb", "a b"),
        ("a\nb", "a b"),
        ("a\x00b", "a b"),
        ("a\x7fb", "a b"),  # DEL
        ("\x1b[31mred\x1b[0m", "[31mred [0m"),
        ("a\u00a0b", "a b"),  # NBSP is whitespace
        ("a\u2028\u2029b", "a b"),
        ("a\u3000b", "a b"),  # ideographic space
        ("a \t\x0b\x0c\r\n b", "a b"),
        ("", ""),
        ("   \t\r\n", ""),
        ("\x00\x01\x1f", ""),
        ("日本語 テキスト", "日本語 テキスト"),
        ("שלום עולם", "שלום עולם"),
        ("😀  😀", "😀 😀"),
    ],
)
def test_normalise(raw: str, expected: str) -> None:
    assert normalise(raw) == expected


@pytest.mark.parametrize("code", range(0x80, 0xA0))
def test_c1_controls_become_spaces(code: int) -> None:
    assert normalise(f"a{chr(code)}b") == "a b"
    assert has_controls(f"a{chr(code)}b")


@pytest.mark.parametrize("code", [*range(0x00, 0x20), 0x7F])
def test_c0_controls_and_del_become_spaces(code: int) -> None:
    assert normalise(f"a{chr(code)}b") == "a b"
    assert has_controls(chr(code))


def test_non_controls_are_not_controls() -> None:
    assert not has_controls("plain text é 😀 \u00a0 \u200b")
    assert normalise("\u00a0") == ""  # whitespace, not a control, but still trimmed


def test_zero_width_characters_are_not_whitespace() -> None:
    # U+200B is not str.isspace(): normalisation keeps it (the linter reports it).
    assert normalise("a\u200bb") == "a\u200bb"
    assert normalise("\u200b") == "\u200b"


def test_normalise_is_idempotent_on_examples() -> None:
    for raw in ["a\x85b", " x\u2028y ", "\tq\x1c\x1dr\x1e\x1f"]:
        once = normalise(raw)
        assert normalise(once) == once


def _normalised_by_the_rule(text: str) -> str:
    """SPEC §2's normalisation written out: surrogates to U+FFFD, controls to spaces,
    whitespace runs to one space, trimmed."""
    text = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    text = "".join(" " if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 else c for c in text)
    return " ".join(text.split())


@given(
    st.one_of(
        st.text(st.sampled_from("ab é😀")),  # printable: spaces decide
        st.text(st.sampled_from("ab é😀\t\n\x00\x85\u00a0\u200b\u2028\ud800")),
    )
)
@example("a  b")
@example(" a")
@example("a ")
@settings(max_examples=300)
def test_normalise_is_the_rule_and_a_note_is_its_own_normal_form(text: str) -> None:
    # A text that is a note already comes back as itself, not as an equal copy (so a
    # store's parsed notes share their bullets' strings).
    assert normalise(text) == _normalised_by_the_rule(text)
    if _normalised_by_the_rule(text) == text:
        assert normalise(text) is text


def test_lone_surrogate_is_made_writable() -> None:
    note = normalise("a\ud800b")
    note.encode("utf-8")  # must not raise
    assert note == "a\ufffdb"


def test_lone_surrogates_in_decoded_json_are_read_as_replacement_characters() -> None:
    message = {"k\udc00": ["a\ud800", {"t": "\ud800\U0001f680"}, 5, None], "ok": "caf\u00e9"}
    assert without_lone_surrogates(message) == {
        "k\ufffd": ["a\ufffd", {"t": "\ufffd\U0001f680"}, 5, None],
        "ok": "caf\u00e9",
    }
    plain = "x" * 1000
    assert without_lone_surrogates(plain) is plain  # nothing to replace: no copy


# -- near-duplicate key --------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Use pnpm", "use PNPM"),
        ("Use pnpm", "use pnpm."),
        ("Use pnpm", "use pnpm!!!"),
        ("Use pnpm", "use pnpm?!.,;:"),
        ("Use pnpm", "  use   pnpm  "),
        ("Use pnpm", "use\tpnpm ."),
        ("tests need DB", "Tests need DB:"),
    ],
)
def test_near_duplicates_share_a_key(a: str, b: str) -> None:
    assert near_duplicate_key(a) == near_duplicate_key(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("use pnpm not npm", "not npm use pnpm"),  # word order kept
        ("use pnpm, not npm", "use pnpm not npm"),  # inner punctuation kept
        ("run tests", "running tests"),  # no stemming
        ("use pnpm", "use pnpm)"),  # only .!?,;: are folded
        ("use pnpm", ".use pnpm"),  # only trailing punctuation
        ("use pnpm", "use pnpm…"),  # the ellipsis character is not "."
    ],
)
def test_different_notes_have_different_keys(a: str, b: str) -> None:
    assert near_duplicate_key(a) != near_duplicate_key(b)


def test_key_removes_the_trailing_run_then_trims() -> None:
    assert near_duplicate_key("Done . . .") == "done . ."
    assert near_duplicate_key("Done ...") == "done"
    assert near_duplicate_key("...") == ""


# -- lengths -------------------------------------------------------------------


def test_utf16_length_counts_astral_characters_twice() -> None:
    assert utf16_length("") == 0
    assert utf16_length("abc") == 3
    assert utf16_length("日本") == 2
    assert utf16_length("😀") == 2
    assert utf16_length("😀" * 250) == 500
    assert utf16_length("a😀b") == 4


def test_utf8_length() -> None:
    assert utf8_length("abc") == 3
    assert utf8_length("é") == 2
    assert utf8_length("日") == 3
    assert utf8_length("😀") == 4


def test_utf8_length_counts_a_lone_surrogate_as_replacement_character() -> None:
    assert utf8_length("\ud800") == utf8_length("\ufffd") == 3


ANY_CHARACTERS = st.characters(exclude_categories=[]) | st.sampled_from(["\udcff", "😀", "é"])


@given(st.text(ANY_CHARACTERS))
def test_surrogates_are_found_wherever_they_are(text: str) -> None:
    """Both look for a lone surrogate by encoding (UTF-8 refuses it and nothing else)."""
    replaced = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    assert without_lone_surrogates(text) == replaced
    assert utf8_length(text) == len(replaced.encode("utf-8"))


# -- line splitting ------------------------------------------------------------


def test_split_on_lf_and_crlf_only() -> None:
    others = "a\u2028b\x0bc\x0cd\x1ce\x1df\x1eg\x85h\u2029i\rj"
    split = split_text(f"{others}\nsecond\r\nthird")
    assert split.lines == [others, "second", "third"]


def test_split_keeps_a_trailing_empty_line() -> None:
    assert split_text("a\n").lines == ["a", ""]
    assert split_text("").lines == [""]


@pytest.mark.parametrize(
    ("content", "eol"),
    [
        ("a\nb\n", "\n"),
        ("a\r\nb\r\n", "\r\n"),
        ("a\r\nb\nc\n", "\r\n"),
        ("a\nb\r\nc\r\n", "\n"),
        ("no ending", "\n"),
        ("", "\n"),
        ("\r\n", "\r\n"),
        ("\n", "\n"),
        (BOM + "a\r\nb", "\r\n"),
    ],
)
def test_eol_is_the_first_line_ending(content: str, eol: str) -> None:
    assert split_text(content).eol == eol


def test_bom_is_set_aside_and_restored() -> None:
    split = split_text(BOM + "- a\r\n- b\r\n")
    assert split.bom
    assert split.lines == ["- a", "- b", ""]
    assert split.render() == BOM + "- a\r\n- b\r\n"
    assert split.render(["x", ""]) == BOM + "x\r\n"


def test_only_a_leading_bom_is_set_aside() -> None:
    split = split_text("a\n" + BOM + "b")
    assert not split.bom
    assert split.lines == ["a", BOM + "b"]


@pytest.mark.parametrize(
    "content",
    ["", "a", "a\n", "a\r\nb\r\n", BOM + "x\ny", "\n\n\n", "a\u2028b\nc\x85"],
)
def test_render_round_trips_single_style_text(content: str) -> None:
    assert split_text(content).render() == content


def test_render_converts_a_mixed_file_to_its_first_style() -> None:
    assert split_text("a\r\nb\nc").render() == "a\r\nb\r\nc"
    assert split_text("a\nb\r\nc").render() == "a\nb\nc"


# -- hidden characters and UTF-8 ----------------------------------------------


def test_hidden_characters() -> None:
    text = "a\u200bb\u202ec\U000e0041d\u2066e"
    assert hidden_characters(text) == [1, 3, 5, 7]
    assert remove_hidden(text) == "abcde"
    assert hidden_characters("plain é 😀 日本") == []


def test_every_unseen_character_the_unicode_database_knows_is_escaped() -> None:
    """:data:`UNSEEN_RANGES` is a fixed list (the clients hold copies of it), so it is
    checked against this Python's Unicode database: every control, format character and
    line or paragraph separator is in it, and the ``hidden-unicode`` set is part of it."""
    import unicodedata

    from memory_ls.core.text import HIDDEN_RANGES, UNSEEN_RANGES, escape_unseen

    def within(code: int, ranges: tuple[tuple[int, int], ...]) -> bool:
        return any(lo <= code <= hi for lo, hi in ranges)

    for code in range(0x110000):
        char = chr(code)
        if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
            assert within(code, UNSEEN_RANGES), hex(code)
        if within(code, HIDDEN_RANGES):
            assert within(code, UNSEEN_RANGES) and hidden_characters(char) == [0], hex(code)
        unseen = within(code, (*UNSEEN_RANGES, (0xD800, 0xDFFF)))
        assert (escape_unseen(char) != char) == unseen
        # escape_unseen, hidden_characters and remove_hidden return printable text as it
        # is, without their patterns: an unseen character must never be printable.
        assert not (unseen and char.isprintable()), hex(code)
    assert escape_unseen("日本 😀 ok") == "日本 😀 ok"  # printable: as it is
    assert escape_unseen("日本\u202e😀") == "日本\\u202e😀"
    assert escape_unseen("a\n\u202eb\udce9\U000e0041\xad") == (
        "a\\n\\u202eb\\udce9\\U000e0041\\xad"
    )


def test_first_invalid_utf8() -> None:
    assert first_invalid_utf8(b"") is None
    assert first_invalid_utf8("ok 😀".encode()) is None
    assert first_invalid_utf8(b"abc\xffdef") == 3
    assert first_invalid_utf8(b"ab\xe6\x97") == 2  # truncated sequence
    assert first_invalid_utf8(b"\xed\xa0\x80") == 0  # encoded surrogate


def _reference_is_utf8(data: bytes, complete: bool) -> bool:
    """The rule, decoded whole: what ``is_utf8`` must say whatever its pieces."""
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError as exc:
        return not complete and exc.end == len(data) and exc.reason == "unexpected end of data"


_UTF8_PIECES = st.lists(
    st.one_of(
        st.text(max_size=4).map(lambda t: t.encode("utf-8", "surrogatepass")),
        st.binary(max_size=3),
        st.sampled_from([b"\xe6\x97", b"\xf0\x9f", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\xc0\xaf"]),
    ),
    max_size=12,
).map(b"".join)


@given(_UTF8_PIECES, st.booleans(), st.integers(min_value=1, max_value=9))
@example(b"ab\xe6\x97", False, 3)  # a character cut off at the very end
@example(b"ab\xe6\x97\xa5x", True, 3)  # a character across the cut between pieces
@settings(max_examples=600)
def test_is_utf8_in_pieces_is_the_whole_decode(data: bytes, complete: bool, piece: int) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(text_module, "UTF8_PIECE", piece)
        assert is_utf8(data, complete) == _reference_is_utf8(data, complete)
        assert (first_invalid_utf8(data) is None) == _reference_is_utf8(data, True)


@given(st.text(ANY_CHARACTERS, max_size=40), st.integers(min_value=1, max_value=9))
@settings(max_examples=300)
def test_utf8_length_in_pieces_is_the_whole_length(text: str, piece: int) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(text_module, "UTF8_PIECE", piece)
        assert utf8_length(text) == len(without_lone_surrogates(text).encode("utf-8"))


def test_decode_for_display_replaces_bad_bytes() -> None:
    assert decode_for_display(b"a\xffb") == "a\ufffdb"


def test_render_protects_a_first_line_starting_with_u_feff() -> None:
    split = split_text("x\n\ufeffy")
    assert not split.bom
    assert split.render(split.lines[1:]) == BOM + "\ufeffy"
    assert split_text(split.render(split.lines[1:])).lines == ["\ufeffy"]


def test_without_lone_surrogates_writes_a_non_utf8_path_byte_as_u_fffd() -> None:
    path = os.fsdecode(b"/tmp/caf\xe9/.pi/memory.md")  # "\udce9", as Python reads the byte
    assert without_lone_surrogates(path) == "/tmp/caf\ufffd/.pi/memory.md"
    assert without_lone_surrogates({"project": path, "n": [path, 1]}) == {
        "project": "/tmp/caf\ufffd/.pi/memory.md",
        "n": ["/tmp/caf\ufffd/.pi/memory.md", 1],
    }
    assert without_lone_surrogates("caf\u00e9 \U0001f600") == "caf\u00e9 \U0001f600"
