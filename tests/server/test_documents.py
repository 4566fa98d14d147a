"""The editor's incremental document state always equals a fresh parse of its text,
and its incremental findings, similar pairs and encoded diagnostics a fresh analysis.

A lone CR is left out of the alphabet: a buffer whose line ends in CR, followed by
the document's LF, reads differently after a fresh split (CRLF); see docs/lsp.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_ls.core.checks import Finding
from memory_ls.server.diagnostics import SEVERITY_NUMBER, Analysis, DocState
from memory_ls.server.documents import MemoryDocument, Span
from memory_ls.server.positions import to_client
from memory_ls.server.settings import Settings
from memory_ls.server.workspace import Projects
from tests.conftest import Workspace

PIECES = st.sampled_from(
    [
        "- ",
        "-  ",
        "* ",
        "  - ",
        "\t* ",
        "note",
        "Note.",
        "dup",
        "Dup!",
        "😀",
        "日本語",
        "\u200b",
        "\x07",
        " ",
        "\t",
        "\n",
        "\r\n",
        "x" * 30,
        "prose",
        "<!-- h -->",
    ]
)
TEXT = st.lists(PIECES, max_size=40).map("".join)


def fresh_state(doc: MemoryDocument) -> tuple[object, ...]:
    fresh = MemoryDocument(doc.uri, doc.path, doc.text(), doc.version)
    return state_of(fresh)


def state_of(doc: MemoryDocument) -> tuple[object, ...]:
    return (
        doc.lines,
        doc.bullets,
        doc.key_lines,
        doc.dup_keys,
        doc.found,
        doc.notes(),
        doc._note_lines,  # (after notes(): how an edit finds a note to update in place)
    )


@settings(max_examples=300, deadline=None)
@given(data=st.data(), start=TEXT, encoding=st.sampled_from(["utf-8", "utf-16", "utf-32"]))
def test_incremental_edits_equal_a_fresh_parse(
    data: st.DataObject, start: str, encoding: str
) -> None:
    doc = MemoryDocument("file:///p/.pi/memory.md", Path("/p/.pi/memory.md"), start, 1)
    for step in range(data.draw(st.integers(1, 8))):
        line = data.draw(st.integers(0, len(doc.lines) - 1))
        random_edit(data, doc, line, False, encoding, TEXT)
        doc.version = step + 2
        assert state_of(doc) == fresh_state(doc)


# -- findings, similar pairs and their encoded form ----------------------------------------

NOTES = st.sampled_from(
    [
        "alpha beta gamma delta",
        "Alpha beta gamma delta!",
        "alpha beta gamma deltas",
        "alpha beta gamma delt",
        "epsilon zeta eta theta",
        "epsilon zeta eta thetas",
        "shared with global",
        "y" * 120,
        "note 😀 here",
        "zero\u200bwidth",
        "bell\x07",
        "",
        " ",
    ]
)
LINE = st.tuples(st.sampled_from(["- ", "* ", "-  ", "  - ", "", "# "]), NOTES).map("".join)
NOTES_TEXT = st.lists(LINE, max_size=12).map("\n".join)
"""Whole lines of notes that repeat, paraphrase each other and the global store."""
TYPED = st.lists(
    st.sampled_from(["a", "s", "!", ".", " ", "😀", "xxxxx", "- ", "\x07"]), max_size=3
)
INLINE_TEXT = TYPED.map("".join)
"""What a keystroke or a paste within a line inserts."""
GLOBAL_NOTES = ["Shared with global.", "something else entirely"]


def analysed(projects: Projects, doc: MemoryDocument) -> tuple[Analysis, DocState]:
    """An analysis of ``doc`` with its similar pairs computed in full, as on open."""
    projects.open(doc)
    analysis = Analysis(projects)
    info = projects.describe(doc.path)
    assert info is not None
    state = DocState(info)
    analysis.states[doc.uri] = state
    state.set_similar(analysis.all_pairs(analysis.similar_snapshot(doc), 85.0))
    state.similar_ready = True
    return analysis, state


def random_edit(
    data: st.DataObject,
    doc: MemoryDocument,
    line: int,
    in_line: bool,
    encoding: str,
    text: st.SearchStrategy[str] | None = None,
) -> None:
    """Draw an edit from ``line`` (within it, or over up to three lines) and apply it;
    what it inserts is drawn from ``text``, else a keystroke's or whole lines of notes."""
    lines = doc.lines
    end_line = line if in_line else data.draw(st.integers(line, min(len(lines) - 1, line + 2)))
    char = data.draw(st.integers(0, len(lines[line])))
    end_char = data.draw(st.integers(0, len(lines[end_line])))
    if end_line == line and end_char < char:
        char, end_char = end_char, char
    if text is None:
        text = INLINE_TEXT if in_line else NOTES_TEXT
    new_text = data.draw(text)
    span = Span(
        line,
        to_client(lines[line], char, encoding),
        end_line,
        to_client(lines[end_line], end_char, encoding),
    )
    doc.apply_change(span, new_text, encoding)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data(), start=NOTES_TEXT, encoding=st.sampled_from(["utf-8", "utf-16"]))
def test_incremental_findings_and_similar_pairs_equal_a_fresh_analysis(
    workspace: Workspace, data: st.DataObject, start: str, encoding: str
) -> None:
    """After random edits (publishing or not between them, the similar pass catching
    up or not), the diagnostics and the similar pairs are what a fresh analysis of the
    same text finds: speed never costs correctness (issue 11)."""
    (workspace.agent_dir / "bytefly.json").write_text('{"memory": {"maxInjectBytes": 512}}')
    workspace.write("global", GLOBAL_NOTES)
    path = workspace.write("project", "")
    settings_ = Settings(agent_dir=str(workspace.agent_dir), trusted=True)
    projects = Projects()
    projects.configure(settings_, [workspace.root])
    doc = MemoryDocument(path.as_uri(), path, start, 1)
    analysis, _ = analysed(projects, doc)
    analysis.encoding = encoding
    analysis.encoded(doc)
    for step in range(data.draw(st.integers(1, 8))):
        line = data.draw(st.integers(0, len(doc.lines) - 1))
        random_edit(data, doc, line, data.draw(st.booleans()), encoding)
        doc.version = step + 2
        if data.draw(st.booleans()):
            analysis.encoded(doc)  # a publish between edits
        if data.draw(st.booleans()):
            analysis.similar_incremental(doc)  # the similar pass after a pause
    analysis.similar_incremental(doc)
    assert_as_fresh(workspace, analysis, doc)


def assert_as_fresh(workspace: Workspace, analysis: Analysis, doc: MemoryDocument) -> None:
    """``analysis`` of ``doc`` (after edits) equals a fresh analysis of its text."""
    state = analysis.states[doc.uri]
    again = Projects()
    again.configure(analysis.projects.settings, [workspace.root])
    fresh_doc = MemoryDocument(doc.uri, doc.path, doc.text(), doc.version)
    fresh, fresh_state = analysed(again, fresh_doc)
    fresh.encoding = analysis.encoding
    assert state.similar == fresh_state.similar
    # Hints on one note may come in any order; the encoded list's order is compared below.
    assert sorted(map(repr, analysis.findings(doc))) == sorted(map(repr, fresh.findings(fresh_doc)))
    assert analysis.encoded(doc) == fresh.encoded(fresh_doc)
    assert analysis.items(doc) == fresh.items(fresh_doc)
    # And the bytes (spliced from templates after lines moved) are each finding's own
    # diagnostic, encoded directly.
    severity = analysis.projects.settings.severity
    direct = [
        analysis.diagnostic(doc, f, SEVERITY_NUMBER[level])
        for f in analysis.findings(doc)
        if (level := severity.get(f.code) or f.severity) != "off"
    ]
    assert sorted(map(json.dumps, analysis.items(doc))) == sorted(map(json.dumps, direct))
    # Byte for byte as `json.dumps` writes them (the templates are written directly).
    items = analysis.items(doc)
    assert analysis.encoded(doc) == b", ".join(json.dumps(item).encode() for item in items)


def open_analysed(workspace: Workspace, text: str) -> tuple[Analysis, MemoryDocument]:
    """The project store holding ``text``, open and analysed (global notes: GLOBAL_NOTES)."""
    (workspace.agent_dir / "bytefly.json").write_text('{"memory": {"maxInjectBytes": 512}}')
    workspace.write("global", GLOBAL_NOTES)
    path = workspace.write("project", "")
    projects = Projects()
    projects.configure(Settings(agent_dir=str(workspace.agent_dir), trusted=True), [workspace.root])
    doc = MemoryDocument(path.as_uri(), path, text, 1)
    analysis, _ = analysed(projects, doc)
    analysis.encoded(doc)
    return analysis, doc


def type_at(doc: MemoryDocument, line: int, column: int, text: str) -> None:
    doc.apply_change(Span(line, column, line, column), text, "utf-16")


def test_a_note_that_keeps_its_key_updates_the_hints_that_quote_it(workspace: Workspace) -> None:
    analysis, doc = open_analysed(workspace, "- alpha beta gamma delta\n- alpha beta gamma deltas")
    assert any(f.code == "similar" for f in analysis.findings(doc))
    type_at(doc, 0, 1, " ")  # the note moves one column right; its key is the same
    type_at(doc, 0, len(doc.lines[0]), "!")  # and its text changes, its key does not
    analysis.similar_incremental(doc)
    assert_as_fresh(workspace, analysis, doc)


def test_typing_in_a_left_out_note_moves_the_end_of_its_run(workspace: Workspace) -> None:
    notes = ["- " + "y" * 120 + str(i) for i in range(6)]
    analysis, doc = open_analysed(workspace, "\n".join(notes))
    runs = [f for f in analysis.findings(doc) if f.code == "not-injected"]
    assert runs and runs[-1].end_line == 5
    type_at(doc, 5, len(doc.lines[5]), "z")
    analysis.encoded(doc)
    analysis.similar_incremental(doc)
    assert_as_fresh(workspace, analysis, doc)


def test_lines_added_and_removed_between_publishes_equal_a_fresh_analysis(
    workspace: Workspace,
) -> None:
    """The edits of the e2e test ``test_incremental_edits_match_a_fresh_open``, in process,
    with a publish after each and the similar pass catching up at the end."""
    notes = [f"- note {i} about 日本 😀 things" for i in range(30)] + [
        "- note 3 about 日本 😀 things"
    ]
    analysis, doc = open_analysed(workspace, "\n".join(notes) + "\n")
    for span, text in [
        (Span(5, 2, 5, 8), "note 9"),
        (Span(7, 0, 7, 0), "- new\n-  \n"),
        (Span(12, 0, 15, 0), ""),
        (Span(2, 0, 2, 0), "- tab\there\n"),
        (Span(20, 3, 20, 3), "x"),
    ]:
        doc.apply_change(span, text, "utf-16")
        analysis.encoded(doc)
    analysis.similar_incremental(doc)
    assert_as_fresh(workspace, analysis, doc)


def test_a_run_ending_on_a_line_whose_character_became_an_emoji_is_encoded_again(
    workspace: Workspace,
) -> None:
    """Same ``str`` length, one more UTF-16 unit: the run's end column moves on the wire."""
    notes = ["- " + "y" * 120 + str(i) for i in range(6)]
    analysis, doc = open_analysed(workspace, "\n".join(notes))
    before = [d for d in analysis.items(doc) if d["code"] == "not-injected"][-1]
    assert before["range"]["end"]["line"] == 5
    end = before["range"]["end"]["character"]
    doc.apply_change(Span(5, end - 1, 5, end), "😀", "utf-16")
    after = [d for d in analysis.items(doc) if d["code"] == "not-injected"][-1]
    assert after["range"]["end"]["character"] == end + 1
    analysis.similar_incremental(doc)
    assert_as_fresh(workspace, analysis, doc)


def test_hints_that_only_moved_are_spliced_with_their_new_line_numbers(
    workspace: Workspace,
) -> None:
    """A line added or removed above a ``duplicate`` and a ``similar`` pair (one pair on
    each side of the edit, one across it): their encoded form is reused with the new line
    numbers, also in the message, even when the note itself quotes "on line N" (the
    number a message names comes before the note's text) or holds a NUL (no hole then)."""
    notes = [
        "- fix it on line 2 first alpha beta",
        "- fix it on line 2 first alpha betas",
        "- Fix it on line 2 first alpha beta!",
        "- filler one",
        "- a nul \x00 here on line 5 gamma",
        "- a nul \x00 here on line 5 gammas",
        "- filler two",
        "- fix it on line 2 first alpha beta",
        "- on line 9 delta epsilon zeta",
        "- on line 9 delta epsilon zetas",
    ]
    analysis, doc = open_analysed(workspace, "\n".join(notes))
    codes = [d["code"] for d in analysis.items(doc)]
    assert codes.count("duplicate") >= 2 and codes.count("similar") >= 3
    for span, text in [
        (Span(3, 0, 3, 0), "- new line\n"),  # every pair after it moves down
        (Span(0, 0, 0, 0), "\n\n"),  # and again, from the top
        (Span(6, 0, 7, 0), ""),  # the line between a pair: one side moves, not the other
        (Span(1, 0, 3, 0), ""),
    ]:
        doc.apply_change(span, text, "utf-16")
        analysis.encoded(doc)
        assert_as_fresh(workspace, analysis, doc)


def test_templates_are_made_when_lines_first_move_and_spliced_after(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store's first publish and an edit in place encode each diagnostic as it is (no
    template); the first edit that moves lines makes the templates of the lines that
    moved, and the next one that moves them only splices their new numbers in."""
    made: list[int] = []
    template = Analysis._template

    def counted(self: Analysis, doc: MemoryDocument, f: Finding, *rest: Any) -> bytes:
        made.append(f.line)
        return template(self, doc, f, *rest)

    monkeypatch.setattr(Analysis, "_template", counted)
    fillers = ["apples are red", "the sky is blue", "use pnpm", "tabs, not spaces", "make"]
    notes = [f"- {filler}" for filler in fillers] + [
        "- deploy with the blue pipeline on fridays",
        "- Deploy with the blue pipeline on Fridays!",
        "- deploy with the blue pipeline on fridays",
    ]
    analysis, doc = open_analysed(workspace, "\n".join(notes))
    assert [d["code"] for d in analysis.items(doc)].count("duplicate") == 2
    assert made == []  # (the duplicates, and the notes the 512-byte budget leaves out)
    type_at(doc, 0, 3, "x")  # in place
    analysis.encoded(doc)
    assert made == []
    doc.apply_change(Span(0, 0, 0, 0), "\n", "utf-16")  # every diagnostic moves down
    analysis.encoded(doc)
    moved = sorted(d["range"]["start"]["line"] for d in analysis.items(doc))
    assert sorted(made) == moved and {7, 8} <= set(moved)
    assert_as_fresh(workspace, analysis, doc)
    made.clear()
    doc.apply_change(Span(0, 0, 0, 0), "\n\n", "utf-16")  # and again: spliced
    analysis.encoded(doc)
    assert made == []
    assert_as_fresh(workspace, analysis, doc)


SPLICED = [
    "- fix it on line 9 first alpha beta 😀",
    "- fix it on line 9 first alpha betas 😀",
    "- Fix it on line 9 first alpha beta 😀!",
    "- 日本語のノート gamma delta epsilon",
    "- 日本語のノート gamma delta epsilons",
    "- fix it on line 9 first alpha beta 😀",
    "- é on line 99 zeta eta theta",
    "- é on line 99 zeta eta thetas",
]
"""Pairs (``duplicate`` and ``similar``) whose ranges, related ranges, ``firstLine`` and
"on line N" are spliced when lines move, on lines whose columns differ per encoding."""


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    data=st.data(),
    border=st.sampled_from([9, 99, 999]),
    encoding=st.sampled_from(["utf-8", "utf-16", "utf-32"]),
)
def test_line_numbers_spliced_across_a_digit_border_equal_a_fresh_analysis(
    workspace: Workspace, data: st.DataObject, border: int, encoding: str
) -> None:
    """The notes of several pairs sit around line ``border`` (9, 99, 999: a number that
    gains or loses a digit), then lines are inserted and removed above them, between the
    notes of a pair (its first note moves, its second does not, or the other way) and
    below, several lines at once, with a publish after each edit: each publish is what a
    fresh analysis of the same text encodes, in every position encoding."""
    above = border - 3
    text = "\n" * above + "\n".join(SPLICED) + "\n"
    analysis, doc = open_analysed(workspace, text)
    analysis.encoding = encoding
    analysis.encoded(doc)
    for _ in range(data.draw(st.integers(1, 5))):
        last = len(doc.lines) - 1
        near = st.integers(max(0, above - 3), min(last, above + len(SPLICED) + 1))
        line = data.draw(near | st.integers(0, last))
        if data.draw(st.booleans()):
            count = data.draw(st.integers(1, 3))
            added = data.draw(st.sampled_from(["", "- new note here", "- 😀 x"]))
            doc.apply_change(Span(line, 0, line, 0), (added + "\n") * count, encoding)
        else:
            end = min(last, line + data.draw(st.integers(1, 3)))
            doc.apply_change(Span(line, 0, end, 0), "", encoding)
        # The publish that splices, before the similar pass has looked at the new notes:
        # a fresh analysis holding the same pairs encodes the same bytes.
        spliced = analysis.encoded(doc)
        again = Projects()
        again.configure(analysis.projects.settings, [workspace.root])
        fresh_doc = MemoryDocument(doc.uri, doc.path, doc.text(), doc.version)
        fresh, fresh_state = analysed(again, fresh_doc)
        fresh.encoding = encoding
        fresh_state.set_similar(dict(analysis.states[doc.uri].similar))
        assert spliced == fresh.encoded(fresh_doc)
        analysis.similar_incremental(doc)  # the similar pass, after a pause
        assert_as_fresh(workspace, analysis, doc)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), start=TEXT)
def test_the_notes_an_edit_changed_are_the_notes_that_differ(
    data: st.DataObject, start: str
) -> None:
    # What the recall plan is told changed (instead of comparing every note) is exactly
    # what did, or nothing at all: never a note missed, whatever the edits in between.
    doc = MemoryDocument("file:///p/.pi/memory.md", Path("/p/.pi/memory.md"), start, 1)
    given = [doc.notes()]
    for _ in range(data.draw(st.integers(1, 8))):
        lines = doc.lines
        line = data.draw(st.integers(0, len(lines) - 1))
        char = data.draw(st.integers(0, len(lines[line])))
        if data.draw(st.booleans()):  # a keystroke within a line, or any edit
            end_line, end_char, text = line, char, data.draw(INLINE_TEXT)
        else:
            end_line = data.draw(st.integers(line, min(len(lines) - 1, line + 2)))
            end_char = data.draw(st.integers(0, len(lines[end_line])))
            if end_line == line and end_char < char:
                char, end_char = end_char, char
            text = data.draw(TEXT)
        doc.apply_change(Span(line, char, end_line, end_char), text, "utf-32")
        if data.draw(st.booleans()):
            given.append(doc.notes())  # (asked between edits, or not)
    now = doc.notes()
    for earlier in given:
        changed = doc.notes_changed(earlier)
        if changed is not None:
            assert len(earlier) == len(now)
            assert changed == [
                i for i, (a, b) in enumerate(zip(earlier, now, strict=True)) if a != b
            ]
    assert doc.notes_changed(now) == []


SEVERITIES = st.dictionaries(
    st.sampled_from(
        [
            "duplicate",
            "not-injected",
            "similar",
            "blank-note",
            "control-characters",
            "too-long",
            "cross-scope-duplicate",
            "hidden-unicode",
            "conflict",
        ]
    ),
    st.sampled_from(["off", "error", "hint", "information", "warning"]),
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    data=st.data(),
    start=NOTES_TEXT,
    encoding=st.sampled_from(["utf-8", "utf-16"]),
    severity=SEVERITIES,
    cap=st.sampled_from([512, 600, 8192]),
)
def test_severities_off_blank_round_trips_and_moving_lines_equal_a_fresh_analysis(
    workspace: Workspace,
    data: st.DataObject,
    start: str,
    encoding: str,
    severity: dict[str, Any],
    cap: int,
) -> None:
    """As above, with the user's severities (some codes off: a line may have findings and
    no diagnostic), budgets that leave runs of notes out, and a note turned blank and back
    between two publishes (lines that hold nothing encoded, then something again)."""
    (workspace.agent_dir / "bytefly.json").write_text(
        json.dumps({"memory": {"maxInjectBytes": cap}})
    )
    workspace.write("global", GLOBAL_NOTES)
    path = workspace.write("project", "")
    settings_ = Settings(agent_dir=str(workspace.agent_dir), trusted=True, severity=severity)
    projects = Projects()
    projects.configure(settings_, [workspace.root])
    doc = MemoryDocument(path.as_uri(), path, start, 1)
    analysis, _ = analysed(projects, doc)
    analysis.encoding = encoding
    analysis.encoded(doc)
    for step in range(data.draw(st.integers(1, 10))):
        lines = doc.lines
        line = data.draw(st.integers(0, len(lines) - 1))
        op = data.draw(st.sampled_from(["inline", "lines", "blank"]))
        if op == "blank":
            old = lines[line]
            doc.apply_change(
                Span(line, 0, line, to_client(old, len(old), encoding)), "-  ", encoding
            )
            if data.draw(st.booleans()):
                analysis.encoded(doc)
            doc.apply_change(Span(line, 0, line, 3), old, encoding)
        else:
            random_edit(data, doc, line, op == "inline", encoding)
        doc.version = step + 2
        if data.draw(st.booleans()):
            analysis.encoded(doc)
        if data.draw(st.booleans()):
            analysis.similar_incremental(doc)
    analysis.similar_incremental(doc)
    assert_as_fresh(workspace, analysis, doc)
