"""Notes that an instruction file already says: ``instruction-duplicate`` (SPEC §13).

An instruction file (``AGENTS.md``, ``CLAUDE.md``, ...) is read into its bullet and
prose lines, outside code fences, front matter and a memory-ls export block (the
export block *is* the notes: every exported note would repeat itself).
A note repeats a line when their near-duplicate keys are equal, or when their
``similar`` score reaches the threshold. Which files are read for which store
(SPEC §13's lists) is the shell's to decide; here they are texts by path.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Mapping, Sequence

from memory_ls.core.checks import Finding, InstructionDuplicateData, Related
from memory_ls.core.notes import Bullet, parse_bullet
from memory_ls.core.records import record
from memory_ls.core.similar import DEFAULT_THRESHOLD, score_floor
from memory_ls.core.text import (
    compiled,
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
_NOT_PROSE = r"\s{0,3}(?:#{1,6}(?:\s|$)|\||<!--|(?:[-*_]\s*){3,}$|</?[a-zA-Z])"
# Ordered list items and "+" bullets, which the store's parser does not take as notes.
_OTHER_MARKER = r"(\s*(?:\d{1,9}[.)]|\+)[ \t]+)(.+)"
_QUOTE = r"\s{0,3}(?:>\s?)+"
# (Compiled when an instruction file is read, by compiled(): most projects checked have none.)


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
    by_length: tuple[int, ...] = ()
    """The positions in :attr:`keys` of the first line of each key, shortest key first
    (then in order): a note's key is scored only against the keys whose length can reach
    the threshold, each once."""
    lengths: tuple[int, ...] = ()
    """The lengths of the keys of :attr:`by_length`, in its order."""
    ranked: tuple[str, ...] = ()
    """The keys of :attr:`by_length`, in its order (the keys of one length are scored as
    one slice of it)."""
    firsts: dict[str, int] | None = None
    """The position in :attr:`keys` of each key's first line."""
    deletions: dict[str, int] | None = None
    """Each key of up to :data:`DELETION_KEYS` characters with one character left out, and
    the first position in :attr:`keys` of a key it comes from (:func:`_one_step`)."""


def instruction_lines(path: str, text: str) -> list[InstructionLine]:
    """The bullet and prose lines of one instruction file's text."""
    # Imported here: the bridges bring the actions and the inbox (hashlib), which `check`
    # has no use for when the project has no instruction file.
    from memory_ls.core.bridges import instruction_skipped_lines

    lines = split_text(text).lines
    skipped = instruction_skipped_lines(lines)
    not_prose, quoted = compiled(_NOT_PROSE).match, compiled(_QUOTE).match
    other_marker = compiled(_OTHER_MARKER).fullmatch
    out: list[InstructionLine] = []
    for i, line in enumerate(lines):
        if i in skipped or not line.strip() or not_prose(line):
            continue
        quote = quoted(line)
        offset = quote.end() if quote is not None else 0
        body = line[offset:]
        bullet = parse_bullet(body, i)
        other = other_marker(body)
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
    # Each key once, at its first line: an equal key scores the same, and the earliest
    # line among equal scores is the answer (a file of one line repeated 64,000 times is
    # one key to score, not 64,000).
    firsts: dict[str, int] = {}
    for i, k in enumerate(keys):
        firsts.setdefault(k, i)
    by_length = sorted(firsts.values(), key=lambda i: len(keys[i]))
    lengths = tuple(len(keys[i]) for i in by_length)
    ranked = tuple(keys[i] for i in by_length)
    deletions: dict[str, int] = {}
    for k, i in firsts.items():  # in the keys' order: the first position is kept
        if len(k) <= DELETION_KEYS:
            for c in range(len(k)):
                deletions.setdefault(k[:c] + k[c + 1 :], i)
    return InstructionIndex(
        lines, by_key, tuple(keys), tuple(by_length), lengths, ranked, firsts, deletions
    )


DELETION_KEYS = 16
"""The longest keys of :attr:`InstructionIndex.deletions` (at 85, a key one step from a
note has at most 14 characters)."""


def _one_step(key: str, length: int, index: InstructionIndex, cutoff: int) -> int | None:
    """The first position in ``index.keys`` of a key of ``length`` one step from ``key`` (a
    character added, left out, or one each), where only such a key can reach ``cutoff``,
    else -1 (scored in full).

    Two keys of lengths ``a`` and ``b`` at Indel distance ``d`` are ``100 * (1 - d / (a +
    b))`` alike; ``d`` is at least ``|a - b|`` (2 for two different keys of one length), and
    of the same parity as ``a + b``. When the next distance up cannot reach ``cutoff``,
    only the least one can: the shorter key is the longer with one character left out, or
    both keys are one key with a character left out each. These are found in a dict: a
    store of 24,000 notes of three characters against 16,000 lines of four scanned every
    line for each note (~1 ms: 25 s of `check`). Every such key is as alike as the other."""
    total, least = len(key) + length, abs(len(key) - length) or 2
    if abs(len(key) - length) > 1 or 100 * (total - least - 2) >= cutoff * total:
        return -1
    firsts, deletions = index.firsts, index.deletions
    if firsts is None or deletions is None:
        return -1
    if length > len(key):  # the note with a character added
        return deletions.get(key) if length <= DELETION_KEYS else -1
    shorter = [key[:c] + key[c + 1 :] for c in range(len(key))]
    if length < len(key):  # a character left out of the note
        found = [i for d in shorter if (i := firsts.get(d)) is not None]
    elif length <= DELETION_KEYS:  # one left out of each
        found = [i for d in shorter if (i := deletions.get(d)) is not None]
    else:
        return -1
    return min(found) if found else None


def repeated_line(
    key: str, index: InstructionIndex, threshold: float = DEFAULT_THRESHOLD
) -> tuple[InstructionLine, float] | None:
    """The instruction line a note (its key) repeats, and the score (100 for an equal key)."""
    return repeated_lines([key], index, threshold)[key]


Repeat = tuple[InstructionLine, float]


def repeated_lines(
    keys: Iterable[str], index: InstructionIndex, threshold: float = DEFAULT_THRESHOLD
) -> dict[str, Repeat | None]:
    """:func:`repeated_line` of each of ``keys`` (each judged once): the keys of one length
    that must scan the lines of another are scored against them as one matrix.

    The answer: the best score that reaches ``threshold`` (``fuzz.ratio``, as ``similar``
    scores), the earliest line among equals. Only the keys whose length can reach the
    threshold are scored (``ratio`` is at most ``2 * shorter / (shorter + longer)``, and
    under ``1 - 1 / length`` for two keys of one length), each once, in the file's order:
    a file of a thousand one-character lines costs a note nothing, where each scan of them
    took ~3 ms (a store of 10,000 notes against 64,000 such lines: 26 s of `check`); nor
    does a note of one or two characters, whatever the lines (20,000 of `- x` against
    64,000 lines of `y`: ~2 min). Where only a key one step away can reach the threshold,
    it is looked up (:func:`_one_step`). Otherwise the keys of one length are scored
    against the lines of another (:func:`_nearest`) in a matrix of Indel distances: for
    two given lengths the score falls as the distance grows, so the first line at the
    least distance is that length's best; one ``extractOne`` a note took ~0.5 ms against
    6,400 lines of ten characters (24,000 notes of eight: ~13 s of `check`).
    """
    out: dict[str, Repeat | None] = {}
    by_length: dict[int, list[str]] = {}
    for key in keys:
        if key in out:
            continue
        same = index.by_key.get(key)
        out[key] = (same, 100.0) if same is not None else None
        if same is None and index.keys:
            by_length.setdefault(len(key), []).append(key)
    # Each key's best so far: (score, position in index.keys). The keys of one length are
    # in the file's order, so each length's first best is its earliest; a length's best
    # counts if it beats the others', or ties them earlier. (One merged window in the
    # file's order cost ~0.7 ms a note to build, as much as scoring it: 16,000 keys of 4
    # characters against each note of 3.) No key scored equals a note's key: every line's
    # key is in ``by_key``.
    best: dict[str, tuple[float, int]] = {}

    def found(key: str, score: float, position: int) -> None:
        was = best.get(key)
        if score >= threshold and (
            was is None or score > was[0] or (score == was[0] and position < was[1])
        ):
            best[key] = (score, position)

    from rapidfuzz import fuzz

    lengths, ranked = index.lengths, index.ranked
    cutoff = max(0, min(100, int(threshold)))
    for length, group in by_length.items():
        for lo, hi in _reachable(lengths, length, threshold):
            while lo < hi:
                end = bisect.bisect_right(lengths, lengths[lo], lo, hi)
                scanned = []
                for key in group:
                    step = _one_step(key, lengths[lo], index, cutoff) if cutoff else -1
                    if step is None:
                        continue
                    if step >= 0:
                        found(key, float(fuzz.ratio(key, index.keys[step])), step)
                    else:
                        scanned.append(key)
                for key, at in _nearest(scanned, ranked, lo, end, cutoff, threshold):
                    found(key, float(fuzz.ratio(key, ranked[at])), index.by_length[at])
                lo = end
    for key, (score, position) in best.items():
        out[key] = (index.lines[position], score)
    return out


NEAREST_CELLS = 1 << 20
"""The most cells (bytes) of one distance matrix of :func:`_nearest`: notes are scored in
batches of as many rows."""


def _nearest(
    keys: list[str], ranked: Sequence[str], lo: int, end: int, cutoff: int, threshold: float
) -> Iterator[tuple[str, int]]:
    """For each of ``keys`` (all of one length) that may reach ``threshold`` against
    ``ranked[lo:end]`` (lines of one length), the position in ``ranked`` of the first
    line of that slice at the least Indel distance (its best score, the first best as
    ``extractOne`` gives it). The caller scores it against the threshold.

    One ``cdist`` of distances over a batch of keys (rapidfuzz scores many short keys at
    once), each distance over ``bound`` written as ``bound + 1``; ``bound`` is the most
    a pair can be apart and reach ``cutoff`` (the integer under the threshold: a pair at
    the threshold is never left out). Where the distances do not fit a byte, or there is
    no compiled ``cdist``, each key is scored with ``extractOne``."""
    if not keys:
        return
    from rapidfuzz import fuzz, process

    from memory_ls.core.similar import compiled_cdist

    total = len(keys[0]) + len(ranked[lo])
    bound = (100 - cutoff) * total // 100
    compiled = compiled_cdist()
    if bound > 254 or compiled is None:
        floor = score_floor(threshold)
        for key in keys:
            hit = process.extractOne(key, ranked[lo:end], scorer=fuzz.ratio, score_cutoff=floor)
            if hit is not None:
                yield key, lo + hit[2]
        return
    from rapidfuzz.distance import Indel

    cdist, uint8 = compiled
    least = abs(len(keys[0]) - len(ranked[lo])) or 2
    wanted = [bytes((d,)) for d in range(least, bound + 1, 2)]  # (of the sum's parity)
    if not wanted:
        return
    choices = ranked[lo:end]
    width = end - lo
    rows = max(1, NEAREST_CELLS // width)
    for first in range(0, len(keys), rows):
        batch = keys[first : first + rows]
        matrix = memoryview(
            cdist(batch, choices, scorer=Indel.distance, score_cutoff=bound, dtype=uint8, workers=1)
        ).tobytes()
        for r, key in enumerate(batch):
            start, stop = r * width, (r + 1) * width
            for distance in wanted:
                at = matrix.find(distance, start, stop)
                if at >= 0:
                    yield key, lo + at - start
                    break


def _reachable(
    lengths: Sequence[int], length: int, threshold: float
) -> tuple[tuple[int, int], tuple[int, int]]:
    """The spans of positions in ``lengths`` (sorted) of the keys whose ``ratio`` with
    another key of ``length`` can reach ``threshold``: at least ``int(threshold)``, in
    integers (a bound exactly reached is never lost). ``ratio`` is ``100 * (1 - d / (a +
    b))`` for the Indel distance ``d`` of two keys of lengths ``a`` and ``b``, which is
    at least ``|a - b|``, and at least 2 for two different keys of one length: the keys
    shorter than ``length`` in the first span, the longer ones in the second, and those
    of ``length`` in one of them when ``1 - 1 / length`` reaches it."""
    cutoff = max(0, min(100, int(threshold)))
    if cutoff == 0:
        return (0, len(lengths)), (0, 0)
    shortest = -(-cutoff * length // (200 - cutoff))
    longest = length * (200 - cutoff) // cutoff
    lo, hi = bisect.bisect_left(lengths, shortest), bisect.bisect_right(lengths, longest)
    if 100 * (length - 1) >= cutoff * length:
        return (lo, hi), (0, 0)
    below = bisect.bisect_left(lengths, length, lo, hi)
    above = bisect.bisect_right(lengths, length, lo, hi)
    return (lo, below), (above, hi)


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
    # Each key judged once, as the editor's judge caches it: a store of one note repeated
    # is one note to score.
    hits = repeated_lines((b.key for b in bullets if not b.blank), index, threshold)
    for b in bullets:
        if b.blank:
            continue
        hit = hits[b.key]
        if hit is not None:
            out.append(instruction_duplicate_finding(b, *hit))
    return out
