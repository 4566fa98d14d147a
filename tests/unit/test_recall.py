"""The recall plan and the injection body (SPEC §6)."""

from __future__ import annotations

import pytest

from memory_ls.core.recall import INTRO, MARKER, TAIL_RESERVE, recall_plan, tail_line

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
