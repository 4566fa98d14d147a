"""Parsing a memory file into lines and notes (SPEC §2).

A note is one bullet line: optional indentation, ``-`` or ``*``, at least one
space or tab, then the text. As in Pi, the text must be at least one character,
so ``"- "`` is not a bullet while ``"-  "`` is a *blank bullet*.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory_ls.core.text import near_duplicate_key, normalise, split_text

# Greedy separator, then at least one character: backtracking gives "-  " the
# text " " (a blank bullet) and "- " no match at all, exactly like Pi's regex.
_BULLET_RE = re.compile(r"([ \t]*)([-*])([ \t]+)(.+)")


@dataclass(frozen=True, slots=True)
class Bullet:
    """One bullet line. Columns are ``str`` indices into the line (code points)."""

    line: int
    indent: str
    marker: str
    raw: str
    """The line's text after the marker's separator, as written."""
    start: int
    """Column where the note's visible text starts."""
    end: int
    """Column just after the note's last non-whitespace character."""
    note: str
    """The normalised note text; empty for a blank bullet."""
    key: str
    """The near-duplicate key (empty for a blank bullet)."""

    @property
    def blank(self) -> bool:
        """A bullet whose text normalises to nothing: the parser drops it."""
        return not self.note


def parse_bullet(line: str, index: int = 0) -> Bullet | None:
    """Return the bullet on ``line`` (without its line ending), or ``None``."""
    m = _BULLET_RE.fullmatch(line)
    if m is None:
        return None
    indent, marker, sep, raw = m.groups()
    note = normalise(raw)
    content_start = len(indent) + 1 + len(sep)
    stripped = raw.strip()
    if stripped:
        start = content_start + (len(raw) - len(raw.lstrip()))
        end = content_start + len(raw.rstrip())
    else:
        start = end = content_start
    return Bullet(
        line=index,
        indent=indent,
        marker=marker,
        raw=raw,
        start=start,
        end=end,
        note=note,
        key=near_duplicate_key(note) if note else "",
    )


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """A whole memory file: its lines and every bullet on them, in order."""

    lines: list[str]
    bullets: list[Bullet]

    @property
    def notes(self) -> list[str]:
        """The notes in file order (blank bullets dropped)."""
        return [b.note for b in self.bullets if b.note]


def parse_lines(lines: list[str]) -> ParsedFile:
    """Parse already split lines."""
    bullets = []
    for i, line in enumerate(lines):
        b = parse_bullet(line, i)
        if b is not None:
            bullets.append(b)
    return ParsedFile(lines=lines, bullets=bullets)


def parse(content: str) -> ParsedFile:
    """Parse a file's text (a leading BOM is ignored)."""
    return parse_lines(split_text(content).lines)


def parse_notes(content: str) -> list[str]:
    """The notes of a file's text, in order."""
    return parse(content).notes
