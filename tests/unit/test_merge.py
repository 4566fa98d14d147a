"""The note-wise three-way merge (SPEC §14), ``memory_ls/core/merge.py``.

Examples for each rule, then properties over generated histories: a base store,
and two sides that each remove some of its notes, add some of their own (some
near-duplicates of each other's) and maybe change the prose.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_ls.core.merge import BOTH_CHANGED, OVER_CAP, merge_notes
from memory_ls.core.notes import parse, parse_notes
from memory_ls.core.text import HEADER, MAX_STORE_BYTES, near_duplicate_key
from tests.conftest import store_text


def clean(base: str, current: str, other: str) -> str:
    result = merge_notes(base, current, other)
    assert result.clean, result.reason
    assert result.text is not None
    return result.text


def test_adds_on_both_sides_keep_current_order_then_others() -> None:
    base = store_text("a", "b")
    current = store_text("a", "b", "c1", "c2")
    other = store_text("a", "b", "o1", "o2")
    assert clean(base, current, other) == store_text("a", "b", "c1", "c2", "o1", "o2")


def test_a_removal_on_either_side_is_removed() -> None:
    base = store_text("a", "b", "c")
    assert clean(base, store_text("a", "c", "new"), store_text("a", "b")) == store_text("a", "new")


def test_an_update_is_a_removal_plus_an_addition() -> None:
    base = store_text("use npm", "b")
    current = store_text("use pnpm", "b")
    other = store_text("use npm", "b", "c")
    assert clean(base, current, other) == store_text("use pnpm", "b", "c")


def test_the_same_note_added_with_different_case_collapses_to_currents() -> None:
    base = store_text("a")
    current = store_text("a", "Use pnpm")
    other = store_text("a", "use pnpm.", "z")
    assert clean(base, current, other) == store_text("a", "Use pnpm", "z")


def test_new_notes_go_after_currents_last_note_and_prose_keeps_its_place() -> None:
    base = f"{HEADER}\n\n# Tools\n\n- a\n\n# Later\n\nsome prose\n"
    current = f"{HEADER}\n\n# Tools\n\n- a\n- b\n\n# Later\n\nsome prose\n"
    other = f"{HEADER}\n\n# Tools\n\n- a\n\n# Later\n\nsome prose\n- z\n"
    assert clean(base, current, other) == (
        f"{HEADER}\n\n# Tools\n\n- a\n- b\n- z\n\n# Later\n\nsome prose\n"
    )


def test_prose_changed_on_one_side_only_takes_that_sides_prose() -> None:
    base = f"{HEADER}\n\n- a\n"
    current = f"{HEADER}\n\n- a\n- b\n"
    other = f"{HEADER}\n\nRead this first.\n\n- a\n"
    assert clean(base, current, other) == f"{HEADER}\n\nRead this first.\n\n- a\n- b\n"
    assert clean(base, other, current) == f"{HEADER}\n\nRead this first.\n\n- a\n- b\n"


def test_prose_changed_differently_on_both_sides_is_not_clean() -> None:
    base = f"{HEADER}\n\nintro\n\n- a\n"
    current = f"{HEADER}\n\nintro, said one way\n\n- a\n"
    other = f"{HEADER}\n\nintro, said another\n\n- a\n"
    result = merge_notes(base, current, other)
    assert not result.clean and result.text is None and result.reason == BOTH_CHANGED
    # The same change on both sides is no conflict.
    assert clean(base, current, current) == current


def test_crlf_and_bom_are_kept_as_current_has_them() -> None:
    base = store_text("a")
    current = ("\ufeff" + store_text("a", "b")).replace("\n", "\r\n")
    other = store_text("a", "c")
    assert clean(base, current, other) == ("\ufeff" + store_text("a", "b", "c")).replace(
        "\n", "\r\n"
    )


def test_only_other_changed_still_keeps_currents_line_endings_and_bom() -> None:
    # CURRENT is BASE: the result is OTHER's notes, but CURRENT's style (it was OTHER's bytes).
    crlf = ("\ufeff" + store_text("a")).replace("\n", "\r\n")
    assert clean(crlf, crlf, store_text("a", "b")) == ("\ufeff" + store_text("a", "b")).replace(
        "\n", "\r\n"
    )
    lf = store_text("a")
    assert clean(lf, lf, store_text("a", "b").replace("\n", "\r\n")) == store_text("a", "b")


def test_a_merge_that_empties_the_store_leaves_an_empty_file_and_one_that_fills_it_a_header() -> (
    None
):
    base = store_text("a")
    assert clean(base, store_text("a", "b"), "") == store_text("b")
    assert clean(base, "", store_text("a")) == ""
    assert clean("", "", store_text("x")) == store_text("x")
    assert clean(store_text("a"), store_text("a", "b"), f"{HEADER}\n") == store_text("b")


def test_both_sides_creating_the_store_merge_cleanly() -> None:
    assert clean("", store_text("a"), store_text("b")) == store_text("a", "b")


def test_a_result_over_the_cap_is_not_clean() -> None:
    big = ["n" * 400 + str(i) for i in range(340)]  # ~137 KB per side
    base = store_text()
    current = store_text(*big)
    other = store_text(*(n.replace("n", "o") for n in big))
    result = merge_notes(base, current, other)
    assert not result.clean and result.reason == OVER_CAP
    assert len(current.encode()) <= MAX_STORE_BYTES


# -- properties ---------------------------------------------------------------------

WORDS = st.sampled_from(
    ["use pnpm", "Use pnpm.", "USE PNPM!", "tests need DATABASE_URL", "a", "A", "b", "c", "d"]
)
NOTES = st.lists(
    st.one_of(WORDS, st.text("xyzXYZ ", min_size=1, max_size=5).map(str.strip).filter(bool)),
    max_size=8,
)
PROSE = st.sampled_from(["", "# Notes", "Some prose.", "<!-- a comment -->"])


@st.composite
def side(draw: st.DrawFn, base_notes: list[str], base_prose: str) -> str:
    kept = [n for n in base_notes if draw(st.booleans())]
    added = draw(NOTES)
    order = draw(st.permutations(kept)) if draw(st.booleans()) else kept
    prose = draw(st.sampled_from([base_prose, base_prose, draw(PROSE)]))
    return render(list(order) + added, prose)


def render(notes: list[str], prose: str) -> str:
    head = f"{HEADER}\n\n" + (f"{prose}\n\n" if prose else "")
    return head + "".join(f"- {n}\n" for n in notes)


@st.composite
def histories(draw: st.DrawFn) -> tuple[str, str, str]:
    base_notes = draw(NOTES)
    base_prose = draw(PROSE)
    base = render(base_notes, base_prose)
    return base, draw(side(base_notes, base_prose)), draw(side(base_notes, base_prose))


PROPS = settings(max_examples=150, deadline=None)


@PROPS
@given(histories())
def test_no_added_note_is_lost_and_no_removed_note_survives(h: tuple[str, str, str]) -> None:
    base, current, other = h
    result = merge_notes(base, current, other)
    if not result.clean:
        assert result.reason == BOTH_CHANGED
        return
    assert result.text is not None
    merged = parse(result.text)
    base_notes = set(parse_notes(base))
    for side_text in (current, other):
        side_notes = set(parse_notes(side_text))
        for note in side_notes - base_notes:  # added on this side: kept, or its key is
            assert near_duplicate_key(note) in merged.keys, (note, result.text)
        for note in base_notes - side_notes:  # removed on this side: gone
            assert note not in merged.notes, (note, result.text)
    # Nothing appears from nowhere.
    assert set(merged.notes) <= set(parse_notes(current)) | set(parse_notes(other))


@PROPS
@given(histories())
def test_merging_is_idempotent(h: tuple[str, str, str]) -> None:
    base, current, other = h
    result = merge_notes(base, current, other)
    if result.clean:
        assert result.text is not None
        assert clean(base, result.text, other) == result.text
        assert clean(base, result.text, result.text) == result.text


@PROPS
@given(histories())
def test_merging_with_an_unchanged_side_returns_the_other_side(h: tuple[str, str, str]) -> None:
    base, current, other = h
    assert clean(base, base, other) == other
    assert clean(base, current, base) == current


@PROPS
@given(histories())
def test_a_clean_merge_keeps_the_format_rules(h: tuple[str, str, str]) -> None:
    base, current, other = h
    crlf = current.replace("\n", "\r\n")
    result = merge_notes(base, crlf, other)
    if not result.clean:
        return
    assert result.text is not None
    text = result.text
    if text and text not in (crlf, other):  # a merge that composed a new file
        assert text.startswith(HEADER)
        assert text.endswith("\r\n")
        assert "\n" not in text.replace("\r\n", "")
    # The same note added on both sides in two wordings is kept once.
    merged = set(parse(text).notes)
    base_notes = set(parse_notes(base))
    current_notes, other_notes = set(parse_notes(crlf)), set(parse_notes(other))
    added_current = current_notes - base_notes - other_notes
    added_other = other_notes - base_notes - current_notes
    for mine in added_current:
        for theirs in added_other:
            if mine != theirs and near_duplicate_key(mine) == near_duplicate_key(theirs):
                assert not {mine, theirs} <= merged, (mine, theirs, text)


HOSTILE_LINES = st.sampled_from(
    [
        HEADER, "", " ", "# Heading", "prose", "- ", "-  ", "*\t", "- a", "* a", "  - A.",
        "- a\r", "\ufeff- bom", "- \x1b[31mred", "- tab\there", "- 😀 emoji", "- 日本語",
        "- \u202ehidden", "- x\u2028y", "-\ta!", "- b", "- B", "<!-- c -->", "\r",
    ]
)  # fmt: skip
HOSTILE_FILE = st.tuples(
    st.lists(HOSTILE_LINES, max_size=10), st.sampled_from(["\n", "\r\n"]), st.booleans()
).map(lambda t: ("\ufeff" if t[2] else "") + t[1].join(t[0]))


@PROPS
@given(HOSTILE_FILE, HOSTILE_FILE, HOSTILE_FILE)
def test_hostile_files_merge_without_losing_or_reviving_a_note(
    base: str, current: str, other: str
) -> None:
    result = merge_notes(base, current, other)
    if not result.clean:
        assert result.reason == BOTH_CHANGED and result.text is None
        return
    assert result.text is not None
    merged = parse(result.text)
    base_notes = set(parse_notes(base))
    for side_text in (current, other):
        side_notes = set(parse_notes(side_text))
        for note in side_notes - base_notes:
            assert near_duplicate_key(note) in merged.keys, (note, result.text)
        for note in base_notes - side_notes:
            assert note not in merged.notes, (note, result.text)
    assert clean(base, result.text, other) == result.text


def test_a_last_line_ending_in_cr_does_not_become_a_crlf_ending() -> None:
    current = f"{HEADER}\n- a\r"
    merged = clean("", current, "\ufeff- bom")
    assert merged == f"{HEADER}\n- a\n- bom"
    assert clean("", merged, "\ufeff- bom") == merged


BOM = "\ufeff"
CRLF_A = store_text("a").replace("\n", "\r\n")


@pytest.mark.parametrize(
    ("current", "other", "merged"),
    [
        # A byte order mark on one side only: CURRENT's (none, or one).
        (store_text("a"), BOM + store_text("a", "b"), store_text("a", "b")),
        (BOM + store_text("a"), store_text("a", "b"), BOM + store_text("a", "b")),
        # OTHER's last line without a line break stays without one, in CURRENT's endings.
        (
            CRLF_A,
            store_text("a", "b").rstrip("\n"),
            store_text("a", "b").replace("\n", "\r\n")[:-2],
        ),
        # Mixed endings in OTHER: CURRENT's everywhere; a CR ending the last line stays a CR.
        (store_text("a"), f"{HEADER}\r\n\n- a\r\n- b\n- c\r", f"{HEADER}\n\n- a\n- b\n- c\r"),
        (CRLF_A, f"{HEADER}\n\r\n- a\n- b\r\n", store_text("a", "b").replace("\n", "\r\n")),
        # CR alone ends no line (SPEC §2): a CR-only OTHER is one line, kept as it is.
        (
            store_text("a"),
            store_text("a", "b").replace("\n", "\r"),
            store_text("a", "b").replace("\n", "\r"),
        ),
        # A CR-only CURRENT has no line ending: OTHER's lines get LF, the default.
        (store_text("a").replace("\n", "\r"), store_text("a", "b"), store_text("a", "b")),
    ],
    ids=[
        "bom-other",
        "bom-current",
        "no-last-break",
        "mixed-lf",
        "mixed-crlf",
        "cr-other",
        "cr-current",
    ],
)
def test_only_other_changed_in_currents_style_is_a_fixed_point(
    current: str, other: str, merged: str
) -> None:
    assert clean(current, current, other) == merged
    # Merged again (git re-running the driver, or the other side pulling it back): no change.
    assert clean(current, merged, other) == merged
