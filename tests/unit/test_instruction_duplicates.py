"""``instruction-duplicate`` (SPEC §13): a note an instruction file already says."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_ls.core import instruction_duplicates
from memory_ls.core.bridges import EXPORT_BEGIN, EXPORT_END
from memory_ls.core.instruction_duplicates import (
    MAX_FUZZY_CHARS,
    instruction_duplicate_findings,
    instruction_index,
    instruction_lines,
    repeated_line,
)
from memory_ls.core.notes import parse_lines
from memory_ls.core.similar import DEFAULT_THRESHOLD, similar_to
from memory_ls.core.text import key_of_normalised, normalise

AGENTS = f"""\
---
title: rules
---
# Project rules

Run the tests with pnpm test before pushing.
- Use pnpm, never npm.
1. Keep PRs small.
> Answer in British English.
| Use tables | no |

```sh
- Use yarn for scripts
```
{EXPORT_BEGIN}
- Deploys go through the release branch
{EXPORT_END}
"""


def texts(lines: list[str]) -> list[tuple[int, str]]:
    return [(x.line, x.text) for x in lines]


def test_lines_outside_fences_front_matter_and_the_export_block() -> None:
    found = instruction_lines("AGENTS.md", AGENTS)
    assert texts(found) == [
        (5, "Run the tests with pnpm test before pushing."),
        (6, "Use pnpm, never npm."),
        (7, "Keep PRs small."),
        (8, "Answer in British English."),
    ]
    lines = AGENTS.split("\n")
    for x in found:
        assert lines[x.line][x.start : x.end] == x.text


def findings_for(notes: list[str], files: dict[str, str], threshold: float = 85.0) -> list[str]:
    bullets = parse_lines([f"- {n}" for n in notes]).bullets
    index = instruction_index(files)
    return [f.message for f in instruction_duplicate_findings(bullets, index, threshold)]


def test_equal_keys_and_close_paraphrases() -> None:
    files = {"/p/AGENTS.md": AGENTS, "/p/CLAUDE.md": "Keep PRs small\n"}
    messages = findings_for(
        [
            "keep PRs small",  # equal key: the first file that has it
            "Use pnpm, never npm!",
            "Use pnpm, never npm ever",  # close
            "Deploys go through the release branch",  # only in the export block
            "Use yarn for scripts",  # only in a code fence
            "Something else entirely",
        ],
        files,
    )
    assert messages == [
        "/p/AGENTS.md line 8 already says this: Keep PRs small.",
        "/p/AGENTS.md line 7 already says this: Use pnpm, never npm.",
        "/p/AGENTS.md line 7 says nearly this (88% alike): Use pnpm, never npm.",
    ]


def test_finding_points_at_the_file_and_line() -> None:
    bullets = parse_lines(["  - Keep PRs small."]).bullets
    (f,) = instruction_duplicate_findings(bullets, instruction_index({"/p/AGENTS.md": AGENTS}))
    assert (f.code, f.line, f.start, f.end) == ("instruction-duplicate", 0, 4, 19)
    assert f.data == {
        "note": "Keep PRs small.",
        "file": "/p/AGENTS.md",
        "fileLine": 7,
        "text": "Keep PRs small.",
        "score": 100.0,
    }
    (related,) = f.related
    assert (related.path, related.line, related.start, related.end) == ("/p/AGENTS.md", 7, 3, 18)


def test_no_instruction_files() -> None:
    assert findings_for(["Keep PRs small"], {}) == []


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_hostile_files_never_crash_and_ranges_stay_inside(text: str) -> None:
    lines = text.replace("\r\n", "\n").split("\n")
    for x in instruction_lines("f", text):
        assert 0 <= x.start <= x.end <= len(lines[x.line])


def test_a_huge_instruction_file_is_scored_in_part_and_matched_by_key_in_full():
    # A megabyte of lines: scoring every keystroke's key against all of them took the
    # editor 40 ms a keystroke, and `check` of a big store minutes.
    lines = [f"- Rule number {i} says to keep module {i} tidy and small." for i in range(20_000)]
    index = instruction_index({"/p/AGENTS.md": "\n".join(lines)})
    assert len(index.lines) == 20_000
    assert sum(len(k) for k in index.keys) <= MAX_FUZZY_CHARS
    hit = repeated_line(
        key_of_normalised(normalise("Rule number 19999 says to keep module 19999 tidy and small.")),
        index,
    )
    assert hit is not None and hit[0].line == 19_999 and hit[1] == 100
    near = repeated_line(
        key_of_normalised(normalise("Rule number 1 says: keep module 1 tidy and small")), index
    )
    assert near is not None and near[0].line == 1


def repeated_line_naively(key: str, texts_by_path: dict[str, str], threshold: float) -> object:
    """:func:`repeated_line` by its definition: an equal key, else every fuzzy key scored."""
    index = instruction_index(texts_by_path)
    same = index.by_key.get(key)
    if same is not None:
        return same, 100.0
    hits = similar_to(key, index.keys, threshold)
    if not hits:
        return None
    i, score = min(hits, key=lambda hit: (-hit[1], hit[0]))
    return index.lines[i], score


def count_scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of lines each note's scan of one length's lines covers, from now on."""
    scored: list[int] = []
    nearest = instruction_duplicates._nearest

    def counted(keys: list[str], ranked: Sequence[str], lo: int, end: int, *args: Any) -> Any:
        scored.extend([end - lo] * len(keys))
        return nearest(keys, ranked, lo, end, *args)

    monkeypatch.setattr(instruction_duplicates, "_nearest", counted)
    return scored


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.text(alphabet="ab c😀", min_size=1, max_size=16), max_size=30),
    note=st.text(alphabet="ab c😀", min_size=1, max_size=16),
    threshold=st.one_of(st.sampled_from([0.0, 50.0, 85.0, 85.5, 100.0]), st.floats(0, 100)),
)
def test_only_the_lines_of_a_reachable_length_are_scored_and_the_answer_is_the_same(
    lines: list[str], note: str, threshold: float
) -> None:
    # Short keys over a tiny alphabet, at every threshold: the length bound is met
    # exactly, often; equal scores tie often (the earliest line wins).
    text = "".join(f"- {line}\n" for line in lines)
    key = key_of_normalised(normalise(note))
    if not key:
        return
    index = instruction_index({"AGENTS.md": text})
    assert repeated_line(key, index, threshold) == repeated_line_naively(
        key, {"AGENTS.md": text}, threshold
    )


def test_a_file_of_short_lines_costs_a_store_of_longer_notes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 64,000 one-character lines (the fuzzy budget) took 26 s against a full store: no
    # line of theirs can reach a note of 20 characters, and none is scored.
    text = "".join(f"{chr(0x4E00 + i % 20000)}\n" for i in range(MAX_FUZZY_CHARS))
    index = instruction_index({"AGENTS.md": text})
    assert len(index.keys) == MAX_FUZZY_CHARS
    scored = count_scans(monkeypatch)
    bullets = parse_lines([f"- run cache step {i:05d}" for i in range(300)]).bullets
    assert instruction_duplicate_findings(bullets, index) == []
    assert scored == []
    assert repeated_line(chr(0x4E00), index) is not None  # (an equal key: still found)
    assert repeated_line("一二", index) is None  # at most 67% alike: under 85
    assert scored == []
    assert repeated_line("一二", index, 60.0) is not None
    # One character from two: found in the index's dict of keys, no line scanned.
    assert scored == []
    assert repeated_line("一二三", index, 50.0) is not None  # 50% alike: scored in full
    assert scored == [20000]  # each key once: the lines repeat every 20,000


def test_a_short_note_or_a_repeated_one_is_scored_once_and_a_line_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A store of 20,000 `- x` against 64,000 lines of `y` scanned the 64,000 keys for each
    # note (~5 ms a note: ~2 min of `check`). Two different keys of one or two characters
    # are at most 50% alike, so no line is scored; a note repeated is judged once, and a
    # line repeated is scored once (the first: the earliest line among equal scores).
    index = instruction_index({"AGENTS.md": "y\n" * MAX_FUZZY_CHARS})
    scored = count_scans(monkeypatch)
    bullets = parse_lines(["- x"] * 2000 + ["- xy"] * 2000).bullets
    assert instruction_duplicate_findings(bullets, index) == []
    assert scored == []
    # Four characters reach a line of three (86%) only one character away: found by a
    # dict of the keys with a character left out, no line scanned.
    index = instruction_index({"AGENTS.md": "- abc\n" * 1000 + "- abd\n"})
    found = instruction_duplicate_findings(parse_lines(["- abcd"] * 500).bullets, index)
    assert len(found) == 500 and {f.related[0].line for f in found} == {0}
    assert scored == []


def test_a_store_of_short_notes_against_short_lines_scans_no_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 24,000 notes of three characters against 16,000 lines of four scanned every line for
    # each note (~1 ms: 25 s of `check`). At 85 only a key one step away can be alike (a
    # character added, left out, or one each): a dict lookup, the same answer.
    alphabet = "bcdfghjklmnpqrsvwxz0123456789"
    lines = [
        "".join(p) for p in itertools.islice(itertools.product(alphabet, repeat=4), 0, None, 37)
    ]
    text = "".join(f"- {line}\n" for line in lines[:4000])
    index = instruction_index({"AGENTS.md": text})
    notes = ["".join(p) for p in itertools.product("bcdfg", repeat=3)]
    notes += ["".join(p) for p in itertools.product("bcd0", repeat=4)][:40]
    notes += ["".join(p) for p in itertools.product("bc0", repeat=5)][:40]
    expected = [repeated_line_naively(n, {"AGENTS.md": text}, DEFAULT_THRESHOLD) for n in notes]
    scored = count_scans(monkeypatch)
    assert [repeated_line(n, index) for n in notes] == expected
    assert any(hit is not None and hit[1] < 100 for hit in expected)
    assert scored == []


def test_equal_scores_of_keys_of_two_lengths_give_the_earlier_line() -> None:
    # 20% alike both (rapidfuzz: 19.999999999999996); the shorter key, on the later line, is
    # scored first. Scored again at a cutoff of its score, the earlier line came out under
    # it and lost the tie.
    index = instruction_index({"AGENTS.md": "- aabbbbbbbbbbbbbbb\n- abbbbbb\n"})
    hit = repeated_line("aaa", index, 10.0)
    assert hit is not None and hit[0].line == 0
    assert hit == repeated_line_naively(
        "aaa", {"AGENTS.md": "- aabbbbbbbbbbbbbbb\n- abbbbbb\n"}, 10.0
    )


@settings(max_examples=150, deadline=None)
@given(
    notes=st.lists(st.text(alphabet="abc", min_size=6, max_size=10), min_size=1, max_size=40),
    lines=st.lists(st.text(alphabet="abc", min_size=7, max_size=13), min_size=1, max_size=40),
    threshold=st.sampled_from([0.0, 70.0, 80.0, 85.0, 85.5, 88.88888888888889, 90.0]),
    cells=st.sampled_from([1, 50, 1 << 20]),
)
def test_notes_scored_as_one_matrix_answer_as_the_definition(
    notes: list[str], lines: list[str], threshold: float, cells: int
) -> None:
    # Keys of 7-13 characters, where a line two steps away can reach 85 (no lookup): the
    # notes of one length are scored against each length's lines in one matrix of
    # distances (in batches of rows of at most `cells` cells), each note's first line at
    # the least distance taken. The same answers as scoring every line of the file.
    text = "".join(f"- {line}\n" for line in lines)
    index = instruction_index({"AGENTS.md": text})
    keys = [key_of_normalised(normalise(note)) for note in notes]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(instruction_duplicates, "NEAREST_CELLS", cells)
        got = instruction_duplicates.repeated_lines(keys, index, threshold)
    assert got == {k: repeated_line_naively(k, {"AGENTS.md": text}, threshold) for k in keys}


def test_short_notes_against_longer_lines_are_one_matrix_a_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The hostile shape at a small scale: 23,830 notes of eight characters against 6,400
    # lines of ten took `check` ~13 s, one extractOne a note (~0.5 ms each). Now the notes
    # are one matrix against the lines of each reachable length; the same findings.
    rng = random.Random(14)
    letters = "abcdefghijklmnopqrstuvwxyz"
    notes = list(dict.fromkeys("".join(rng.choices(letters, k=8)) for _ in range(600)))
    lines = ["".join(rng.choices(letters, k=10)) for _ in range(200)]
    for i in range(0, 200, 20):  # a note with two characters added: 89% alike
        n = notes[i]
        lines[i] = n[:3] + rng.choice(letters) + n[3:6] + rng.choice(letters) + n[6:]
    text = "".join(f"- {line}\n" for line in lines)
    index = instruction_index({"AGENTS.md": text})
    calls = []
    nearest = instruction_duplicates._nearest

    def counted(keys: list[str], *args: Any) -> Any:
        calls.append(len(keys))
        return nearest(keys, *args)

    monkeypatch.setattr(instruction_duplicates, "_nearest", counted)
    bullets = parse_lines([f"- {n}" for n in notes]).bullets
    found = instruction_duplicate_findings(bullets, index)
    assert calls == [len(notes)]  # one matrix: the eight-character notes against the ten
    monkeypatch.undo()
    assert len(found) >= 10
    expected = [repeated_line_naively(n, {"AGENTS.md": text}, DEFAULT_THRESHOLD) for n in notes]
    assert [(f.line, f.data["fileLine"], f.data["score"]) for f in found] == [
        (i + 0, hit[0].line, hit[1])  # type: ignore[index]
        for i, hit in enumerate(expected)
        if hit is not None
    ]
