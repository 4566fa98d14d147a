"""Each action as a pure text transform, and field validation (SPEC §2, §3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_ls.core.actions import (
    ACTION_MESSAGE,
    SCOPE_MESSAGE,
    UNTRUSTED_MESSAGE,
    apply_add,
    apply_clear,
    apply_forget,
    apply_merge,
    apply_update,
    check_action,
    check_scope,
    check_text,
    no_match,
)
from memory_ls.core.notes import parse_notes
from memory_ls.core.text import BOM, HEADER, split_text

NEW_FILE = f"{HEADER}\n\n"

# -- validation messages -------------------------------------------------------


def test_messages_are_exact() -> None:
    assert ACTION_MESSAGE == "action must be one of add, update, forget, list."
    assert SCOPE_MESSAGE == "scope must be one of project, global."
    assert UNTRUSTED_MESSAGE == (
        'Project memory is unavailable for an untrusted project; use scope "global".'
    )
    assert no_match("project", "x") == "No project memory note matches: x"
    assert no_match("global", "a b") == "No global memory note matches: a b"


@pytest.mark.parametrize("value", [None, 1, 1.5, True, ["a"], {"a": 1}, b"bytes"])
def test_text_must_be_a_string(value: object) -> None:
    assert check_text(value) == ("", "text is required.")
    assert check_text(value, "to")[1] == "to is required."
    assert check_text(value, "other")[1] == "other is required."


@pytest.mark.parametrize("value", ["", " ", "\t\r\n", "\x00\x1b", "\u00a0\u2028", "\x85"])
def test_text_must_not_be_blank_after_normalisation(value: str) -> None:
    assert check_text(value)[1] == "text is required."
    assert check_text(value, "to")[1] == "to is required."


def test_text_is_normalised() -> None:
    assert check_text("  a\tb\x1bc  ") == ("a b c", None)


def test_length_limit_counts_utf16_code_units() -> None:
    assert check_text("😀" * 250) == ("😀" * 250, None)
    assert check_text("😀" * 251)[1] == "text is longer than 500 characters."
    assert check_text("😀" * 251, "to")[1] == "to is longer than 500 characters."
    assert check_text("a" * 500)[1] is None
    assert check_text("a" * 501)[1] == "text is longer than 500 characters."
    assert check_text("日" * 500)[1] is None  # BMP: one unit each


def test_length_is_counted_after_normalisation() -> None:
    padded = "   " + "a" * 250 + " \t\n " * 100 + "b" * 249 + "   "
    assert check_text(padded) == ("a" * 250 + " " + "b" * 249, None)


def test_check_scope() -> None:
    assert check_scope(None) == ("project", None)
    assert check_scope("project") == ("project", None)
    assert check_scope("global") == ("global", None)
    for bad in ["", "Project", "GLOBAL", "both", 1, ["project"]]:
        assert check_scope(bad)[1] == SCOPE_MESSAGE


def test_check_action() -> None:
    for good in ["add", "update", "forget", "list"]:
        assert check_action(good) is None
    for bad in [None, "", "ADD", "delete", 3]:
        assert check_action(bad) == ACTION_MESSAGE


# -- add -----------------------------------------------------------------------


@pytest.mark.parametrize("content", ["", "\n", "  \n\t\n", "\r\n\r\n", " "])
def test_add_to_empty_or_whitespace_file_writes_the_header(content: str) -> None:
    change = apply_add(content, "first")
    assert change.changed
    eol = "\r\n" if content.startswith("\r\n") else "\n"
    assert change.content == f"{HEADER}{eol}{eol}- first{eol}"


def test_add_appends_after_trimming_trailing_whitespace() -> None:
    assert apply_add("- a\n\n\n  \n", "b").content == "- a\n- b\n"
    assert apply_add("- a", "b").content == "- a\n- b\n"
    assert apply_add("# Notes   \t\n\n", "b").content == "# Notes\n- b\n"
    assert apply_add("prose\u2028\u00a0\n", "b").content == "prose\n- b\n"


def test_add_keeps_everything_before_the_end() -> None:
    content = f"{HEADER}\n\n# Head\n\n- a\nsome prose  \n  * b\n\n"
    assert apply_add(content, "c").content == (
        f"{HEADER}\n\n# Head\n\n- a\nsome prose  \n  * b\n- c\n"
    )


def test_add_keeps_crlf() -> None:
    assert apply_add("- a\r\n", "b").content == "- a\r\n- b\r\n"


def test_add_mixed_file_takes_first_style() -> None:
    assert apply_add("- a\r\n- b\n", "c").content == "- a\r\n- b\r\n- c\r\n"
    assert apply_add("- a\n- b\r\n", "c").content == "- a\n- b\n- c\n"


def test_add_keeps_bom() -> None:
    assert apply_add(BOM + "- a\n", "b").content == BOM + "- a\n- b\n"
    assert apply_add(BOM, "b").content == BOM + NEW_FILE + "- b\n"
    assert apply_add(BOM + "  \n", "b").content == BOM + NEW_FILE + "- b\n"


def _add_by_lines(content: str, note: str) -> str:
    """What an add writes, cut into lines and joined back (the rule for every file)."""
    split = split_text(content)
    body = "\n".join(split.lines).rstrip()
    new_body = f"{body}\n- {note}\n" if body else f"{HEADER}\n\n- {note}\n"
    return split.render(new_body.split("\n"))


TEXT_PIECES = st.sampled_from(
    ["- a", "* b", "prose", " ", "\t", "\n", "\r\n", "\r", BOM, "\u2028", "\xa0", "😀", "-  "]
)


@given(st.lists(TEXT_PIECES, max_size=14).map("".join), st.sampled_from(["new", "a", "😀 x"]))
def test_add_writes_what_the_lines_rule_writes(content: str, note: str) -> None:
    """An LF-only store is appended to without cutting it into lines: same text."""
    change = apply_add(content, note)
    if change.changed:
        assert change.content == _add_by_lines(content, note)
    else:
        assert change.existing is not None and change.content == content


@pytest.mark.parametrize("stored", ["Use pnpm", "use PNPM.", "USE pnpm!?", "  *   use   pnpm  "])
def test_add_near_duplicate_writes_nothing_and_returns_existing(stored: str) -> None:
    line = stored if stored.lstrip().startswith("*") else f"- {stored}"
    content = f"{HEADER}\n\n{line}\n"
    change = apply_add(content, "use pnpm")
    assert not change.changed
    assert change.error is None
    assert change.content == content
    assert change.existing == parse_notes(content)[0]


def test_add_inner_punctuation_and_order_are_not_duplicates() -> None:
    content = "- use pnpm, not npm\n"
    assert apply_add(content, "use pnpm not npm").changed
    assert apply_add(content, "not npm, use pnpm").changed


def test_add_ignores_blank_bullets_for_duplicates() -> None:
    change = apply_add("-  \n- y\n", "x")
    assert change.changed
    assert change.content == "-  \n- y\n- x\n"
    # the file's trailing whitespace goes first, even a blank bullet's (as in Pi)
    assert apply_add("-  \n", "x").content == "-\n- x\n"


# -- update --------------------------------------------------------------------


def test_update_in_place_keeping_indentation_and_marker() -> None:
    content = f"{HEADER}\n\n- a\n  * old note  \nprose\n\t- old note\n- b"
    change = apply_update(content, "old note", "new note", "project")
    assert change.changed
    assert change.content == f"{HEADER}\n\n- a\n  * new note\nprose\n\t- new note\n- b"


def test_update_matches_normalised_text_exactly() -> None:
    content = "- old\x1bnote\n- Old note\n-   old   note\n"
    change = apply_update(content, "old note", "x", "global")
    assert change.content == "- x\n- Old note\n- x\n"


def test_update_no_match_is_an_error() -> None:
    change = apply_update("- a\n", "b", "c", "project")
    assert not change.changed
    assert change.error == "No project memory note matches: b"
    assert change.content == "- a\n"
    # case-sensitive and no near-duplicate folding
    assert apply_update("- a\n", "A", "c", "global").error == "No global memory note matches: A"
    assert apply_update("- a.\n", "a", "c", "project").error is not None


def test_update_to_same_text_is_a_no_op() -> None:
    content = "-\t a  \r\n"
    change = apply_update(content, "a", "a", "project")
    assert not change.changed
    assert change.error is None
    assert change.content == content


def test_update_keeps_crlf_and_bom() -> None:
    change = apply_update(BOM + "# t\r\n- a\r\n", "a", "b", "project")
    assert change.content == BOM + "# t\r\n- b\r\n"


def test_update_does_not_tidy_the_end() -> None:
    assert apply_update("- a\n\n\n", "a", "b", "project").content == "- b\n\n\n"
    assert apply_update("- a", "a", "b", "project").content == "- b"


# -- forget --------------------------------------------------------------------


def test_forget_removes_every_exact_match() -> None:
    content = f"{HEADER}\n\n- a\n- b\n  * a\n- A\n"
    change = apply_forget(content, "a", "project")
    assert change.changed
    assert change.content == f"{HEADER}\n\n- b\n- A\n"


def test_forget_is_case_sensitive_and_exact() -> None:
    for text in ["A", "a.", "a b", "b"]:
        change = apply_forget("- a\n", text, "project")
        assert not change.changed
        assert change.error == f"No project memory note matches: {text}"
        assert change.content == "- a\n"


def test_forget_matches_normalised_stored_text() -> None:
    assert apply_forget("-  a\t\tb  \n", "a b", "global").content == ""


def test_forget_last_note_leaves_an_empty_file() -> None:
    assert apply_forget("- a\n", "a", "project").content == ""
    assert apply_forget("- a", "a", "project").content == ""
    assert apply_forget("- a\n\n\n", "a", "project").content == ""
    assert apply_forget("- a\r\n- a\r\n", "a", "project").content == ""


def test_forget_keeps_the_header_when_it_was_there() -> None:
    assert apply_forget(f"{HEADER}\n\n- a\n", "a", "project").content == f"{HEADER}\n"


def test_forget_collapses_trailing_newlines_to_one() -> None:
    assert apply_forget("- a\n- b\n\n\n\n", "b", "project").content == "- a\n"
    assert apply_forget("- b\n- a", "b", "project").content == "- a\n"
    assert apply_forget("- a\n\n\n- b\n", "a", "project").content == "\n\n- b\n"
    assert apply_forget("- a\r\n- b\r\n\r\n", "b", "project").content == "- a\r\n"


def test_forget_keeps_prose_and_bom() -> None:
    content = BOM + "# Notes\n\nSome prose.\n- a\n  indented prose\n- b\n"
    assert apply_forget(content, "a", "project").content == (
        BOM + "# Notes\n\nSome prose.\n  indented prose\n- b\n"
    )


# -- merge ---------------------------------------------------------------------


def test_merge_replaces_first_and_removes_second_in_one_change() -> None:
    content = f"{HEADER}\n\n  - one\nprose\n- two\n- three\n- two\n\n"
    change = apply_merge(content, "one", "two", "one; two", "project")
    assert change.changed
    assert change.content == f"{HEADER}\n\n  - one; two\nprose\n- three\n"


def test_merge_tidies_the_end_like_forget() -> None:
    change = apply_merge("- a\n- b\n\n\n", "a", "b", "ab", "project")
    assert change.content == "- ab\n"


def test_merge_errors_name_the_missing_note() -> None:
    assert apply_merge("- a\n", "x", "a", "t", "project").error == (
        "No project memory note matches: x"
    )
    assert apply_merge("- a\n", "a", "y", "t", "global").error == (
        "No global memory note matches: y"
    )
    assert not apply_merge("- a\n", "a", "y", "t", "global").changed


def test_merge_keeps_crlf() -> None:
    assert apply_merge("- a\r\n- b\r\n", "a", "b", "c", "project").content == "- c\r\n"


# -- clear ---------------------------------------------------------------------


def test_clear_keeps_prose_and_collapses_blank_runs() -> None:
    content = f"{HEADER}\n\n# Title\n\n- a\n\n- b\n\n\n\nprose\n* c\n-  \n\n"
    change = apply_clear(content)
    assert change.changed
    assert change.content == f"{HEADER}\n\n# Title\n\nprose\n"


def test_clear_removes_blank_bullets_but_not_bare_markers() -> None:
    # `-  ` is a blank bullet (removed); `- ` is not a bullet (kept as prose)
    assert apply_clear("- \n-  \nx\n").content == "- \nx\n"
    assert apply_clear("-  \n").content == f"{HEADER}\n"


def test_clear_writes_header_when_nothing_is_left() -> None:
    assert apply_clear("- a\n- b\n").content == f"{HEADER}\n"
    assert apply_clear("\n\n- a\n\n").content == f"{HEADER}\n"
    assert apply_clear(BOM + "- a\r\n").content == BOM + f"{HEADER}\r\n"


def test_clear_keeps_a_header_only_file_shape() -> None:
    assert apply_clear(f"{HEADER}\n\n- a\n").content == f"{HEADER}\n"


def test_clear_without_bullets_is_untouched() -> None:
    for content in ["", "\n\n\n", "# only prose\n\n\n\n", f"{HEADER}\n", "- \n"]:
        change = apply_clear(content)
        assert not change.changed
        assert change.content == content


def test_clear_keeps_crlf() -> None:
    assert apply_clear("# t\r\n\r\n\r\n\r\n- a\r\nx\r\n").content == "# t\r\n\r\nx\r\n"


def test_clear_never_leaves_a_note_behind() -> None:
    # Prose whose indentation is not spaces or tabs would become a bullet if the
    # first line's leading whitespace were trimmed: clear keeps it whole instead.
    for lead in ["\r", "\x0b", "\x0c", "\u00a0", "\u2028", " \u00a0"]:
        content = f"- a\n\n{lead}- x\nprose\n"
        change = apply_clear(content)
        assert change.changed
        assert parse_notes(change.content) == []
        assert change.content == f"{lead}- x\nprose\n"
    assert apply_clear("- a\n  # Title\n").content == "# Title\n"


def test_a_line_starting_with_u_feff_never_becomes_a_bom() -> None:
    # "\ufeff- hidden" mid-file is prose; removing the lines above it must not
    # turn its U+FEFF into the file's BOM (and the prose into a note).
    content = "- a\n\ufeff- hidden\n"
    assert parse_notes(content) == ["a"]
    for change in [apply_forget(content, "a", "project"), apply_clear(content)]:
        assert change.changed
        assert parse_notes(change.content) == []
        assert change.content == BOM + "\ufeff- hidden\n"
    merged = apply_merge("- a\n\ufeff- hidden\n- b\n", "b", "a", "c", "project")
    assert parse_notes(merged.content) == ["c"]
