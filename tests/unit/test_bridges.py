"""`memory_ls/core/bridges.py`: reading other agents' memory files, planning import and export.

The fixture files in ``tests/fixtures/bridges`` are written to each tool's
documented format (``docs/bridges.md`` cites where each was checked).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_ls.core.bridges import (
    EXPORT_BEGIN,
    EXPORT_END,
    ExportError,
    block_lines,
    detect_format,
    export_stale_finding,
    find_block,
    import_candidates,
    import_summary,
    looks_generated,
    plan_export,
    plan_import,
    plan_import_proposals,
    proposal_summary,
)
from memory_ls.core.checks import wire_data
from memory_ls.core.fixes import apply_edits, quick_fixes
from memory_ls.core.inbox import MAX_PROPOSALS, full_message, parse_inbox, serialise
from memory_ls.core.models import ImportResult
from memory_ls.core.recall import INTRO, recall_plan
from memory_ls.core.text import HEADER, MAX_STORE_BYTES, normalise, split_text

FIXTURES = Path(__file__).parent.parent / "fixtures" / "bridges"


def fixture(name: str) -> str:
    # newline="" keeps CRLF as it is on disk; the parser must handle it.
    return (FIXTURES / name).read_bytes().decode("utf-8")


def notes_of(name: str, fmt: str = "auto") -> list[str]:
    return [normalise(raw) for raw in import_candidates(fixture(name), fmt)]  # type: ignore[arg-type]


# -- formats -------------------------------------------------------------------------------


def test_claude_memory_index_takes_every_bullet() -> None:
    assert notes_of("claude-MEMORY.md", "claude") == [
        "Use pnpm, not npm, in this repository",
        "Tests need DATABASE_URL set; see [testing](testing.md)",
        "[Debugging notes](debugging.md) — how to attach to the worker",
        "`make build` before `make test`",
    ]


def test_claude_topic_file_skips_front_matter_fences_and_blank_bullets() -> None:
    assert notes_of("claude-topic-debugging.md", "claude") == [
        "Attach with `node --inspect-brk worker.js`",
        "Logs go to /tmp/worker.log",
        "Rotate them with `logrotate -f conf/logrotate.conf`",
        "Nested three deep: keep the last 5 files",
        "Star bullets are notes too",
    ]


def test_markdown_and_claude_read_alike() -> None:
    for name in ("claude-MEMORY.md", "claude-topic-debugging.md", "gemini-GEMINI.md"):
        assert notes_of(name, "markdown") == notes_of(name, "claude")


def test_gemini_takes_only_its_section() -> None:
    assert notes_of("gemini-GEMINI.md", "gemini") == [
        "The user prefers tabs over spaces",
        "Deploys go through `./scripts/deploy.sh staging`",
        "My favourite colour is blue",
    ]


def test_gemini_empty_section_has_no_notes() -> None:
    assert notes_of("gemini-empty-section.md", "gemini") == []
    assert notes_of("gemini-empty-section.md") == []  # auto picks gemini


def test_gemini_section_skips_fences_and_ends_at_a_level_one_or_two_heading() -> None:
    assert notes_of("gemini-fenced.md") == [
        "Real memory one",
        "Real memory two",
        "Real memory three",
    ]


def test_gemini_without_its_heading_has_no_notes() -> None:
    assert notes_of("claude-MEMORY.md", "gemini") == []


def test_hermes_entries_are_separated_by_section_sign_lines() -> None:
    assert notes_of("hermes-MEMORY.md", "hermes") == [
        "The project uses Python 3.12 and uv",
        "User prefers concise answers. Multi-line entries are one note: they keep going "
        "until the next separator.",
        "CI runs on GitHub Actions; secrets live in the org vault",
    ]
    assert notes_of("hermes-USER.md") == [
        "Name: Ada. Timezone: Europe/London.",
        "Likes small, reviewable commits",
    ]


def test_hermes_section_sign_inside_an_entry_does_not_split_it() -> None:
    text = "costs 5 § per seat\n§\nsecond"
    assert import_candidates(text, "hermes") == ["costs 5 § per seat", "second"]


def test_bom_and_crlf() -> None:
    raw = (FIXTURES / "notes-bom-crlf.md").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and b"\r\n" in raw  # the fixture is what it claims
    assert notes_of("notes-bom-crlf.md") == [
        "first CRLF note",
        "second CRLF note",
        "tab-indented nested note",
    ]
    assert notes_of("hermes-bom-crlf.md") == ["First entry, CRLF", "Second entry"]
    for note in notes_of("notes-bom-crlf.md") + notes_of("hermes-bom-crlf.md"):
        assert "\r" not in note and "\ufeff" not in note


def test_a_file_without_bullets_has_no_notes() -> None:
    assert notes_of("notes-empty.md") == []


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("gemini-GEMINI.md", "gemini"),
        ("gemini-empty-section.md", "gemini"),
        ("hermes-MEMORY.md", "hermes"),
        ("hermes-bom-crlf.md", "hermes"),
        ("claude-MEMORY.md", "markdown"),
        ("claude-topic-debugging.md", "markdown"),
        ("notes-bom-crlf.md", "markdown"),
    ],
)
def test_auto_picks_by_content(name: str, fmt: str) -> None:
    assert detect_format(fixture(name)) == fmt


def test_an_export_block_is_not_imported_back() -> None:
    body = recall_plan(["use pnpm"], [], 8192, True).body
    text = "# Agents\n\n- keep this\n\n" + "\n".join(block_lines(body)) + "\n"
    assert import_candidates(text) == ["keep this"]


def test_an_unclosed_fence_hides_the_rest() -> None:
    assert import_candidates("- before\n```\n- inside\n") == ["before"]


def test_a_backtick_line_with_backticks_in_its_info_is_not_a_fence() -> None:
    assert import_candidates("``` `x` ```\n- a note\n") == ["a note"]


# -- import --propose plan -------------------------------------------------------------------

AT = "2026-12-03T08:00:00Z"


def test_plan_import_proposals_writes_one_add_line_per_new_note() -> None:
    store = f"{HEADER}\n\n- use pnpm\n"
    long = "x" * 501
    plan = plan_import_proposals(
        store, "", ["Use pnpm.", "  tests need DB ", long, "new"], "me", AT, "s"
    )
    assert plan.added == ["tests need DB", "new"]
    assert plan.skipped == ["Use pnpm."] and plan.already_proposed == frozenset()
    assert plan.refused == [{"text": long, "error": "text is longer than 500 characters."}]
    first, second = plan.proposals
    assert plan.inbox == f"{serialise(first)}\n{serialise(second)}\n"
    assert first == {
        "id": first["id"],
        "action": "add",
        "text": "tests need DB",
        "by": "me",
        "at": AT,
    }
    assert first["id"] != second["id"] and len(first["id"]) == 8
    assert parse_inbox(plan.inbox).proposals == plan.proposals
    assert plan.waiting == 2 and plan.changed and not plan.full
    assert plan.result() == {"added": plan.added, "skipped": plan.skipped, "refused": plan.refused}


def test_plan_import_proposals_skips_what_already_waits_and_keeps_every_line() -> None:
    waiting = {"id": "0000abcd", "action": "add", "text": "tests need DB", "by": "x", "at": AT}
    forget = {"id": "0000abce", "action": "forget", "text": "new", "by": "x", "at": AT}
    inbox = f"{serialise(waiting)}\nnot json\n{serialise(forget)}\n"  # type: ignore[arg-type]
    candidates = ["Tests need DB!", "new", "New.", "other"]
    plan = plan_import_proposals("", inbox, candidates, "me", AT, "s")
    # A waiting add with the same near-duplicate key: skipped; a forget is not an add.
    assert plan.added == ["new", "other"]
    assert plan.skipped == ["Tests need DB!", "New."]
    assert plan.already_proposed == frozenset({"Tests need DB!"})
    assert plan.inbox.startswith(inbox)  # the bad line and the waiting ones, byte for byte
    assert [p["id"] for p in parse_inbox(plan.inbox).proposals][:2] == ["0000abcd", "0000abce"]
    assert plan.waiting == 4
    text = proposal_summary(plan.result(), plan.already_proposed, plan.waiting)
    assert text == (
        "Proposed 2 for review, skipped 2, refused 0.\n+ new\n+ other\n"
        "= Tests need DB! (already proposed)\n= New. (already stored)\n4 waiting for review."
    )


def test_plan_import_proposals_of_nothing_new_leaves_the_inbox_as_it_is() -> None:
    inbox = "not json\r\n"
    plan = plan_import_proposals(f"{HEADER}\n\n- a\n", inbox, ["A."], "me", AT, "s")
    assert not plan.changed and plan.inbox == inbox and plan.waiting == 0
    assert (
        proposal_summary(plan.result())
        == "Proposed 0 for review, skipped 1, refused 0.\n= A. (already stored)"
    )


def test_plan_import_proposals_past_the_inbox_cap_is_full() -> None:
    lines = [
        serialise({"id": f"{i:08x}", "action": "add", "text": f"w{i}", "by": "x", "at": AT})  # type: ignore[typeddict-item]
        for i in range(MAX_PROPOSALS - 1)
    ]
    inbox = "".join(f"{line}\n" for line in lines)
    assert not plan_import_proposals("", inbox, ["a"], "me", AT, "s").full  # exactly 200
    plan = plan_import_proposals("", inbox, ["a", "b"], "me", AT, "s")
    assert plan.full and plan.waiting == MAX_PROPOSALS + 1
    error = full_message("project")
    assert plan.refused_whole(error) == {
        "added": [],
        "skipped": [],
        "refused": [{"text": "a", "error": error}, {"text": "b", "error": error}],
    }


# -- import plan ---------------------------------------------------------------------------


def test_plan_import_adds_skips_and_refuses() -> None:
    store = f"{HEADER}\n\n- use pnpm\n"
    long = "x" * 501
    plan = plan_import(store, ["Use pnpm.", "tests need DB", "Tests need DB!", long, "  ", "new"])
    assert plan.added == ["tests need DB", "new"]
    assert plan.skipped == ["Use pnpm.", "Tests need DB!"]
    assert plan.refused == [{"text": long, "error": "text is longer than 500 characters."}]
    assert plan.content == f"{HEADER}\n\n- use pnpm\n- tests need DB\n- new\n"
    assert plan.result() == {"added": plan.added, "skipped": plan.skipped, "refused": plan.refused}


def test_plan_import_into_an_empty_store_writes_the_header() -> None:
    assert plan_import("", ["a", "b"]).content == f"{HEADER}\n\n- a\n- b\n"


def test_plan_import_keeps_crlf_and_bom() -> None:
    store = f"\ufeff{HEADER}\r\n\r\n- a\r\n\r\n\r\n"
    assert plan_import(store, ["b"]).content == f"\ufeff{HEADER}\r\n\r\n- a\r\n- b\r\n"


def test_plan_import_of_nothing_new_changes_nothing() -> None:
    store = f"{HEADER}\n\n- a\n\n\n"
    plan = plan_import(store, ["A.", "a"])
    assert not plan.changed and plan.content == store and plan.skipped == ["A.", "a"]


def test_over_long_is_listed_whole_never_truncated() -> None:
    long = "é" * 600
    plan = plan_import("", [long])
    assert plan.refused[0]["text"] == long and not plan.added


def test_over_the_cap_is_refused_whole() -> None:
    notes = [f"{i:03d} " + "é" * 480 for i in range(300)]
    plan = plan_import("", notes)
    assert plan.over_cap and plan.size > MAX_STORE_BYTES
    whole = plan.refused_whole("too big")
    assert whole["added"] == [] and len(whole["refused"]) == 300
    assert {r["error"] for r in whole["refused"]} == {"too big"}


def test_import_summary() -> None:
    text = import_summary(
        {"added": ["a"], "skipped": ["b"], "refused": [{"text": "c", "error": "why"}]}
    )
    assert text.splitlines() == [
        "Imported 1, skipped 1, refused 1.",
        "+ a",
        "= b (already stored)",
        "! c (why)",
    ]


def test_import_and_proposal_summaries_show_hidden_characters_escaped() -> None:
    # A person reads the summary: a zero-width space or a tag character is shown.
    result: ImportResult = {
        "added": ["use\u200bpnpm"],
        "skipped": ["a\U000e0041"],
        "refused": [{"text": "b\u202ec", "error": "why"}],
    }
    expected = ["+ use\\u200bpnpm", "= a\\U000e0041 (already stored)", "! b\\u202ec (why)"]
    assert import_summary(result).splitlines()[1:] == expected
    assert proposal_summary(result).splitlines()[1:-1] == expected  # then the count waiting


@given(st.text(max_size=300))
def test_any_text_parses_in_every_format(text: str) -> None:
    for fmt in ("auto", "markdown", "claude", "gemini", "hermes"):
        for raw in import_candidates(text, fmt):  # type: ignore[arg-type]
            assert normalise(raw)
    plan = plan_import("", import_candidates(text))
    assert len(plan.added) == len({n.lower().rstrip(".!?,;:").strip() for n in plan.added})


# -- export --------------------------------------------------------------------------------

BODY = recall_plan(["use pnpm"], ["answer in English"], 8192, True).body
BLOCK = "\n".join(block_lines(BODY))


def test_block_lines_are_the_markers_around_the_body() -> None:
    assert BODY is not None
    assert block_lines(BODY) == [EXPORT_BEGIN, *BODY.split("\n"), EXPORT_END]
    assert block_lines(None) == [EXPORT_BEGIN, EXPORT_END]
    assert EXPORT_BEGIN == (
        "<!-- memory-ls:begin (generated from memory.md by memory-ls export; "
        "edit the notes there) -->"
    )
    assert EXPORT_END == "<!-- memory-ls:end -->"


def test_export_creates_a_missing_file() -> None:
    plan = plan_export(None, BODY)
    assert plan.status == "created" and plan.content == BLOCK + "\n"


def test_export_adds_the_block_after_the_prose() -> None:
    prose = "# Agents\n\nRun `make test`."
    plan = plan_export(prose, BODY)
    assert plan.status == "added"
    assert plan.content == prose + "\n\n" + BLOCK + "\n"
    assert plan_export(prose + "\n\n", BODY).content == prose + "\n\n" + BLOCK + "\n"


def test_export_keeps_prose_byte_for_byte_and_crlf() -> None:
    before = "\ufeff# Agents\r\n\r\nintro  \r\n"
    after = "\r\nmore prose\r\n  trailing\t\r\n"
    old = "\r\n".join(block_lines(recall_plan(["old"], [], 8192, True).body))
    plan = plan_export(before + old + after, BODY)
    assert plan.status == "stale"
    assert plan.content == before + "\r\n".join(block_lines(BODY)) + after


def test_export_keeps_a_mixed_file_byte_for_byte_outside_the_block() -> None:
    text = "a\r\nb\nc\r\n" + BLOCK.replace("use pnpm", "old") + "\nd\r\n"
    plan = plan_export(text, BODY)
    assert plan.content == "a\r\nb\nc\r\n" + "\r\n".join(block_lines(BODY)) + "\nd\r\n"


def test_export_is_idempotent() -> None:
    once = plan_export("# Agents\n", BODY).content
    again = plan_export(once, BODY)
    assert again.status == "current" and not again.changed and again.content == once
    crlf = plan_export("# Agents\r\n", BODY).content
    assert plan_export(crlf, BODY).status == "current"


def test_a_hand_edited_block_is_replaced_and_told_apart() -> None:
    edited = BLOCK.replace("[MEMORY]", "[MEMORY]\nI added this line by hand")
    plan = plan_export("x\n" + edited + "\n", BODY)
    assert plan.status == "edited" and plan.content == "x\n" + BLOCK + "\n"
    assert plan_export(BLOCK.replace("use pnpm", "use npm"), BODY).status == "stale"


def test_no_body_leaves_the_markers_alone() -> None:
    plan = plan_export("x\n" + BLOCK + "\n", None)
    assert plan.content == f"x\n{EXPORT_BEGIN}\n{EXPORT_END}\n"
    assert plan_export(plan.content, None).status == "current"


@pytest.mark.parametrize(
    "text",
    [
        f"{EXPORT_BEGIN}\nno end\n",
        f"no begin\n{EXPORT_END}\n",
        f"{BLOCK}\n{BLOCK}\n",
        f"{EXPORT_BEGIN}\n{EXPORT_BEGIN}\n{EXPORT_END}\n",
    ],
)
def test_markers_that_do_not_pair_up_are_refused(text: str) -> None:
    with pytest.raises(ExportError):
        plan_export(text, BODY)


def test_find_block_reports_its_lines() -> None:
    block = find_block("a\n\n" + BLOCK + "\nz\n")
    assert block is not None and block.first_line == 2
    assert block.last_line == 2 + len(block_lines(BODY)) - 1


@pytest.mark.parametrize(
    ("inner", "generated"),
    [
        ([], True),
        (BODY.split("\n") if BODY else [], True),
        (["[MEMORY]", "something else"], False),
        (["[MEMORY]", BODY.split("\n")[1] if BODY else "", "global:", "project:"], False),
        (["hand-written prose"], False),
    ],
)
def test_looks_generated(inner: list[str], generated: bool) -> None:
    assert looks_generated(inner) is generated


def test_a_body_with_a_tail_looks_generated() -> None:
    body = recall_plan([f"note {i} " + "x" * 400 for i in range(40)], [], 512, True).body
    assert body is not None and "more; use the memory tool" in body
    assert looks_generated(body.split("\n"))


# -- export-stale (the language server's diagnostic on an instruction file) ----------------


def test_export_stale_finding_and_its_fix_from_wire_data() -> None:
    lines = ["# Agents", "", *BLOCK.replace("use pnpm", "use npm").split("\n"), "tail"]
    finding = export_stale_finding(lines, "\r\n", BODY)
    assert finding is not None and finding.code == "export-stale"
    assert (finding.line, finding.start) == (2, 0)
    assert (finding.end_line, finding.end) == (len(lines) - 2, len(EXPORT_END))
    (fix,) = quick_fixes(lines, "export-stale", wire_data(finding)) or []
    assert fix.preferred and fix.title == "Rewrite the memory-ls block from memory.md"
    (edit,) = fix.edits
    assert edit.new_text == "\r\n".join(block_lines(BODY))
    fixed = apply_edits(lines, fix.edits)
    assert fixed.replace("\r\n", "\n") == "\n".join(["# Agents", "", BLOCK, "tail"])


def test_export_stale_finding_is_none_when_current_missing_or_malformed() -> None:
    assert export_stale_finding(["# A", *BLOCK.split("\n")], "\n", BODY) is None
    assert export_stale_finding(["# A", "no block"], "\n", BODY) is None
    assert export_stale_finding([EXPORT_BEGIN, "- x"], "\n", BODY) is None


def test_export_stale_fix_does_not_apply_to_moved_lines() -> None:
    lines = [*BLOCK.replace("use pnpm", "old").split("\n")]
    finding = export_stale_finding(lines, "\n", BODY)
    assert finding is not None
    assert quick_fixes(["# inserted above", *lines], "export-stale", wire_data(finding)) == []


def test_edited_block_message() -> None:
    finding = export_stale_finding([EXPORT_BEGIN, "mine", EXPORT_END], "\n", BODY)
    assert finding is not None and "edited by hand" in finding.message
    assert finding.data["status"] == "edited"  # type: ignore[typeddict-item]


@given(st.text(max_size=200), st.text(max_size=200), st.sampled_from(["\n", "\r\n"]))
def test_export_keeps_any_prose_byte_for_byte(before: str, after: str, eol: str) -> None:
    for text in (before, after):
        for line in text.replace("\r\n", "\n").split("\n"):
            if line.strip() in (EXPORT_BEGIN, EXPORT_END):
                return
    added = plan_export(before, BODY)
    assert added.content.startswith(before)
    assert plan_export(added.content, BODY).status == "current"
    old = eol.join(block_lines(recall_plan(["old"], [], 8192, True).body))
    text = f"{before}{eol}{old}{eol}{after}"
    replaced = plan_export(text, BODY)
    assert replaced.status == "stale"
    new_eol = split_text(text).eol
    assert replaced.content == f"{before}{eol}{new_eol.join(block_lines(BODY))}{eol}{after}"
    assert plan_export(replaced.content, BODY).status == "current"


def test_a_body_holding_an_over_long_note_looks_generated() -> None:
    body = recall_plan(["y" * 600], [], 8192, True).body
    assert body is not None and looks_generated(body.split("\n"))
    assert not looks_generated(["[MEMORY]", INTRO, "project:", "-  two  spaces"])
