"""Code-action edits computed from lines and findings' data (memory_ls.core.fixes)."""

from __future__ import annotations

from memory_ls.core import fixes
from memory_ls.core.checks import FileContext, check_bullets
from memory_ls.core.notes import parse

LINES = ["<!-- h -->", "", "- use pnpm", "- use pnpm", "- Use PNPM!", "- tab\there", "-   ", ""]


def apply(lines: list[str], edits: list[fixes.Edit]) -> str:
    return fixes.apply_edits(lines, edits)


def test_remove_duplicate_and_stale_data():
    assert apply(LINES, fixes.remove_duplicate(LINES, 3, "use pnpm")).count("use pnpm") == 1
    assert fixes.remove_duplicate(LINES, 3, "something else") == []  # stale data: no edit


def test_keep_wording_and_merge():
    kept = apply(LINES, fixes.keep_later_wording(LINES, 4, "Use PNPM!", 2, "use pnpm"))
    assert kept.split("\n")[2:5] == ["- Use PNPM!", "- use pnpm", "- tab\there"]
    merged = apply(LINES, fixes.merge_pair(LINES, 4, "Use PNPM!", 2, "use pnpm"))
    assert merged.split("\n")[2] == "- use pnpm; Use PNPM!"
    assert "- Use PNPM!" not in merged
    assert fixes.merged_text("a", "b") == "a; b"


def test_normalise_hidden_blank():
    assert apply(LINES, fixes.normalise_line(LINES, 5)).split("\n")[5] == "- tab here"
    hidden = ["- zero\u200bwidth"]
    assert apply(hidden, fixes.remove_hidden_line(hidden, 0)) == "- zerowidth"
    assert "-   " not in apply(LINES, fixes.remove_blank(LINES, 6))
    assert fixes.remove_blank(LINES, 2) == []


def test_remove_last_line_takes_the_break_before():
    lines = ["- a", "- b"]
    assert apply(lines, [fixes.remove_line(lines, 1)]) == "- a"  # type: ignore[list-item]
    assert fixes.remove_line(lines, 5) is None


def test_merge_lines_selection():
    lines = ["- a", "prose", "- b", "- c"]
    assert apply(lines, fixes.merge_lines(lines, [0, 2, 3])) == "- a; b; c\nprose"
    assert fixes.merge_lines(lines, [0]) == []


def test_fix_all_is_safe_and_idempotent():
    lines = [*LINES[:-1], "- zero\u200bwidth", "- use pnpm", ""]
    fixed = apply(lines, fixes.fix_all(lines))
    assert fixed.split("\n") == [
        "<!-- h -->",
        "",
        "- use pnpm",
        "- Use PNPM!",  # a near-duplicate with other wording is the user's call
        "- tab here",
        "- zerowidth",
        "",
    ]
    again = fixed.split("\n")
    assert fixes.fix_all(again) == []
    parsed = parse(fixed)
    codes = {f.code for f in check_bullets(parsed.lines, parsed.bullets, FileContext())}
    assert codes == {"duplicate"}  # only the near-duplicate is left


def test_fix_all_removes_runs_at_the_end():
    lines = ["- a", "- a", "-  "]
    assert apply(lines, fixes.fix_all(lines)) == "- a"


def test_every_data_shape_is_read_from_the_names_its_module_holds() -> None:
    """A client's diagnostic comes back with its ``data``, read by each shape's type
    hints at run time: a hint whose name its module imports for mypy only (``Scope``
    behind ``TYPE_CHECKING``) made every quick fix of that code an internal error."""
    from typing import get_args

    from memory_ls.core.checks import FindingData
    from memory_ls.core.fixes import _readers

    shapes = get_args(FindingData)
    assert len(shapes) > 10
    for shape in shapes:
        assert {name for name, _ in _readers(shape)} == set(shape.__annotations__), shape
