"""Property tests over hostile text (SPEC §2, §3, §6).

The files are built from controls, emoji, CJK, RTL, CR/LF, BOMs, zero-width and
bidi characters, Unicode line separators and very long lines. Each action is
checked against what SPEC §3 allows it to change: nothing but bullets, except
that ``add`` trims the file's trailing whitespace and ``forget``/``merge``
collapse its trailing newlines.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from memory_ls.core.actions import (
    apply_add,
    apply_clear,
    apply_forget,
    apply_merge,
    apply_update,
    check_text,
)
from memory_ls.core.notes import parse_bullet, parse_notes
from memory_ls.core.recall import INTRO, MARKER, recall_plan
from memory_ls.core.text import (
    BOM,
    HEADER,
    MAX_STORE_BYTES,
    escape_unseen,
    near_duplicate_key,
    normalise,
    split_text,
    utf8_length,
    utf16_length,
)
from memory_ls.store.runtime import MemoryRuntime
from tests.conftest import new_project

PURE = settings(max_examples=200, deadline=None)
SLOW = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

PIECES = [
    "\x00", "\x1b", "\x1b[31m", "\t", "\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x7f",
    "\x85", "\x9f", "\u2028", "\u2029", "\u00a0", "\u3000", BOM, "\u200b", "\u200d",
    "\u202e", "\u2066", "\U000e0041", "😀", "👨‍👩‍👧", "日本語", "中文", "שלום",
    "مرحبا", "é", "e\u0301", "İ", "ß", "-", "*", " ", "  ", "- ", "* ", "-  ", ".",
    "!?", ",;:", "#", "<!--", "-->", "a", "note", "Use PNPM", "x" * 300,
]  # fmt: skip
PIECE = st.one_of(st.sampled_from(PIECES), st.text(max_size=4))
HOSTILE = st.lists(PIECE, max_size=12).map("".join)
"""Free text without line feeds is not promised: callers cut lines themselves."""

MARKERS = st.sampled_from(["- ", "* ", "-\t", "  - ", "\t* ", "-   ", "- - ", "* * "])
BULLET = st.builds(lambda m, t: m + t, MARKERS, HOSTILE)
LINE = st.one_of(BULLET, HOSTILE, st.sampled_from(["", "  ", "- ", "-  ", HEADER, "# Notes"]))


def _no_line_feeds(line: str) -> str:
    # A line may hold a lone CR, but not at its end: "b\r" + "\n" *is* a CRLF ending.
    return line.replace("\n", " ").rstrip("\r")


@st.composite
def files(draw: st.DrawFn) -> str:
    """A store's text: hostile lines, mixed or single endings, maybe a BOM."""
    lines = [_no_line_feeds(x) for x in draw(st.lists(LINE, max_size=14))]
    style = draw(st.sampled_from(["\n", "\r\n", "mixed"]))
    out = ""
    for i, line in enumerate(lines):
        out += line
        if i < len(lines) - 1 or draw(st.booleans()):
            out += draw(st.sampled_from(["\n", "\r\n"])) if style == "mixed" else style
    if draw(st.booleans()):
        out += draw(st.sampled_from(["\n\n\n", " \t\n", "\r\n\r\n", "  "]))
    return (BOM + out) if draw(st.booleans()) else out


def note_texts() -> st.SearchStrategy[str]:
    """Valid notes (normalised, not blank, at most 500 UTF-16 units)."""
    return HOSTILE.map(normalise).filter(lambda t: bool(t) and utf16_length(t) <= 500)


def nonbullets(content: str) -> list[str]:
    return [line for line in split_text(content).lines if parse_bullet(line) is None]


def without_trailing_empties(lines: list[str]) -> list[str]:
    while lines and lines[-1] == "":
        lines = lines[:-1]
    return lines


def assert_style_kept(old: str, new: str) -> None:
    # a BOM is kept; one is only added in front of a first line that starts with U+FEFF
    assert new.startswith(BOM) == old.startswith(BOM) or new.startswith(BOM + BOM)
    if split_text(old).eol == "\r\n":
        assert new.count("\n") == new.count("\r\n")
    else:
        assert "\r\n" not in new


def matching(content: str, note: str) -> bool:
    return any(b.note == note for line in split_text(content).lines if (b := parse_bullet(line)))


# -- text rules ------------------------------------------------------------------


@PURE
@given(st.one_of(HOSTILE, st.text()))
def test_normalise_yields_one_clean_line(text: str) -> None:
    note = normalise(text)
    assert normalise(note) == note
    assert note == note.strip()
    assert "  " not in note
    assert not any(c.isspace() and c != " " for c in note)
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in note)
    note.encode("utf-8")
    key = near_duplicate_key(note)
    assert key == normalise(key)
    # the key is the lowercased note less a tail made of end punctuation (and the space
    # trimmed before it); word order and inner punctuation are never touched
    lowered = note.lower()
    assert lowered.startswith(key)
    assert lowered[len(key) :].strip(".!?,;: ") == ""
    assert not lowered[len(key) :] or lowered[len(key) :].rstrip(" ")[-1] in ".!?,;:"


@PURE
@given(files())
def test_split_render_round_trip(content: str) -> None:
    split = split_text(content)
    assert all("\n" not in line for line in split.lines)
    rendered = split.render()
    body = content.removeprefix(BOM)
    if "\r\n" not in body or body.count("\n") == body.count("\r\n"):
        assert rendered == content
    assert split_text(rendered).lines == split.lines


@PURE
@given(files())
def test_parsed_notes_are_normalised(content: str) -> None:
    for note in parse_notes(content):
        assert note
        assert normalise(note) == note


# -- every non-bullet line survives --------------------------------------------------


@PURE
@given(files(), note_texts())
def test_add(content: str, note: str) -> None:
    change = apply_add(content, note)
    assert change.error is None
    notes = parse_notes(content)
    duplicates = [n for n in notes if near_duplicate_key(n) == near_duplicate_key(note)]
    if duplicates:
        assert not change.changed
        assert change.content == content
        assert change.existing == duplicates[0]
        return
    new = change.content
    assert change.changed
    assert parse_notes(new) == [*notes, note]
    assert_style_kept(content, new)
    eol = split_text(content).eol
    assert new.endswith(f"{eol}- {note}{eol}")
    trimmed = "\n".join(split_text(content).lines).rstrip()
    if trimmed:
        # everything but the file's trailing whitespace is kept, then "- note"
        assert split_text(new).lines == [*trimmed.split("\n"), f"- {note}", ""]
    else:
        assert new.removeprefix(BOM) == f"{HEADER}{eol}{eol}- {note}{eol}"
    # the non-bullet lines, trailing whitespace aside, are exactly the old ones
    expected = [x for x in trimmed.split("\n") if parse_bullet(x) is None] if trimmed else []
    got = [x for x in "\n".join(split_text(new).lines).rstrip().split("\n")]
    got_nonbullets = [x for x in got if parse_bullet(x) is None]
    assert got_nonbullets == (expected if trimmed else [HEADER, ""])


@PURE
@given(files(), note_texts())
def test_add_then_forget_restores_the_notes(content: str, note: str) -> None:
    added = apply_add(content, note)
    assume(added.changed)
    removed = apply_forget(added.content, note, "project")
    assert removed.changed
    assert removed.error is None
    assert parse_notes(removed.content) == parse_notes(content)
    trimmed = "\n".join(split_text(content).lines).rstrip()
    survivors = [x for x in trimmed.split("\n") if parse_bullet(x) is None] if trimmed else []
    got = without_trailing_empties(nonbullets(removed.content))
    assert got == (without_trailing_empties(survivors) if trimmed else [HEADER])


@PURE
@given(files(), st.data())
def test_update(content: str, data: st.DataObject) -> None:
    notes = parse_notes(content)
    text = data.draw(st.sampled_from(notes) if notes else note_texts())
    to = data.draw(note_texts())
    change = apply_update(content, text, to, "project")
    if text not in notes:
        assert change.error == f"No project memory note matches: {escape_unseen(text)}"
        assert change.content == content
        return
    assert change.error is None
    if text == to:
        assert not change.changed
        assert change.content == content
        return
    new = change.content
    assert change.changed
    assert parse_notes(new) == [to if n == text else n for n in notes]
    assert nonbullets(new) == nonbullets(content)  # update never tidies
    old_lines, new_lines = split_text(content).lines, split_text(new).lines
    assert len(old_lines) == len(new_lines)
    for old_line, new_line in zip(old_lines, new_lines, strict=True):
        b = parse_bullet(old_line)
        if b is not None and b.note == text:
            assert new_line == f"{b.indent}{b.marker} {to}"
        else:
            assert new_line == old_line
    assert_style_kept(content, new)


def _tidied(lines: list[str]) -> list[str]:
    """SPEC §3: trailing newlines collapse to one; nothing at all is an empty file."""
    lines = without_trailing_empties(lines)
    return [*lines, ""] if lines else [""]


@PURE
@given(files(), st.data())
def test_forget(content: str, data: st.DataObject) -> None:
    notes = parse_notes(content)
    text = data.draw(st.sampled_from(notes) if notes else note_texts())
    change = apply_forget(content, text, "global")
    if text not in notes:
        assert change.error == f"No global memory note matches: {escape_unseen(text)}"
        assert change.content == content
        return
    new = change.content
    assert change.changed
    assert parse_notes(new) == [n for n in notes if n != text]
    kept = [
        x for x in split_text(content).lines if (b := parse_bullet(x)) is None or b.note != text
    ]
    assert split_text(new).lines == _tidied(kept)
    assert without_trailing_empties(nonbullets(new)) == without_trailing_empties(
        nonbullets(content)
    )
    if not "".join(kept):
        assert new.removeprefix(BOM) == ""
    assert_style_kept(content, new)


@settings(max_examples=120, deadline=None)
@given(files(), st.data())
def test_merge(content: str, data: st.DataObject) -> None:
    notes = sorted(set(parse_notes(content)))
    assume(len(notes) >= 2)
    first, second = data.draw(st.permutations(notes))[:2]
    to = data.draw(note_texts())
    change = apply_merge(content, first, second, to, "project")
    assert change.error is None
    assert change.changed
    new = change.content
    expected_notes = [to if n == first else n for n in parse_notes(content) if n != second]
    assert parse_notes(new) == expected_notes
    lines = []
    for x in split_text(content).lines:
        b = parse_bullet(x)
        if b is not None and b.note == second:
            continue
        lines.append(f"{b.indent}{b.marker} {to}" if b is not None and b.note == first else x)
    assert split_text(new).lines == _tidied(lines)
    assert without_trailing_empties(nonbullets(new)) == without_trailing_empties(
        nonbullets(content)
    )
    assert_style_kept(content, new)


@PURE
@given(files())
def test_clear(content: str) -> None:
    change = apply_clear(content)
    old_lines = split_text(content).lines
    if all(parse_bullet(x) is None for x in old_lines):
        assert not change.changed
        assert change.content == content
        return
    new = change.content
    assert change.changed
    assert parse_notes(new) == []
    new_lines = split_text(new).lines
    assert all(parse_bullet(x) is None for x in new_lines)
    assert "\n\n\n" not in "\n".join(new_lines)
    assert new_lines[-1] == ""
    # prose survives in order (its ends may be trimmed at the file's ends)
    prose = [x.strip() for x in nonbullets(content) if x.strip()]
    got = [x.strip() for x in new_lines if x.strip()]
    assert got == (prose or [HEADER])
    assert_style_kept(content, new)


# -- recall ------------------------------------------------------------------------


@PURE
@given(
    st.lists(note_texts(), max_size=40),
    st.lists(note_texts(), max_size=40),
    st.integers(min_value=512, max_value=32768),
    st.booleans(),
)
def test_recall_body_never_exceeds_the_cap(
    project: list[str], global_: list[str], cap: int, inject: bool
) -> None:
    plan = recall_plan(project, global_, cap, inject)
    if not inject or not (project or global_):
        assert plan.body is None
        assert plan.used == 0
        return
    assert plan.body is not None
    assert plan.used == len(plan.body.encode("utf-8")) == utf8_length(plan.body)
    assert plan.used <= cap
    included = [n.text for n in plan.included]
    omitted = [n.text for n in plan.omitted]
    assert len(included) + len(omitted) == len(project) + len(global_)
    lines = plan.body.split("\n")
    assert lines[:2] == [
        "[MEMORY]",
        "Durable notes saved in earlier sessions. Treat them as facts the user asked you "
        "to remember.",
    ]
    if omitted:
        assert lines[-1] == f"- (+{len(omitted)} more; use the memory tool)"
        lines = lines[:-1]
    expected = []
    for scope, notes in (("project", project), ("global", global_)):
        taken = [n.text for n in plan.included if n.scope == scope]
        if taken:
            expected += [f"{scope}:", *(f"- {t}" for t in taken)]
        assert [n.text for n in plan.notes if n.scope == scope] == notes
    assert lines[2:] == expected


@PURE
@given(st.lists(st.integers(min_value=1, max_value=500), max_size=60))
def test_recall_greedy_takes_whatever_still_fits(sizes: list[int]) -> None:
    notes = [("n" * s) for s in sizes]
    plan = recall_plan(notes, [], 2048)
    # a skipped note would not have fitted in the room left when it was considered
    used = utf8_length(MARKER) + 1 + utf8_length(INTRO) + 1
    section = False
    for n in plan.notes:
        extra = 0 if section else len("project:\n")
        if n.included:
            used += extra + n.bytes
            section = True
        else:
            assert used + extra + n.bytes > 2048 - 64
    assert used - 1 <= 2048 - 64


# -- the runtime never writes a bad store --------------------------------------------------

ACTIONS = st.sampled_from(["add", "update", "forget", "merge", "move", "clear"])


@SLOW
@given(
    files(),
    st.one_of(
        st.just(0), st.integers(min_value=MAX_STORE_BYTES - 700, max_value=MAX_STORE_BYTES + 3)
    ),
    ACTIONS,
    st.sampled_from(["project", "global"]),
    st.data(),
)
def test_runtime_never_writes_invalid_utf8_or_oversize(
    content: str, pad: int, action: str, scope: str, data: st.DataObject
) -> None:
    raw = content.encode("utf-8")
    if pad > len(raw):
        filler = b"\n" + b"p" * max(0, pad - len(raw) - 2) + b"\n"
        raw = (raw + filler)[: max(pad, len(raw))]
    if data.draw(st.sampled_from([False, False, False, True]), label="corrupt"):
        raw = raw + b"\xff" if data.draw(st.booleans()) else b"\xc3" + raw
    notes = parse_notes(raw.decode("utf-8", "replace"))
    pick = st.sampled_from(notes) if notes else st.just("absent")
    args: dict[str, object] = {
        "scope": scope,
        "text": data.draw(st.one_of(pick, pick, HOSTILE)),
        "to": data.draw(st.one_of(pick, HOSTILE, st.just("x" * 499))),
        "other": data.draw(st.one_of(pick, pick, HOSTILE)),
    }
    with tempfile.TemporaryDirectory() as tmp:
        root = new_project(Path(tmp) / "project")
        agent = Path(tmp) / "agent"
        stores = {"project": root / ".pi" / "memory.md", "global": agent / "memory.md"}
        stores[scope].parent.mkdir(parents=True)
        stores[scope].write_bytes(raw)
        runtime = MemoryRuntime(root, agent_dir=str(agent), trusted=True)
        result = runtime.run(action, args)
        event(f"{action}: {'error' if result.get('error') else result['changed']}")
        event(f"size over cap: {len(raw) > MAX_STORE_BYTES}")
        for path in stores.values():
            if not path.exists():
                continue
            written = path.read_bytes()
            if written == raw:
                continue
            assert len(written) <= MAX_STORE_BYTES
            written.decode("utf-8")  # raises on invalid UTF-8
            assert sorted(os.listdir(path.parent)) == ["memory.md"]
        if result.get("error"):
            assert result["changed"] is False
            assert stores[scope].read_bytes() == raw
        if len(raw) > MAX_STORE_BYTES:
            assert result.get("error") or result["changed"] is False
            assert stores[scope].read_bytes() == raw


@SLOW
@given(st.lists(st.tuples(st.sampled_from(["add", "forget"]), HOSTILE), max_size=12))
def test_runtime_add_forget_sequences_match_the_pure_core(ops: list[tuple[str, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = new_project(Path(tmp) / "project")
        runtime = MemoryRuntime(root, agent_dir=str(Path(tmp) / "agent"), trusted=True)
        model = ""
        for action, text in ops:
            result = runtime.run(action, {"text": text})
            note, error = check_text(text)
            if error:
                assert result["error"] == error
                continue
            change = (
                apply_add(model, note) if action == "add" else apply_forget(model, note, "project")
            )
            if change.changed:
                model = change.content
            assert result["project"] == parse_notes(model)
            assert result.get("error") == change.error
        path = root / ".pi" / "memory.md"
        assert (path.read_text("utf-8") if path.exists() else "") == model
