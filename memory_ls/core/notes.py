"""Parsing a memory file into lines and notes (SPEC §2).

A note is one bullet line: optional indentation, ``-`` or ``*``, at least one
space or tab, then the text. As in Pi, the text must be at least one character,
so ``"- "`` is not a bullet while ``"-  "`` is a *blank bullet*.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import operator
import re
from itertools import count

from memory_ls.core.text import (
    NEEDS_REPLACING,
    TRAILING_PUNCT,
    compiled,
    key_of_normalised,
    normalise,
    split_text,
)

# Greedy separator, then at least one character: backtracking gives "-  " the
# text " " (a blank bullet) and "- " no match at all, exactly like Pi's regex.
_BULLET_RE = re.compile(r"([ \t]*)([-*])([ \t]+)(.+)")


TYPE_CHECKING = False  # not `typing`'s: the read verbs do without importing it (~3.5 ms)
if TYPE_CHECKING:
    from typing import NamedTuple

    class _BulletFields(NamedTuple):
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

else:
    # The class typing.NamedTuple would make, made as it makes it, without `typing`.
    _BulletFields = collections.namedtuple(
        "Bullet", ("line", "indent", "marker", "raw", "start", "end", "note", "key")
    )


class Bullet(_BulletFields):
    """One bullet line. Columns are ``str`` indices into the line (code points).

    A tuple rather than a dataclass: a store has thousands and every write
    re-parses it. Its fields: ``line``, ``indent``, ``marker``, ``raw`` (the
    text after the marker's separator, as written), ``start`` and ``end`` (the
    columns of the visible text), ``note`` (normalised; empty for a blank bullet)
    and ``key`` (the near-duplicate key).
    """

    __slots__ = ()

    @property
    def blank(self) -> bool:
        """A bullet whose text normalises to nothing: the parser drops it."""
        return not self.note


def _bullet_fields(line: str) -> tuple[str, str, str, int, int, str, str] | None:
    """Everything about a bullet line but its index."""
    m = _BULLET_RE.fullmatch(line)
    if m is None:
        return None
    indent, marker, sep, raw = m.groups()
    note = normalise(raw)
    content_start = len(indent) + 1 + len(sep)
    if raw.strip():
        start = content_start + (len(raw) - len(raw.lstrip()))
        end = content_start + len(raw.rstrip())
    else:
        start = end = content_start
    key = key_of_normalised(note) if note else ""
    return indent, marker, raw, start, end, note, key


@functools.lru_cache(maxsize=16384)
def parse_bullet(line: str, index: int = 0) -> Bullet | None:
    """Return the bullet on ``line`` (without its line ending), or ``None``.

    Cached: a store is re-parsed after every write and almost all of its lines,
    at the same indices, are the ones parsed last time.
    """
    fields = _bullet_fields(line)
    return None if fields is None else Bullet(index, *fields)


def parse_bullets(lines: list[str], odd: list[int] | None = None) -> list[Bullet | None]:
    """``[parse_bullet(line, i) for i, line in enumerate(lines)]``, faster when cold.

    ``odd``, when given, gets the index of every bullet that is not a plain note: one
    whose text is not printable or not normalised already (a blank bullet too). A
    plain note can have no line finding but ``too-long``
    (:func:`memory_ls.core.checks.parsed_lines_findings`).

    :func:`_bullet_fields`, :func:`normalise` and :func:`key_of_normalised` inlined in
    one loop: an editor opening a store parses every line of it cold. A note that is
    normalised already (printable, so no control, no whitespace but the space, no lone
    surrogate; no two spaces in a row; no space at either end) is its own text, and its
    columns are the rest of the line: decided by a few C calls, without cutting and
    joining it again; a line that begins ``"- "`` followed by such a note (as Pi and
    memory-ls write every note) does not even need the regex. A line of the slow kind,
    with a control or a lone surrogate, still goes through :func:`normalise`. The
    results are the same values (``tests/unit/test_notes.py``); the cache of
    :func:`parse_bullet` is neither read nor filled.
    """
    out: list[Bullet | None] = []
    append = out.append
    match = _BULLET_RE.fullmatch
    new = tuple.__new__
    punct = TRAILING_PUNCT
    for i, line in enumerate(lines):
        if line[:2] == "- ":  # how Pi and memory-ls write a note: no regex needed
            raw = line[2:]
            if raw and raw.isprintable() and raw[0] != " " and "  " not in raw and raw[-1] != " ":
                key = raw.lower().rstrip(punct).strip()
                append(new(Bullet, (i, "", "-", raw, 2, len(line), raw, key)))
                continue
        m = match(line)
        if m is None:
            append(None)
            continue
        indent, marker, sep, raw = m.groups()
        if raw.isprintable() and "  " not in raw and raw[-1] != " ":
            # (raw[0] is no space: the separator is greedy, and a raw of one space
            # ends with it.)
            end = len(line)
            key = raw.lower().rstrip(punct).strip()
            append(new(Bullet, (i, indent, marker, raw, end - len(raw), end, raw, key)))
            continue
        if odd is not None:
            odd.append(i)
        # A printable note has no control and no lone surrogate: the pattern (~0.8 ms to
        # compile, its class reaching past U+FFFF) is needed only for a line that has one.
        replace = not raw.isprintable() and compiled(NEEDS_REPLACING).search(raw)
        note = normalise(raw) if replace else " ".join(raw.split())
        content_start = len(indent) + 1 + len(sep)
        left = raw.lstrip()
        if left:
            start = content_start + len(raw) - len(left)
            end = content_start + len(raw.rstrip())
        else:
            start = end = content_start
        key = note.lower().rstrip(punct).strip() if note else ""
        append(new(Bullet, (i, indent, marker, raw, start, end, note, key)))
    return out


class ParsedFile:
    """A whole memory file: its lines and every bullet on them, in order.

    Each of ``bullets``, ``notes`` and ``keys`` is worked out when first read:
    ``inject`` and ``list`` read only the notes, which :func:`_notes_of` finds
    without building a :class:`Bullet` per line (~3x faster on a cold store).
    """

    __slots__ = ("_bullets", "_keys", "_notes", "lines")

    lines: list[str]

    def __init__(
        self,
        lines: list[str],
        bullets: list[Bullet] | None,
        notes: list[str] | None,
        keys: dict[str, str] | None,
    ) -> None:
        self.lines = lines
        self._bullets = bullets
        self._notes = notes
        self._keys = keys

    @property
    def bullets(self) -> list[Bullet]:
        """Every bullet, blank ones included, in line order."""
        if self._bullets is None:
            self._bullets = [b for b in map(parse_bullet, self.lines, count()) if b is not None]
        return self._bullets

    @property
    def notes(self) -> list[str]:
        """The notes in file order (blank bullets dropped)."""
        if self._notes is None:
            if self._bullets is None:
                self._notes = _notes_of(self.lines)
            else:
                self._notes = [b.note for b in self._bullets if b.note]
        return self._notes

    @property
    def keys(self) -> dict[str, str]:
        """Near-duplicate key -> the first note with that key."""
        if self._keys is None:
            # From the notes, not the bullets: an add asks only this of a store, and a
            # bullet per line would be ~2 MB more of a 4,500-note store kept resident.
            keys: dict[str, str] = {}
            for note in self.notes:
                keys.setdefault(key_of_normalised(note), note)
            self._keys = keys
        return self._keys

    def __eq__(self, other: object) -> bool:
        if type(other) is not ParsedFile:
            return NotImplemented
        return self.lines == other.lines and self.bullets == other.bullets

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ParsedFile(lines={self.lines!r}, bullets={self.bullets!r})"


_TEXT = operator.itemgetter(4)
"""A bullet match's text (``raw``)."""


def _notes_of(lines: list[str]) -> list[str]:
    """``[b.note for b in bullets if b.note]`` of ``lines``, without the bullets.

    The bullet regex over every line and each match's text, all in C. A store
    that memory-ls or Pi wrote holds its notes normalised already, which one
    look at them all joined can tell: nothing but printable characters (no
    control, no surrogate, no whitespace but the space) and no space next to
    another or at either end. Otherwise each text goes through :func:`normalise`.
    ``tests/unit/test_notes.py`` holds it to the bullets' notes.
    """
    found = list(map(_TEXT, filter(None, map(_BULLET_RE.fullmatch, lines))))
    joined = " ".join(found)
    if joined.isprintable() and "  " not in joined and joined[:1] != " " != joined[-1:]:
        return found
    return [note for note in map(normalise, found) if note]


def parse_lines(lines: list[str]) -> ParsedFile:
    """Parse already split lines (the bullets, notes and keys as they are first read)."""
    return ParsedFile(lines, None, None, None)


_recent: dict[str, ParsedFile] = {}
_written: tuple[tuple[str, ParsedFile], ...] = ()
"""The last few texts :func:`parse_after` parsed (a store each), found by identity:
no hash of a megabyte of code points."""


def parse(content: str) -> ParsedFile:
    """Parse a file's text (a leading BOM is ignored).

    The last few results are kept: a write reads the store, checks it and
    re-reads it, and the editor and the runtime parse the same text.
    Callers must not mutate the result.
    """
    for text, parsed in _written:
        if text is content:
            return parsed
    hit = _recent.get(content)
    if hit is not None:
        return hit
    parsed = parse_lines(split_text(content).lines)
    remember(content, parsed)
    return parsed


def remember(content: str, parsed: ParsedFile) -> None:
    """Keep ``parsed`` as :func:`parse`'s answer for ``content``, which it must be the parse
    of (``check`` parses a store's bullets cold in one loop, then asks the runtime for the
    same store's notes: without this the runtime parses the text again)."""
    if len(_recent) >= 4:
        # The server parses in threads too: another may trim the same entry meanwhile.
        with contextlib.suppress(KeyError, RuntimeError, StopIteration):
            del _recent[next(iter(_recent))]
    _recent[content] = parsed


def parse_notes(content: str) -> list[str]:
    """The notes of a file's text, in order."""
    return list(parse(content).notes)


def parse_after(previous: ParsedFile, previous_content: str, content: str) -> ParsedFile:
    """``parse(content)``, reusing ``previous = parse(previous_content)`` where it can.

    A write is followed by a parse of what it wrote, and an ``add`` writes the old
    text (its trailing whitespace trimmed) and one note more: when ``content``
    begins with ``previous_content`` so trimmed, the lines they share keep
    ``previous``'s bullets, notes and keys and only the rest is parsed, without
    cutting the whole text into lines again (a 256 KB store with one emoji is a
    megabyte of code points). A change before the last note is parsed whole. The
    result equals :func:`parse`'s (``tests/unit/test_notes.py``), and :func:`parse`
    returns it for this very string.
    """
    global _written
    parsed = None
    if content.startswith(previous_content):  # the usual add: the text is kept whole
        start = previous_content.rfind("\n") + 1  # its last line may go on: parsed again
        if start:
            same = len(previous.lines) - 1
            lines = previous.lines[:same] + split_text("\n" + content[start:]).lines[1:]
            parsed = _parse_from(previous, lines, same)
        kept = ""  # nothing more to try
    else:
        kept = previous_content.rstrip()
    start = kept.rfind("\n") + 1  # where the last line of `kept` begins
    if parsed is None and start and content.startswith(kept):
        end = len(kept)
        # The lines before `start`, alike in both texts (counted in the few trailing
        # characters rather than the whole text).
        same = len(previous.lines) - 1 - previous_content.count("\n", end)
        ending = content[end : end + 2]
        if (ending[:1] == "\n" or ending == "\r\n") and previous.lines[same] == kept[start:]:
            # `content` ends that line where `previous_content` did (an add): it is alike too.
            same, start = same + 1, end + (1 if ending[:1] == "\n" else 2)
        # A "\n" in front: the tail's first line is never taken for a leading BOM.
        lines = previous.lines[:same] + split_text("\n" + content[start:]).lines[1:]
        parsed = _parse_from(previous, lines, same)
    if parsed is None:
        parsed = parse_lines(split_text(content).lines)
    # Kept by identity, not in `_recent`: a text just written is next parsed as this
    # very string (the runtime hands its view's text over when the file still holds it).
    # The text it replaces is let go: a store's older texts (a megabyte each for a
    # 256 KB store with one emoji) would stay resident for nothing (issue 11).
    kept_texts = (w for w in _written if w[0] is not previous_content)
    _written = ((content, parsed), *tuple(kept_texts)[:3])
    return parsed


def _parse_from(previous: ParsedFile, lines: list[str], same: int) -> ParsedFile | None:
    """The parse of ``lines``, whose first ``same`` are ``previous``'s, reusing what they
    hold; ``None`` when ``previous`` has notes after them (their keys would be wrong).

    Only what ``previous`` has worked out is carried on: a store an add wrote is asked
    for its notes and keys, and its bullets are not built for it (see ``keys``).
    """
    tail = [b for b in map(parse_bullet, previous.lines[same:]) if b is not None]
    if any(b.note for b in tail):
        return None
    bullets = None
    if previous._bullets is not None:
        bullets = previous._bullets[: len(previous._bullets) - len(tail)]
    notes = list(previous.notes)
    keys = None if previous._keys is None else dict(previous._keys)
    for i in range(same, len(lines)):
        b = parse_bullet(lines[i], i)
        if b is not None:
            if bullets is not None:
                bullets.append(b)
            if b.note:
                notes.append(b.note)
                if keys is not None:
                    keys.setdefault(b.key, b.note)
    return ParsedFile(lines, bullets, notes, keys)
