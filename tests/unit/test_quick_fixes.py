"""Quick fixes from diagnostics' typed ``data`` (memory_ls.core.fixes, SPEC §7)."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from memory_ls.core import fixes
from memory_ls.core.checks import (
    DuplicateData,
    FileContext,
    FindingData,
    NotInjectedData,
    SimilarData,
    check_bullets,
    file_findings,
    wire_data,
)
from memory_ls.core.conflicts import conflict_findings, notes_conflict
from memory_ls.core.fixes import Fix, quick_fixes, read_data, shorten
from memory_ls.core.notes import parse
from memory_ls.core.similar import similar_findings

TEXT = (
    "# Memory\n\n"
    "- use pnpm\n"  # 2
    "- use pnpm\n"  # 3: exact duplicate
    "- Use PNPM!\n"  # 4: near-duplicate
    "- tab\there\n"  # 5
    "- zero\u200bwidth\n"  # 6
    "-   \n"  # 7
    "- run the tests before you push\n"  # 8
    "- run the tests before pushing\n"  # 9: similar
)
LINES = parse(TEXT).lines


def _title_edits(found: list[Fix] | None) -> list[tuple[str, bool, str]]:
    assert found is not None
    return [(f.title, f.preferred, fixes.apply_edits(LINES, f.edits)) for f in found]


def _without(line: int) -> str:
    return "\n".join(LINES[:line] + LINES[line + 1 :])


def _merged(first: str) -> str:
    """Line 2 rewritten as ``first``, line 4 gone."""
    return "\n".join([*LINES[:2], first, LINES[3], *LINES[5:]])


def _with(line: int, text: str) -> str:
    return "\n".join([*LINES[:line], text, *LINES[line + 1 :]])


def test_every_fixable_finding_reads_its_own_wire_data() -> None:
    parsed = parse(TEXT)
    found = check_bullets(parsed.lines, parsed.bullets, FileContext())
    found += similar_findings(parsed.bullets, 85)
    fixable = [f for f in found if f.code in fixes.QUICK_FIXES]
    # cross-scope-duplicate needs the other store; export-stale is on an instruction
    # file (tests/unit/test_bridges.py reads its wire data back); SPEC §13's stale codes
    # need the project's files (test_stale_fixes_read_their_own_wire_data), conflict
    # needs notes that disagree (test_conflict_fixes_read_their_own_wire_data).
    assert {f.code for f in fixable} == set(fixes.QUICK_FIXES) - {
        "cross-scope-duplicate",
        "export-stale",
        "stale-path",
        "stale-script",
        "instruction-duplicate",
        "conflict",
    }
    for f in fixable:
        offered = quick_fixes(LINES, f.code, wire_data(f))
        assert offered, f.code  # readable, and at least one fix applies


def test_fixes_of_each_code() -> None:
    exact = {"code": "duplicate", "line": 3, "note": "use pnpm"}
    exact |= {"first": "use pnpm", "firstLine": 2, "exact": True}
    assert _title_edits(quick_fixes(LINES, "duplicate", exact)) == [
        ("Remove the duplicate note", True, _without(3))
    ]
    near = {**exact, "line": 4, "note": "Use PNPM!", "exact": False}
    assert _title_edits(quick_fixes(LINES, "duplicate", near)) == [
        ("Keep “use pnpm”", False, _without(4)),
        ("Keep “Use PNPM!”", False, _merged("- Use PNPM!")),
        ("Merge into “use pnpm; Use PNPM!”", False, _merged("- use pnpm; Use PNPM!")),
    ]
    cross = {"code": "cross-scope-duplicate", "line": 2, "note": "use pnpm", "scope": "project"}
    cross |= {"otherScope": "global", "other": "use pnpm", "otherPath": "/a/memory.md"}
    assert _title_edits(quick_fixes(LINES, "cross-scope-duplicate", cross)) == [
        ("Forget here (it stays in global memory)", False, _without(2))
    ]
    controls = {"code": "control-characters", "line": 5, "note": "tab here"}
    assert _title_edits(quick_fixes(LINES, "control-characters", controls)) == [
        ("Normalise the note", True, _with(5, "- tab here"))
    ]
    hidden = {"code": "hidden-unicode", "line": 6, "note": "zero\u200bwidth", "count": 1}
    assert _title_edits(quick_fixes(LINES, "hidden-unicode", hidden)) == [
        ("Remove the hidden characters", True, _with(6, "- zerowidth"))
    ]
    blank = {"code": "blank-note", "line": 7, "note": ""}
    assert _title_edits(quick_fixes(LINES, "blank-note", blank)) == [
        ("Remove the blank bullet", True, _without(7))
    ]


def test_similar_reads_an_integer_score() -> None:
    data: dict[str, Any] = {"code": "similar", "line": 9, "note": "run the tests before pushing"}
    data |= {"first": "run the tests before you push", "firstLine": 8, "score": 86}
    titles = [f.title for f in quick_fixes(LINES, "similar", data) or []]
    assert titles == [
        "Keep “run the tests before you push”",
        "Keep “run the tests before pushing”",
        "Merge into “run the tests before you push; run the tests before pushing”",
    ]


def test_stale_data_gives_no_fix_and_no_empty_fix() -> None:
    exact = {"code": "duplicate", "line": 3, "note": "moved away"}
    exact |= {"first": "use pnpm", "firstLine": 2, "exact": True}
    assert quick_fixes(LINES, "duplicate", exact) == []
    near = {**exact, "exact": False}
    assert quick_fixes(LINES, "duplicate", near) == []
    blank = {"code": "blank-note", "line": 2, "note": ""}  # line 2 is no longer blank
    assert quick_fixes(LINES, "blank-note", blank) == []


def test_codes_without_fixes_give_none_whatever_the_data() -> None:
    assert quick_fixes(LINES, "too-long", "junk") == []
    assert quick_fixes(LINES, "not-injected", {"code": "not-injected", "line": 2}) == []
    assert quick_fixes(LINES, "no-such-code", None) == []


@pytest.mark.parametrize(
    "data",
    [
        None,
        "junk",
        [1, 2],
        {},
        {"code": "duplicate"},
        {"code": "blank-note", "line": 7, "note": ""},  # another code's data
        {"code": "duplicate", "line": "3", "note": "use pnpm"},
        {"code": "duplicate", "line": True, "note": "use pnpm", "first": "use pnpm"},
        {"code": "duplicate", "line": 3.0, "note": "use pnpm", "first": "use pnpm"},
        {"code": "duplicate", "line": 3, "note": "use pnpm", "first": "use pnpm", "firstLine": 2},
        {"code": "duplicate", "line": 3, "note": 1, "first": "a", "firstLine": 2, "exact": True},
        {"code": "duplicate", "line": 3, "note": "a", "first": "b", "firstLine": 2, "exact": 1},
    ],
    ids=repr,
)
def test_unreadable_data_is_none(data: object) -> None:
    assert quick_fixes(LINES, "duplicate", data) is None


def test_cross_scope_data_needs_a_scope() -> None:
    cross = {"code": "cross-scope-duplicate", "line": 2, "note": "use pnpm", "scope": "project"}
    cross |= {"otherScope": "elsewhere", "other": "use pnpm", "otherPath": "/a/memory.md"}
    assert quick_fixes(LINES, "cross-scope-duplicate", cross) is None


def test_read_data_checks_every_field_and_keeps_only_the_shape() -> None:
    raw = {"note": "a", "first": "b", "firstLine": 1, "exact": False, "extra": [1]}
    assert read_data(DuplicateData, raw) == {
        "note": "a",
        "first": "b",
        "firstLine": 1,
        "exact": False,
    }
    assert read_data(DuplicateData, {**raw, "firstLine": False}) is None
    assert read_data(DuplicateData, {**raw, "exact": 0}) is None
    score = read_data(SimilarData, {"note": "a", "first": "b", "firstLine": 1, "score": 90})
    assert score is not None and isinstance(score["score"], float)
    assert read_data(SimilarData, {"note": "a", "first": "b", "firstLine": 1, "score": "9"}) is None
    # A client may send back 1e999 (read as inf) or an integer too large for a float.
    for huge in (10**400, -(10**400), float("inf"), float("nan")):
        bad = {"note": "a", "first": "b", "firstLine": 1, "score": huge}
        assert read_data(SimilarData, bad) is None, huge
    assert read_data(NotInjectedData, {"count": 1, "used": 2, "cap": 3}) is not None
    assert read_data(NotInjectedData, ["count", "used", "cap"]) is None


def test_every_data_shape_can_be_read() -> None:
    # A field type the reader does not know raises here, not in a client's request.
    for shape in get_args(FindingData):
        missing = read_data(shape, {})
        assert missing == ({} if not shape.__required_keys__ else None), shape


def test_note_actions_and_fix_all() -> None:
    forget = fixes.forget_fix(LINES, 4)
    assert forget is not None and forget.title == "Forget “Use PNPM!”"
    assert fixes.apply_edits(LINES, forget.edits) == _without(4)
    assert fixes.forget_fix(LINES, 0) is None  # prose
    assert fixes.forget_fix(LINES, 7) is None  # a blank bullet holds no note
    assert fixes.forget_fix(LINES, 99) is None
    merge = fixes.merge_fix(LINES, [2, 4, 7])
    assert merge is not None and merge.title == "Merge the 2 selected notes"
    assert fixes.apply_edits(LINES, merge.edits) == _merged("- use pnpm; Use PNPM!")
    assert fixes.merge_fix(LINES, [2]) is None
    fix_all = fixes.fix_all_fix(LINES)
    assert fix_all is not None and fix_all.title == "Fix all safe memory problems"
    assert fix_all.edits == fixes.fix_all(LINES)
    assert fixes.fix_all_fix(["- a", "- b"]) is None


def test_not_the_store_points_at_the_real_store() -> None:
    [f] = file_findings(["- a"], FileContext(scope=None, real_store="/p/.pi/memory.md"))
    assert f.code == "not-the-store"
    assert wire_data(f) == {"code": "not-the-store", "line": 0, "store": "/p/.pi/memory.md"}
    assert [(r.line, r.path, r.message) for r in f.related] == [
        (0, "/p/.pi/memory.md", "The project's memory store")
    ]


STALE_TEXT = (
    "# Memory\n\n"
    "- The entry point is `src/old.py` (see src/old.py).\n"  # 2
    "- Build with `pnpm run gone` and `make gone`.\n"  # 3
    "- Keep commits small.\n"  # 4
)
STALE_LINES = parse(STALE_TEXT).lines


def test_stale_and_instruction_duplicate_fixes() -> None:
    from memory_ls.core.fixes import Selection

    note = "The entry point is `src/old.py` (see src/old.py)."
    data = {"code": "stale-path", "line": 2, "note": note, "mention": "src/old.py", "rule": "root"}
    found = quick_fixes(STALE_LINES, "stale-path", data)
    assert found is not None and [f.title for f in found] == ["Forget this note", "Edit the note"]
    forget, edit = found
    assert fixes.apply_edits(STALE_LINES, forget.edits) == (
        "# Memory\n\n- Build with `pnpm run gone` and `make gone`.\n- Keep commits small.\n"
    )
    # The first mention is selected (the backticked one), and nothing is edited.
    col = STALE_LINES[2].index("src/old.py")
    assert edit.edits == [] and edit.select == Selection(2, col, col + len("src/old.py"))

    note = "Build with `pnpm run gone` and `make gone`."
    data = {"code": "stale-script", "line": 3, "note": note, "tool": "pnpm", "script": "gone"}
    found = quick_fixes(STALE_LINES, "stale-script", data)
    assert found is not None and found[1].select is not None
    col = STALE_LINES[3].index("gone")
    assert found[1].select == Selection(3, col, col + 4)

    data = {
        "code": "instruction-duplicate",
        "line": 4,
        "note": "Keep commits small.",
        "file": "/p/AGENTS.md",
        "fileLine": 2,
        "text": "Keep commits small.",
        "score": 100,
    }
    found = quick_fixes(STALE_LINES, "instruction-duplicate", data)
    assert found is not None and [f.title for f in found] == ["Forget this note"]
    assert "Keep commits" not in fixes.apply_edits(STALE_LINES, found[0].edits)


def test_stale_fixes_of_stale_data_are_left_out() -> None:
    data = {"code": "stale-path", "line": 2, "note": "changed since", "mention": "src/old.py"}
    data["rule"] = "root"
    assert quick_fixes(STALE_LINES, "stale-path", data) == []
    # The note is the same but no longer names the mention: forget only.
    note = "The entry point is `src/old.py` (see src/old.py)."
    data = {"code": "stale-path", "line": 2, "note": note, "mention": "lib/x.py", "rule": "root"}
    found = quick_fixes(STALE_LINES, "stale-path", data)
    assert found is not None and [f.title for f in found] == ["Forget this note"]


def test_stale_fixes_read_their_own_wire_data() -> None:
    from memory_ls.core.instruction_duplicates import (
        instruction_duplicate_findings,
        instruction_index,
    )
    from memory_ls.core.stale import ProjectSnapshot, package_info, stale_findings

    parsed = parse(STALE_TEXT)
    project = ProjectSnapshot(
        root_entries=frozenset({"src", "package.json", "Makefile"}),
        paths=frozenset({"src", "src/new.py", "package.json", "Makefile"}),
        packages=(package_info('{"scripts": {"build": "x"}}'),),  # type: ignore[arg-type]
    )
    found = stale_findings(parsed.bullets, parsed.lines, project)
    index = instruction_index({"/p/AGENTS.md": "- Keep commits small.\n"})
    found += instruction_duplicate_findings(parsed.bullets, index)
    assert {f.code for f in found} == {"stale-path", "stale-script", "instruction-duplicate"}
    for f in found:
        offered = quick_fixes(STALE_LINES, f.code, wire_data(f))
        assert offered and offered[0].title == "Forget this note", f.code
        if f.code != "instruction-duplicate":
            # The note's first mention of that path or script: the same text as the
            # finding's range (a path named twice selects its first mention).
            select = offered[-1].select
            assert select is not None and select.line == f.line and select.start <= f.start
            line = STALE_LINES[f.line]
            assert line[select.start : select.end] == line[f.start : f.end]


# -- conflict (SPEC §13) --------------------------------------------------------------------

CONFLICTS = parse("- Use pnpm for installs\n- keep it short\n- Never use pnpm for installs.")
ACROSS = parse("- use tabs")
GLOBAL_NOTES = parse("- Never use tabs\n").bullets
MERGED = "- Never use pnpm for installs (was: Use pnpm for installs)"


def test_conflict_fixes_read_their_own_wire_data() -> None:
    inside = conflict_findings(CONFLICTS.bullets, "project")
    across = conflict_findings(ACROSS.bullets, "project", GLOBAL_NOTES, "/g.md")
    assert len(inside) == 2 and len(across) == 1
    for lines, found in ((CONFLICTS.lines, inside), (ACROSS.lines, across)):
        for f in found:
            assert quick_fixes(lines, "conflict", wire_data(f)), f


def test_conflict_fixes_inside_one_store() -> None:
    lines = CONFLICTS.lines
    first, later = conflict_findings(CONFLICTS.bullets, "project")
    assert (first.line, later.line) == (0, 2)
    without_first = "\n".join(lines[1:])
    without_later = "\n".join(lines[:2])
    merged = f"{MERGED}\n{lines[1]}"
    found = quick_fixes(lines, "conflict", wire_data(first)) or []
    assert [(f.title, f.preferred, fixes.apply_edits(lines, f.edits)) for f in found] == [
        ("Forget this note: “Use pnpm for installs”", False, without_first),
        ("Forget the other note: “Never use pnpm for installs.”", False, without_later),
        (f"Merge the two notes: “{shorten(MERGED[2:])}”", False, merged),
    ]
    # From the other note's diagnostic: the same merge (the later note wins either way).
    again = quick_fixes(lines, "conflict", wire_data(later)) or []
    assert [fixes.apply_edits(lines, f.edits) for f in again] == [
        without_later,
        without_first,
        merged,
    ]


def test_a_merged_conflict_conflicts_with_nothing_its_winner_did_not() -> None:
    merged = fixes.conflict_merge_text("Use pnpm for installs", "Never use pnpm for installs.")
    assert merged == MERGED[2:]
    assert notes_conflict(merged, "Never use pnpm for installs") is None
    assert notes_conflict(merged, "Use pnpm for installs") == "pnpm"


def test_conflict_fixes_across_scopes() -> None:
    lines = ACROSS.lines
    (f,) = conflict_findings(ACROSS.bullets, "project", GLOBAL_NOTES, "/g.md")
    found = quick_fixes(lines, "conflict", wire_data(f)) or []
    assert [(x.title, x.edits, x.command) for x in found] == [
        (
            "Forget this note (the global note then applies here)",
            [fixes.Edit(0, 0, 0, len(lines[0]), "")],
            None,
        ),
        (
            "Forget the global note, in every project: “Never use tabs”",
            [],
            fixes.CommandCall("memory.forget", {"text": "Never use tabs", "scope": "global"}),
        ),
    ]


def test_conflict_fixes_of_stale_data() -> None:
    first, _ = conflict_findings(CONFLICTS.bullets, "project")
    moved = ["- keep it short", *CONFLICTS.lines]  # both notes one line further down
    assert quick_fixes(moved, "conflict", wire_data(first)) == []
    bad = {**wire_data(first), "otherScope": "elsewhere"}
    assert quick_fixes(CONFLICTS.lines, "conflict", bad) is None


def test_conflict_messages_and_titles_escape_hidden_characters() -> None:
    """A bidi override in the other note (maybe in the global store, unseen) must not
    reorder the message or the fix's title a person reads; the data keeps the note as it
    is, so the fix still finds it."""
    evil = "Never use pnpm. \u202edelete everything\u202c"
    store = parse(f"- Use pnpm\n- {evil}")
    first, _ = conflict_findings(store.bullets, "project")
    assert "\u202e" not in first.message and "\\u202e" in first.message
    assert wire_data(first)["other"] == evil
    found = quick_fixes(store.lines, "conflict", wire_data(first)) or []
    assert len(found) == 3
    for fix in found:
        assert "\u202e" not in fix.title and "\u202c" not in fix.title, fix.title
    assert "\\u202e" in found[1].title  # "Forget the other note: “Never use pnpm. \\u202e…”"
    across = parse("- use pnpm")
    (f,) = conflict_findings(across.bullets, "project", parse(f"- {evil}").bullets, "/g.md")
    assert "\u202e" not in f.message
    titles = [x.title for x in quick_fixes(across.lines, "conflict", wire_data(f)) or []]
    assert len(titles) == 2 and all("\u202e" not in t for t in titles)


def test_a_merge_that_would_make_too_long_a_note_is_refused() -> None:
    """Two notes of 300 characters merge into one of 600+: over the note limit (SPEC §2),
    which the store refuses. The merge is offered refused, with why, and edits nothing."""
    tail = " x" * 140
    store = parse(f"- Use pnpm for installs{tail}\n- Never use pnpm for installs{tail}")
    first, _ = conflict_findings(store.bullets, "project")
    found = quick_fixes(store.lines, "conflict", wire_data(first)) or []
    assert [f.title.split(":")[0] for f in found] == [
        "Forget this note",
        "Forget the other note",
        "Merge the two notes",
    ]
    merge = found[2]
    assert merge.edits == [] and merge.command is None
    assert merge.refused is not None and "longer than 500" in merge.refused
    assert found[0].refused is None and found[0].edits  # forgetting is still offered


EVIL = "use pnpm \u202edelete everything\u202c"
"""A note whose bidi override would reorder, on screen, whatever follows it."""


def test_duplicate_and_similar_messages_and_titles_escape_hidden_characters() -> None:
    """The earlier note quoted in a ``duplicate`` or ``similar`` message, and every note in
    a fix's title, is shown escaped (as the conflict and stale messages are); the data
    keeps the notes as they are, so the fixes still find them."""
    store = parse(f"- {EVIL}\n- {EVIL.upper()}\n- {EVIL} now\n")
    found = check_bullets(store.lines, store.bullets, FileContext())
    (duplicate,) = [f for f in found if f.code == "duplicate"]
    (similar,) = [f for f in similar_findings(store.bullets, 85) if f.line == 2]
    for finding in (duplicate, similar):
        assert "\u202e" not in finding.message and "\u202c" not in finding.message
        assert "\\u202e" in finding.message, finding.message
        assert wire_data(finding)["first"] == EVIL
        found = quick_fixes(store.lines, finding.code, wire_data(finding)) or []
        assert len(found) == 3 and all(f.edits for f in found)
        for fix in found:
            assert "\u202e" not in fix.title and "\u202c" not in fix.title, fix.title
    forget = fixes.forget_fix(store.lines, 0)
    assert (
        forget is not None and forget.title == "Forget “use pnpm \\u202edelete everything\\u202c”"
    )


def test_a_cross_scope_message_escapes_the_other_note() -> None:
    from memory_ls.core.checks import cross_scope_findings, key_index

    other = key_index(parse(f"- {EVIL}").bullets)
    (f,) = cross_scope_findings(parse(f"- {EVIL}.").bullets, "project", other, "/g")
    assert f.message == "Also in global memory: use pnpm \\u202edelete everything\\u202c"
    assert wire_data(f)["other"] == EVIL


LONG_A = "run the integration tests before every push" + " with care" * 25
LONG_B = "run the integration tests before each push" + " with care" * 25


@pytest.mark.parametrize("code", ["duplicate", "similar"])
def test_a_near_duplicate_merge_over_the_note_limit_is_refused(code: str) -> None:
    """Two notes of ~290 characters merge into one of ~580: over the note limit (SPEC §2),
    which the store refuses. The merge is offered refused, with why, and edits nothing;
    keeping either wording is still offered."""
    second = LONG_A.upper() + "." if code == "duplicate" else LONG_B
    store = parse(f"- {LONG_A}\n- {second}\n")
    if code == "duplicate":
        (finding,) = check_bullets(store.lines, store.bullets, FileContext())
    else:
        (finding,) = similar_findings(store.bullets, 85)
    assert finding.code == code
    found = quick_fixes(store.lines, code, wire_data(finding)) or []
    assert [f.title.split("“")[0] for f in found] == ["Keep ", "Keep ", "Merge into "]
    merge = found[2]
    assert merge.edits == [] and merge.command is None
    assert merge.refused is not None and "longer than 500" in merge.refused
    assert all(f.refused is None and f.edits for f in found[:2])
    # At the limit the merge is offered: the first note shortened to fit exactly.
    first = "x" * (500 - len(f"; {second}"))
    store = parse(f"- {first}\n- {second}\n")
    data = {**wire_data(finding), "first": first}
    (merge,) = [f for f in quick_fixes(store.lines, code, data) or [] if "Merge" in f.title]
    assert merge.refused is None and merge.edits
    assert fixes.apply_edits(store.lines, merge.edits).splitlines()[0] == f"- {first}; {second}"


def test_merging_selected_notes_over_the_note_limit_is_refused() -> None:
    lines = parse(f"- {LONG_A}\n- keep it short\n- {LONG_B}\n").lines
    merge = fixes.merge_fix(lines, [0, 1, 2])
    assert merge is not None and merge.title == "Merge the 3 selected notes"
    assert merge.edits == [] and merge.refused is not None and "longer than 500" in merge.refused
    ok = fixes.merge_fix(lines, [0, 1])
    assert ok is not None and ok.refused is None and ok.edits
