"""The recall plan and the injection body (SPEC §6)."""

from __future__ import annotations

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from memory_ls.core.recall import (
    INTRO,
    MARKER,
    TAIL_RESERVE,
    NoteRecall,
    RecallPlan,
    ScopeRecall,
    _changed,
    budget_before,
    incremental_plan,
    note_cost,
    note_recall,
    recall_body,
    recall_plan,
    scope_recall,
    tail_line,
)

PREAMBLE = (
    "[MEMORY]\n"
    "Durable notes saved in earlier sessions. Treat them as facts the user asked you to remember."
)
BASE = len(PREAMBLE.encode()) + 1  # the first two lines, each with its newline


def test_body_byte_for_byte() -> None:
    plan = recall_plan(["use pnpm, not npm", "tests need DATABASE_URL"], ["prefer tabs"], 8192)
    assert plan.body == (
        "[MEMORY]\n"
        "Durable notes saved in earlier sessions. Treat them as facts the user asked you "
        "to remember.\n"
        "project:\n"
        "- use pnpm, not npm\n"
        "- tests need DATABASE_URL\n"
        "global:\n"
        "- prefer tabs"
    )
    assert plan.used == len(plan.body.encode("utf-8"))
    assert [n.included for n in plan.notes] == [True, True, True]
    assert plan.omitted == []
    assert MARKER + "\n" + INTRO == PREAMBLE


def test_empty_scope_is_left_out_with_its_header() -> None:
    only_global = recall_plan([], ["g"], 8192)
    assert only_global.body == f"{PREAMBLE}\nglobal:\n- g"
    only_project = recall_plan(["p"], [], 8192)
    assert only_project.body == f"{PREAMBLE}\nproject:\n- p"


def test_nothing_to_inject_gives_no_body() -> None:
    plan = recall_plan([], [], 8192)
    assert plan.body is None
    assert plan.used == 0
    assert plan.as_inject_result() == {
        "body": None,
        "bytes": 0,
        "maxInjectBytes": 8192,
        "included": 0,
        "omitted": [],
        "inject": True,
    }


def test_inject_false_gives_no_body() -> None:
    plan = recall_plan(["p"], ["g"], 8192, inject=False)
    assert plan.body is None
    assert plan.used == 0
    result = plan.as_inject_result()
    assert result["body"] is None
    assert result["inject"] is False
    assert result["included"] == 0
    assert result["omitted"] == []


def test_tail_line() -> None:
    assert tail_line(3) == "- (+3 more; use the memory tool)"
    assert TAIL_RESERVE == 64


def test_a_note_that_does_not_fit_is_skipped_and_later_shorter_ones_still_fit() -> None:
    cap = 512
    room = cap - TAIL_RESERVE - BASE - len("project:\n")
    big = "x" * room  # "- " + big + "\n" is 3 bytes over
    plan = recall_plan(["short", big, "tiny"], ["also"], cap)
    assert [n.included for n in plan.notes] == [True, False, True, True]
    assert plan.body == (
        f"{PREAMBLE}\nproject:\n- short\n- tiny\nglobal:\n- also\n- (+1 more; use the memory tool)"
    )
    assert plan.used <= cap
    assert [(n["scope"], n["text"]) for n in plan.as_inject_result()["omitted"]] == [
        ("project", big)
    ]


def test_exact_fit_is_taken_and_one_more_byte_is_not() -> None:
    cap = 1000
    limit = cap - TAIL_RESERVE
    header = len("project:\n")
    fits = "a" * (limit - BASE - header - len("- \n"))
    plan = recall_plan([fits], [], cap)
    assert plan.notes[0].included
    assert plan.used == limit - 1  # no trailing newline
    plan = recall_plan([fits + "a"], [], cap)
    assert not plan.notes[0].included
    assert plan.body == f"{PREAMBLE}\n- (+1 more; use the memory tool)"


def test_section_header_is_charged_with_the_first_note_of_its_section() -> None:
    cap = 1000
    limit = cap - TAIL_RESERVE
    # project fills up to exactly the room a global note needs *without* its header
    p = "p" * (limit - BASE - len("project:\n") - len("- \n") - len("- g\n"))
    plan = recall_plan([p], ["g"], cap)
    assert [n.included for n in plan.notes] == [True, False]
    # one byte fewer in the project note leaves room for neither "global:\n" (8 bytes)…
    p2 = p[: -len("global:\n")]
    plan = recall_plan([p2], ["g"], cap)
    assert [n.included for n in plan.notes] == [True, True]
    assert plan.body is not None and plan.body.endswith("\nglobal:\n- g")
    p3 = p[: -len("global:\n") + 1]
    assert [n.included for n in recall_plan([p3], ["g"], cap).notes] == [True, False]


def test_header_is_not_charged_twice() -> None:
    cap = 1000
    limit = cap - TAIL_RESERVE
    first = "a" * 10
    # after the first note, exactly one more 4-byte line fits ("- b\n")
    filler = "f" * (limit - BASE - len("project:\n") - len(f"- {first}\n") - len("- b\n") - 3)
    plan = recall_plan([first, filler, "b"], [], cap)
    assert [n.included for n in plan.notes] == [True, True, True]


def test_tail_counts_every_skipped_note_in_both_scopes() -> None:
    cap = 600
    big = "y" * 400
    plan = recall_plan([big, "p1", big], [big, "g1", big, big], cap)
    assert [n.included for n in plan.notes] == [True, True, False, False, True, False, False]
    assert plan.body is not None
    assert plan.body.endswith("\n- (+4 more; use the memory tool)")
    assert plan.body.count("\n- (+") == 1
    assert len(plan.omitted) == 4
    assert plan.used <= cap


def test_project_section_is_left_out_when_none_of_its_notes_fit() -> None:
    plan = recall_plan(["z" * 1000], ["g"], 512)
    assert plan.body == f"{PREAMBLE}\nglobal:\n- g\n- (+1 more; use the memory tool)"


def test_notes_keep_file_order_and_indices() -> None:
    plan = recall_plan(["a", "b"], ["c"], 8192)
    assert [(n.scope, n.index, n.text) for n in plan.notes] == [
        ("project", 0, "a"),
        ("project", 1, "b"),
        ("global", 0, "c"),
    ]
    assert [n.bytes for n in plan.notes] == [4, 4, 4]


def test_multibyte_notes_are_charged_in_utf8_bytes() -> None:
    note = "😀" * 10  # 40 bytes
    plan = recall_plan([note], [], 8192)
    assert plan.notes[0].bytes == len(f"- {note}\n".encode())
    assert plan.body is not None
    assert plan.used == len(plan.body.encode())


@pytest.mark.parametrize("cap", [512, 513, 700, 1024, 4096, 8192, 32768])
def test_body_never_exceeds_the_cap(cap: int) -> None:
    notes = [("n" * (i % 97)) + "é😀日" * (i % 13) + str(i) for i in range(400)]
    plan = recall_plan(notes[:200], notes[200:], cap)
    assert plan.body is not None
    assert plan.used == len(plan.body.encode("utf-8")) <= cap
    assert len(plan.included) + len(plan.omitted) == 400
    tail = f"- (+{len(plan.omitted)} more; use the memory tool)"
    assert plan.body.endswith(tail) == bool(plan.omitted)
    assert not plan.body.endswith("\n")


def test_body_lines_are_joined_by_lf() -> None:
    plan = recall_plan(["a"], ["b"], 8192)
    assert plan.body is not None
    assert "\r" not in plan.body
    assert plan.body.split("\n") == [MARKER, INTRO, "project:", "- a", "global:", "- b"]


def test_inject_result_counts() -> None:
    plan = recall_plan(["a" * 600, "b"], ["c"], 512)
    result = plan.as_inject_result()
    assert result["included"] == 2
    assert result["omitted"] == [{"scope": "project", "text": "a" * 600}]
    assert result["bytes"] == plan.used
    assert result["maxInjectBytes"] == 512


# -- the incremental update (the editor re-plans on every keystroke) -----------------------

LEFT_OUT_CAP = 512
"""A cap that leaves ``BIG`` out but takes short notes."""
BIG = "b" * 400


def test_an_unchanged_plan_is_returned_as_it_is() -> None:
    plan = recall_plan(["a", BIG], ["g"], LEFT_OUT_CAP)
    assert incremental_plan(plan, ["a", BIG], ["g"], LEFT_OUT_CAP) is plan


def test_editing_a_left_out_note_that_still_does_not_fit_keeps_every_decision() -> None:
    plan = recall_plan(["a", BIG], ["g"], LEFT_OUT_CAP)
    assert [n.included for n in plan.notes] == [True, False, True]
    for edited in (BIG + "!", BIG[:-1]):  # longer, and shorter but still too long
        updated = incremental_plan(plan, ["a", edited], ["g"], LEFT_OUT_CAP)
        assert updated is not None
        assert updated == recall_plan(["a", edited], ["g"], LEFT_OUT_CAP)
        assert updated.notes[1].text == edited
        assert updated.notes[1].bytes == note_cost(edited)
        assert updated.body == plan.body


def test_a_left_out_global_note_is_found_after_the_project_notes() -> None:
    plan = recall_plan(["a"], ["g", BIG], LEFT_OUT_CAP)
    updated = incremental_plan(plan, ["a"], ["g", BIG + "?"], LEFT_OUT_CAP)
    assert updated is not None
    assert (updated.notes[2].scope, updated.notes[2].index) == ("global", 1)
    assert updated == recall_plan(["a"], ["g", BIG + "?"], LEFT_OUT_CAP)


@pytest.mark.parametrize(
    ("project", "global_", "max_bytes", "inject"),
    [
        (["a!", BIG], ["g"], LEFT_OUT_CAP, True),  # an included note changed
        (["a", "now short"], ["g"], LEFT_OUT_CAP, True),  # a left-out note now fits
        (["a", BIG + "1"], ["g2"], LEFT_OUT_CAP, True),  # two notes changed
        (["a", BIG, "c"], ["g"], LEFT_OUT_CAP, True),  # a note added
        (["a"], ["g"], LEFT_OUT_CAP, True),  # a note removed
        (["a", BIG], ["g"], 8192, True),  # another cap
        (["a", BIG], ["g"], LEFT_OUT_CAP, False),  # recall turned off
    ],
)
def test_anything_that_may_change_a_decision_needs_a_fresh_plan(
    project: list[str], global_: list[str], max_bytes: int, inject: bool
) -> None:
    plan = recall_plan(["a", BIG], ["g"], LEFT_OUT_CAP)
    assert incremental_plan(plan, project, global_, max_bytes, inject) is None


def test_a_left_out_note_shrunk_to_the_exact_room_left_is_re_planned() -> None:
    # After "a", the project section has started: the room left is all the note needs.
    room = LEFT_OUT_CAP - TAIL_RESERVE - BASE - len("project:\n") - len("- a\n")
    exact = "c" * (room - len("- \n"))
    plan = recall_plan(["a", BIG], [], LEFT_OUT_CAP)
    assert incremental_plan(plan, ["a", exact], [], LEFT_OUT_CAP) is None
    assert recall_plan(["a", exact], [], LEFT_OUT_CAP).notes[1].included
    one_over = incremental_plan(plan, ["a", exact + "c"], [], LEFT_OUT_CAP)
    assert one_over == recall_plan(["a", exact + "c"], [], LEFT_OUT_CAP)
    assert one_over is not None and not one_over.notes[1].included


def test_budget_before_counts_the_included_notes_and_their_headers() -> None:
    plan = recall_plan(["a", BIG, "bb"], [BIG, "g"], LEFT_OUT_CAP)
    assert [n.included for n in plan.notes] == [True, False, True, False, True]
    header = len("project:\n")
    assert budget_before(plan, 0) == (BASE, False)
    assert budget_before(plan, 1) == (BASE + header + len("- a\n"), True)
    assert budget_before(plan, 3) == (BASE + header + len("- a\n- bb\n"), False)
    # A left-out note opens no section: the global header is still unpaid.
    assert budget_before(plan, 4) == budget_before(plan, 3)


def test_note_cost_is_the_line_with_its_newline() -> None:
    assert note_cost("abc") == len("- abc\n")
    assert note_cost("😀") == len("- 😀\n".encode())


def edited_notes(plan: RecallPlan, data: st.DataObject) -> tuple[list[str], list[str]]:
    """The plan's notes with none, one (most often) or two edited the way typing does.

    Half the edits hit a note the plan leaves out: the case the update keeps in place.
    """
    out = {"project": list(plan.project), "global": list(plan.global_)}
    left_out = [n for n in plan.notes if not n.included]
    for _ in range(data.draw(st.sampled_from([0, 1, 1, 1, 2]))):
        if not plan.notes:
            break
        pool = left_out if left_out and data.draw(st.booleans()) else plan.notes
        note = data.draw(st.sampled_from(pool))
        notes, i = out[note.scope], note.index
        edit = data.draw(st.sampled_from(["shorter", "longer", "other"]))
        if edit == "shorter":  # often to a few characters, which may then fit
            keep = data.draw(st.one_of(st.integers(0, 3), st.integers(0, len(notes[i]))))
            notes[i] = notes[i][:keep] or "x"
        elif edit == "longer":
            notes[i] += data.draw(NOTE)
        else:
            notes[i] = data.draw(NOTE)
    return out["project"], out["global"]


NOTE = st.text(st.sampled_from("abé😀日 "), min_size=1, max_size=80)
NOTES = st.lists(NOTE, max_size=12)


@given(NOTES, NOTES, st.integers(150, 700), st.booleans(), st.data())
@settings(max_examples=400, deadline=None)
def test_the_incremental_update_always_equals_a_fresh_plan(
    project: list[str], global_: list[str], cap: int, inject: bool, data: st.DataObject
) -> None:
    previous = recall_plan(project, global_, cap, inject)
    new_project, new_global = edited_notes(previous, data)
    if data.draw(st.integers(0, 4)) == 0:  # now and then a note added, or all gone
        new_project = [*new_project, data.draw(NOTE)] if data.draw(st.booleans()) else []
    new_cap = data.draw(st.sampled_from([cap, cap, cap + 1]))
    fresh = recall_plan(new_project, new_global, new_cap, inject)
    updated = incremental_plan(previous, new_project, new_global, new_cap, inject)
    if updated is None:
        event("re-planned")
    else:
        event("unchanged" if updated is previous else "a left-out note updated in place")
    assert updated is None or updated == fresh


BODY_NOTE = st.text(
    st.sampled_from(["a", "é", "😀", "日", " ", "\ud800", "\n"]), min_size=1, max_size=60
)


@given(
    st.lists(BODY_NOTE, max_size=15),
    st.lists(BODY_NOTE, max_size=15),
    st.integers(0, 900),
    st.booleans(),
)
@settings(max_examples=400, deadline=None)
def test_the_body_alone_is_the_plans_body(
    project: list[str], global_: list[str], cap: int, inject: bool
) -> None:
    """``memory-ls inject`` prints ``recall_body``: the plan's body, without the plan."""
    assert (
        recall_body(project, global_, cap, inject)
        == recall_plan(project, global_, cap, inject).body
    )


def _planned_note_by_note(
    project: list[str], global_: list[str], cap: int
) -> list[tuple[str, int, str, int, bool]]:
    """SPEC §6's rule, one note after another: taken when it (and its section's header,
    for the section's first note) fits in what is left of ``cap - 64``."""
    used, limit, out = BASE, max(0, cap - TAIL_RESERVE), []
    for scope, notes in (("project", project), ("global", global_)):
        started = False
        for i, note in enumerate(notes):
            cost = len(note.encode()) + 3
            header = 0 if started else len(scope) + 2
            fits = used + header + cost <= limit
            if fits:
                used += header + cost
                started = True
            out.append((scope, i, note, cost, fits))
    return out


# Notes of few lengths, many of them, and budgets that fill up exactly: the plan stops
# looking once no note of a scope can fit any more, and makes the rest in one pass.
SHORT_NOTE = st.sampled_from(["a", "bb", "é", "😀", "ccc d", "日本"])


@given(
    st.lists(SHORT_NOTE, max_size=60),
    st.lists(SHORT_NOTE, max_size=20),
    st.integers(150, 400),
    st.booleans(),
)
@settings(max_examples=400, deadline=None)
def test_the_plan_is_the_note_by_note_rule(
    project: list[str], global_: list[str], cap: int, inject: bool
) -> None:
    plan = recall_plan(project, global_, cap, inject)
    assert [tuple(n) for n in plan.notes] == _planned_note_by_note(project, global_, cap)
    assert [(n.scope, n.index, n.text, n.bytes, n.included) for n in plan.notes] == [
        tuple(n) for n in plan.notes
    ]
    skipped = sum(not n.included for n in plan.notes)
    if skipped and plan.body is not None:
        assert plan.body.endswith(tail_line(skipped))
    assert recall_body(project, global_, cap, inject) == plan.body


# -- what the plan means for one note, and for one store ------------------------------------


def test_a_note_in_the_body_is_in() -> None:
    plan = recall_plan(["a"], ["g"], 8192)
    verdict = note_recall(plan, "global", 0, "g")
    assert verdict == NoteRecall("in", note_cost("g"))
    assert verdict.included


def test_a_note_the_budget_leaves_out_is_out_for_the_budget() -> None:
    plan = recall_plan(["a", BIG], [], LEFT_OUT_CAP)
    assert note_recall(plan, "project", 1, BIG) == NoteRecall("budget", note_cost(BIG))
    assert not note_recall(plan, "project", 1, BIG).included
    assert note_recall(plan, "project", 0, "a").included


def test_recall_off_leaves_every_note_out() -> None:
    plan = recall_plan(["a"], ["g"], 8192, inject=False)
    assert note_recall(plan, "project", 0, "a").state == "recall-off"
    assert note_recall(plan, "global", 0, "g").state == "recall-off"


def test_an_untrusted_project_note_is_out_and_trust_comes_before_recall_off() -> None:
    for inject in (True, False):
        plan = recall_plan([], ["g"], 8192, inject)  # untrusted: no project notes offered
        assert note_recall(plan, "project", 0, "a", trusted=False).state == "untrusted"
    assert note_recall(recall_plan([], ["g"], 8192), "global", 0, "g", trusted=False).included


def test_a_note_the_plan_never_saw_is_unread() -> None:
    plan = recall_plan([], ["g"], 8192)  # a refused project store is not offered either
    assert note_recall(plan, "project", 0, "a").state == "unread"
    assert note_recall(plan, "global", 1, "h").state == "unread"


def test_planned_finds_each_note_by_scope_and_index() -> None:
    plan = recall_plan(["a", "b"], ["c"], 8192)
    assert plan.planned("project", 1) is plan.notes[1]
    assert plan.planned("global", 0) is plan.notes[2]
    assert plan.planned("global", 1) is None
    assert plan.planned("project", 2) is None
    assert plan.planned("project", -1) is None


def test_scope_recall_counts_the_scopes_left_out_notes() -> None:
    plan = recall_plan(["a", BIG, BIG], ["g", BIG], LEFT_OUT_CAP)
    assert scope_recall(plan, "project") == ScopeRecall("on", 2)
    assert scope_recall(plan, "global") == ScopeRecall("on", 1)
    assert [n.index for n in plan.omitted_in("project")] == [1, 2]


def test_scope_recall_says_why_a_whole_store_is_out() -> None:
    off = recall_plan(["a"], ["g"], 8192, inject=False)
    assert scope_recall(off, "global") == ScopeRecall("recall-off", 0)
    assert off.omitted_in("global") == []
    untrusted = recall_plan([], ["g"], 8192, inject=False)
    assert scope_recall(untrusted, "project", trusted=False) == ScopeRecall("untrusted", 0)
    assert scope_recall(untrusted, "global", trusted=False) == ScopeRecall("recall-off", 0)


@given(st.lists(st.sampled_from(["a", "b", "é", "😀", ""]), max_size=40), st.data())
@settings(max_examples=300, deadline=None)
def test_the_changed_notes_are_found_as_a_loop_finds_them(
    old: list[str], data: st.DataObject
) -> None:
    """The first two indices where the notes differ (halving over slices), as a plain
    loop finds them: equal strings that are other objects count as unchanged."""
    new = [n + "" if data.draw(st.booleans()) else "".join(list(n)) for n in old]
    for i in data.draw(st.lists(st.integers(0, max(0, len(old) - 1)), max_size=4)):
        if old:
            new[i] = data.draw(st.sampled_from(["a", "b", "é", "😀", "", "c"]))
    expected = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b][:2]
    assert _changed(tuple(old), new) == expected
    assert _changed(tuple(old), tuple(new)) == expected
