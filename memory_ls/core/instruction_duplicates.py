"""Notes that an instruction file already says: ``instruction-duplicate`` (SPEC §13).

An instruction file (``AGENTS.md``, ``CLAUDE.md``, ...) is read into its bullet and
prose lines, outside code fences, front matter and a memory-ls export block (the
export block *is* the notes: every exported note would repeat itself).
A note repeats a line when their near-duplicate keys are equal, or when their
``similar`` score reaches the threshold. Which files are read for which store
(SPEC §13's lists) is the shell's to decide; here they are texts by path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from memory_ls.core.checks import Finding, InstructionDuplicateData, Related
from memory_ls.core.notes import Bullet, parse_bullet
from memory_ls.core.records import record
from memory_ls.core.similar import DEFAULT_THRESHOLD, similar_to
from memory_ls.core.text import (
    display_path,
    escape_unseen,
    key_of_normalised,
    normalise,
    split_text,
)

PROJECT_INSTRUCTION_FILES = (
    "AGENTS.md",
    "CLAUDE.md",
    "CLAUDE.local.md",
    ".claude/CLAUDE.md",
    "GEMINI.md",
    ".github/copilot-instructions.md",
)
"""A project store is compared with these files at the project root."""
GLOBAL_INSTRUCTION_FILES = ("~/.claude/CLAUDE.md", "~/.gemini/GEMINI.md", "~/.codex/AGENTS.md")
"""A global store is compared with these, and with ``<agent-dir>/AGENTS.md``."""

MAX_FUZZY_CHARS = 64_000
"""The instruction lines' keys a note's key is scored against, in characters: a real
AGENTS.md has a few hundred lines, while a megabyte of them made each keystroke in
the editor score 20,000 lines (40 ms) and ``check`` of a big store take minutes.
Lines past it are matched by an equal key only."""

# Lines that are neither bullets nor prose: headings, table rows, HTML comments and
# thematic breaks.
_NOT_PROSE_RE = re.compile(r"\s{0,3}(?:#{1,6}(?:\s|$)|\||<!--|(?:[-*_]\s*){3,}$|</?[a-zA-Z])")
# Ordered list items and "+" bullets, which the store's parser does not take as notes.
_OTHER_MARKER_RE = re.compile(r"(\s*(?:\d{1,9}[.)]|\+)[ \t]+)(.+)")
_QUOTE_RE = re.compile(r"\s{0,3}(?:>\s?)+")


@record
class InstructionLine:
    """One bullet or prose line of an instruction file."""

    path: str
    line: int
    start: int
    end: int
    text: str
    """Its text, normalised (the marker left out)."""
    key: str


@record
class InstructionIndex:
    """Every instruction file's lines, and their keys: built once per change of a file."""

    lines: tuple[InstructionLine, ...]
    by_key: dict[str, InstructionLine]
    """The first line with each key."""
    keys: tuple[str, ...]
    """The keys of the first ``lines``, in order, up to :data:`MAX_FUZZY_CHARS` (what
    ``similar`` scores against; every line is still found by an equal key)."""


def instruction_lines(path: str, text: str) -> list[InstructionLine]:
    """The bullet and prose lines of one instruction file's text."""
    # Imported here: the bridges bring the actions and the inbox (hashlib), which `check`
    # has no use for when the project has no instruction file.
    from memory_ls.core.bridges import instruction_skipped_lines

    lines = split_text(text).lines
    skipped = instruction_skipped_lines(lines)
    out: list[InstructionLine] = []
    for i, line in enumerate(lines):
        if i in skipped or not line.strip() or _NOT_PROSE_RE.match(line):
            continue
        quote = _QUOTE_RE.match(line)
        offset = quote.end() if quote is not None else 0
        body = line[offset:]
        bullet = parse_bullet(body, i)
        other = _OTHER_MARKER_RE.fullmatch(body)
        if bullet is not None:
            start, end, note = offset + bullet.start, offset + bullet.end, bullet.note
        elif other is not None:
            start = offset + len(other.group(1))
            end = offset + len(body.rstrip())
            note = normalise(other.group(2))
        else:
            start = offset + len(body) - len(body.lstrip())
            end = offset + len(body.rstrip())
            note = normalise(body)
        if note:
            out.append(InstructionLine(path, i, start, end, note, key_of_normalised(note)))
    return out


def instruction_index(texts: Mapping[str, str]) -> InstructionIndex:
    """The index of several instruction files (path -> text), in the mapping's order."""
    lines = tuple(x for path, text in texts.items() for x in instruction_lines(path, text))
    by_key: dict[str, InstructionLine] = {}
    for x in lines:
        by_key.setdefault(x.key, x)
    keys: list[str] = []
    budget = MAX_FUZZY_CHARS
    for x in lines:
        budget -= len(x.key)
        if budget < 0:
            break
        keys.append(x.key)
    return InstructionIndex(lines, by_key, tuple(keys))


def repeated_line(
    key: str, index: InstructionIndex, threshold: float = DEFAULT_THRESHOLD
) -> tuple[InstructionLine, float] | None:
    """The instruction line a note (its key) repeats, and the score (100 for an equal key)."""
    same = index.by_key.get(key)
    if same is not None:
        return same, 100.0
    if not index.keys:
        return None
    hits = similar_to(key, index.keys, threshold)
    if not hits:
        return None
    # The best score; the earliest line among equals.
    i, score = min(hits, key=lambda hit: (-hit[1], hit[0]))
    return index.lines[i], score


def instruction_duplicate_finding(b: Bullet, x: InstructionLine, score: float) -> Finding:
    """The ``instruction-duplicate`` finding of a note that repeats the instruction line
    ``x`` (:func:`repeated_line`'s answer, which a caller may have cached by key)."""
    where = f"{display_path(x.path)} line {x.line + 1}"
    how = "already says this" if score >= 100 else f"says nearly this ({score:.0f}% alike)"
    return Finding(
        "instruction-duplicate",
        b.line,
        b.start,
        b.line,
        b.end,
        # The file's line escaped: it is the repository's text, bidi controls and all.
        f"{where} {how}: {escape_unseen(x.text)}",
        InstructionDuplicateData(
            note=b.note, file=x.path, fileLine=x.line, text=x.text, score=score
        ),
        (Related(x.line, x.start, x.end, "Said here", path=x.path),),
    )


def instruction_duplicate_findings(
    bullets: Sequence[Bullet], index: InstructionIndex, threshold: float = DEFAULT_THRESHOLD
) -> list[Finding]:
    """An ``instruction-duplicate`` finding on each note an instruction file already says,
    with related information at that file's line."""
    out: list[Finding] = []
    for b in bullets:
        if b.blank:
            continue
        hit = repeated_line(b.key, index, threshold)
        if hit is not None:
            out.append(instruction_duplicate_finding(b, *hit))
    return out
