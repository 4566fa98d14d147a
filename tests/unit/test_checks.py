"""Findings over a memory file (the data behind SPEC §7's diagnostics)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory_ls.core.checks import (
    CODES,
    FileContext,
    check_bullets,
    cross_scope_findings,
    duplicate_findings,
    file_findings,
    key_index,
    line_findings,
    not_injected_findings,
    note_hash,
)
from memory_ls.core.models import Scope
from memory_ls.core.notes import Bullet, ParsedFile, parse, parse_bullet
from memory_ls.core.recall import RecallPlan, recall_plan
from memory_ls.core.text import HEADER


def codes(content: str, ctx: FileContext | None = None) -> list[tuple[int, str]]:
    parsed = parse(content)
    found = check_bullets(parsed.lines, parsed.bullets, ctx or FileContext())
    return [(f.line, f.code) for f in found]


def test_every_spec_code_and_default_severity() -> None:
    assert CODES == {
        "duplicate": "warning",
        "cross-scope-duplicate": "information",
        "too-long": "warning",
        "blank-note": "warning",
        "control-characters": "warning",
        "hidden-unicode": "warning",
        "not-injected": "information",
        "recall-off": "hint",
        "untrusted": "information",
        "file-too-large": "error",
        "buffer-behind-file": "error",
        "symlink": "error",
        "outside-project": "error",
        "invalid-utf8": "error",
        "not-the-store": "warning",
        "similar": "hint",
        "export-stale": "information",
        "proposal": "information",
        "stale-path": "information",
        "stale-script": "information",
        "instruction-duplicate": "information",
        "conflict": "warning",
    }


def test_clean_file_has_no_findings() -> None:
    assert codes(f"{HEADER}\n\n# Notes\n- a\n- b\nprose\n") == []


def test_blank_bullet() -> None:
    assert codes("- a\n-  \n- \n") == [(1, "blank-note")]


def test_too_long_counts_utf16() -> None:
    assert codes("- " + "😀" * 250 + "\n") == []
    found = codes("- " + "😀" * 251 + "\n")
    assert found == [(0, "too-long")]
    b = parse_bullet("- " + "😀" * 251)
    assert b is not None
    (f,) = line_findings(b)
    assert f.data["length"] == 502
    assert f.severity == "warning"


def test_control_characters_but_not_trailing_whitespace() -> None:
    assert codes("- a\x1bb\n") == [(0, "control-characters")]
    assert codes("- a\tb\n") == [(0, "control-characters")]
    assert codes("- a\x85b\n") == [(0, "control-characters")]
    assert codes("- ab\t\n") == []  # trailing whitespace is not part of the note


def test_hidden_unicode() -> None:
    b = parse_bullet("- a\u200bb\u202e")
    assert b is not None
    (f,) = line_findings(b)
    assert f.code == "hidden-unicode"
    assert f.data["count"] == 2


def test_ranges_cover_the_note_text() -> None:
    line = "  -   a\x1bb   "
    b = parse_bullet(line, 3)
    assert b is not None
    (f,) = line_findings(b)
    assert (f.line, f.end_line) == (3, 3)
    assert line[f.start : f.end] == "a\x1bb"


def test_duplicates_point_at_the_first() -> None:
    parsed = parse("- Use pnpm\n- other\n- use PNPM.\n- use pnpm\n")
    found = duplicate_findings(parsed.bullets)
    assert [(f.line, f.data["firstLine"], f.data["exact"]) for f in found] == [
        (2, 0, False),
        (3, 0, False),
    ]
    assert found[0].related[0].line == 0
    assert found[0].severity == "warning"


def test_exact_duplicate_flag() -> None:
    parsed = parse("- a\n- a\n")
    (f,) = duplicate_findings(parsed.bullets)
    assert f.data["exact"] is True


def test_blank_bullets_are_not_duplicates() -> None:
    assert duplicate_findings(parse("-  \n-  \n").bullets) == []


def test_cross_scope() -> None:
    other = key_index(parse("- Use pnpm!\n- x\n").bullets)
    assert other == {"use pnpm": "Use pnpm!", "x": "x"}
    found = cross_scope_findings(parse("- use pnpm\n- y\n").bullets, "project", other, "/g")
    assert [(f.line, f.code, f.data["otherScope"]) for f in found] == [
        (0, "cross-scope-duplicate", "global")
    ]
    assert found[0].message == "Also in global memory: Use pnpm!"


def _noted(parsed: ParsedFile) -> list[Bullet]:
    """The bullets :func:`not_injected_findings` takes: the notes', blank bullets left out."""
    return [b for b in parsed.bullets if b.note]


def test_not_injected_one_finding_per_run() -> None:
    content = "- a\n" + "- " + "b" * 400 + "\n- " + "c" * 400 + "\n- d\n-  \n- " + "e" * 400 + "\n"
    parsed = parse(content)
    plan = recall_plan(parsed.notes, [], 512)
    assert [n.included for n in plan.notes] == [True, False, False, True, False]
    found = not_injected_findings(_noted(parsed), "project", plan)
    assert [(f.line, f.end_line, f.data["count"]) for f in found] == [(1, 2, 2), (5, 5, 1)]
    assert all(f.data["used"] == plan.used and f.data["cap"] == 512 for f in found)


def _runs_note_by_note(
    bullets: list[Bullet], scope: Scope, plan: RecallPlan
) -> list[tuple[int, int, int, int, int, str]]:
    """The runs of left-out notes found by walking every note (how it was first written)."""
    left_out = {n.index for n in plan.omitted_in(scope)}
    notes = [b for b in bullets if not b.blank]
    runs: list[list[Bullet]] = []
    for i, b in enumerate(notes):
        if i in left_out:
            if runs and (i - 1) in left_out:
                runs[-1].append(b)
            else:
                runs.append([b])
    total = f"{len(left_out)} {scope} note(s) left out in all"
    return [(r[0].line, r[0].start, r[-1].line, r[-1].end, len(r), total) for r in runs]


@given(
    st.lists(st.sampled_from(["a", "b" * 90, "c" * 300, "é" * 50, "", " x"]), max_size=30),
    st.lists(st.sampled_from(["g", "h" * 200]), max_size=5),
    st.integers(0, 1200),
    st.sampled_from(["project", "global"]),
)
def test_not_injected_runs_are_the_runs_of_left_out_notes(
    notes: list[str], others: list[str], cap: int, scope: Scope
) -> None:
    parsed = parse("".join(f"- {n}\n" if n else "-  \n" for n in notes))
    mine = [b.note for b in parsed.bullets if not b.blank]
    if scope == "project":
        plan = recall_plan(mine, others, cap)
    else:
        plan = recall_plan(others, mine, cap)
    found = not_injected_findings(_noted(parsed), scope, plan)
    runs = [
        (f.line, f.start, f.end_line, f.end, f.data["count"], f.message.split("; ")[1][:-1])
        for f in found
    ]
    assert runs == _runs_note_by_note(parsed.bullets, scope, plan)


def test_not_injected_is_silent_when_recall_is_off() -> None:
    parsed = parse("- " + "b" * 600 + "\n")
    plan = recall_plan(parsed.notes, [], 512, inject=False)
    assert not_injected_findings(_noted(parsed), "project", plan) == []


def test_file_findings() -> None:
    lines = ["# x"]
    ctx = FileContext(
        scope="project",
        size=262_145,
        symlink=True,
        invalid_utf8_at=(5, 0, 5),
        inject=False,
        trusted=False,
        trust_reason="rule",
        real_store="/r/.pi/memory.md",
    )
    found = file_findings(lines, ctx)
    assert sorted(f.code for f in found) == sorted(
        ["symlink", "file-too-large", "invalid-utf8", "not-the-store", "recall-off", "untrusted"]
    )
    too_large = next(f for f in found if f.code == "file-too-large")
    assert "262145 bytes" in too_large.message
    bad = next(f for f in found if f.code == "invalid-utf8")
    assert "offset 5" in bad.message
    assert (bad.start, bad.end) == (5, 6)


def test_file_findings_at_the_limits() -> None:
    assert file_findings([""], FileContext(scope="global", size=262_144)) == []
    # untrusted is about the project store only, recall-off about stores only
    assert file_findings([""], FileContext(scope="global", trusted=False)) == []
    assert file_findings([""], FileContext(scope=None, inject=False)) == []


def test_findings_are_in_reading_order() -> None:
    found = codes("- a\n- a\x1b\n-  \n- A\n")
    assert found == sorted(found)
    assert (2, "blank-note") in found
    assert (3, "duplicate") in found


def test_a_proposal_diagnostic_shows_hidden_characters_escaped() -> None:
    from memory_ls.core.checks import proposal_message

    update = {"id": "0000000b", "action": "update", "text": "b", "to": "c\u202ed", "by": "me"}
    assert proposal_message(update) == (  # type: ignore[arg-type]
        "me proposes to update this note to: c\\u202ed (waiting for review, 0000000b)"
    )


def test_proposal_findings_name_who_proposes_what() -> None:
    from memory_ls.core.checks import proposal_findings
    from memory_ls.core.notes import parse_bullet

    bullets = [b for i, line in enumerate(["- a", "- b", "  * a"]) if (b := parse_bullet(line, i))]
    forget = {"id": "0000000a", "action": "forget", "text": "a", "by": "codex", "at": "x"}
    update = {"id": "0000000b", "action": "update", "text": "b", "to": "c", "by": "me", "at": "x"}
    add = {"id": "0000000c", "action": "add", "text": "b", "by": "me", "at": "x"}
    found = proposal_findings(bullets, [forget, update, add])  # type: ignore[list-item]
    assert [(f.code, f.line, f.message) for f in found] == [
        ("proposal", 0, "codex proposes to forget this note (waiting for review, 0000000a)"),
        ("proposal", 1, "me proposes to update this note to: c (waiting for review, 0000000b)"),
        ("proposal", 2, "codex proposes to forget this note (waiting for review, 0000000a)"),
    ]
    assert found[1].data == {
        "note": "b",
        "id": "0000000b",
        "action": "update",
        "by": "me",
        "to": "c",
    }
    assert proposal_findings(bullets, [add]) == []  # type: ignore[list-item]


def test_note_hash_is_64_bits_of_blake2b() -> None:
    """The hash a publish names a note by is hashlib's BLAKE2b (taken from ``_blake2``,
    which hashlib hands out, so ``serve`` does without loading OpenSSL)."""
    import hashlib

    for note in ["run the tests", "ünïcødé 🧹", "lone \ud800 surrogate"]:
        expected = hashlib.blake2b(note.encode("utf-8", "surrogatepass"), digest_size=8)
        assert note_hash(note) == expected.hexdigest()
