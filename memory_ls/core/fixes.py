"""Code-action edits, computed from a file's lines and a finding's ``data`` (SPEC §7).

Pure: every function takes the document's lines (without line endings) and
returns plain :class:`Edit` values whose columns are ``str`` indices; the
language server converts them to the negotiated position encoding. Nothing
here re-analyses the file beyond parsing the lines it is told about.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memory_ls.core.notes import Bullet, parse_bullet
from memory_ls.core.text import has_controls, hidden_characters, normalise, remove_hidden


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the text from ``(line, start)`` to ``(end_line, end)`` with ``new_text``."""

    line: int
    start: int
    end_line: int
    end: int
    new_text: str


def _bullet(lines: Sequence[str], line: int) -> Bullet | None:
    if 0 <= line < len(lines):
        return parse_bullet(lines[line], line)
    return None


def remove_line(lines: Sequence[str], line: int) -> Edit | None:
    """Remove one whole line, its line break included."""
    if not 0 <= line < len(lines):
        return None
    if line + 1 < len(lines):
        return Edit(line, 0, line + 1, 0, "")
    if line > 0:  # the last line: take the break before it instead
        return Edit(line - 1, len(lines[line - 1]), line, len(lines[line]), "")
    return Edit(0, 0, 0, len(lines[0]), "")


def replace_note(lines: Sequence[str], line: int, text: str) -> Edit | None:
    """Replace the visible text of the bullet on ``line`` with ``text``."""
    b = _bullet(lines, line)
    if b is None:
        return None
    return Edit(line, b.start, line, b.end, text)


def expected_note(lines: Sequence[str], line: int, note: str) -> Bullet | None:
    """The bullet on ``line`` if it still holds ``note`` (the data is not stale)."""
    b = _bullet(lines, line)
    if b is None or b.note != note:
        return None
    return b


def find_note(lines: Sequence[str], note: str, hint: int = -1) -> int | None:
    """The line holding ``note``: ``hint`` when it still does, else the first one that does."""
    if expected_note(lines, hint, note) is not None:
        return hint
    for i, text in enumerate(lines):
        b = parse_bullet(text, i)
        if b is not None and b.note == note:
            return i
    return None


def remove_duplicate(lines: Sequence[str], line: int, note: str) -> list[Edit]:
    """Remove the later duplicate on ``line`` (if it still holds ``note``)."""
    if expected_note(lines, line, note) is None:
        return []
    edit = remove_line(lines, line)
    return [edit] if edit else []


def keep_later_wording(
    lines: Sequence[str], line: int, note: str, first_line: int, first: str
) -> list[Edit]:
    """Keep the later note's wording: it replaces the first note, and its own line goes."""
    if expected_note(lines, line, note) is None or expected_note(lines, first_line, first) is None:
        return []
    replace = replace_note(lines, first_line, note)
    remove = remove_line(lines, line)
    return [e for e in (replace, remove) if e is not None]


def merged_text(first: str, second: str) -> str:
    """The proposed merge of two notes, for the user to reword."""
    return normalise(f"{first}; {second}")


def merge_lines(lines: Sequence[str], targets: Sequence[int]) -> list[Edit]:
    """Merge the notes on ``targets`` into the first one (``"a; b; c"``); remove the rest."""
    bullets = [b for t in sorted(set(targets)) if (b := _bullet(lines, t)) and b.note]
    if len(bullets) < 2:
        return []
    text = "; ".join(b.note for b in bullets)
    first = Edit(bullets[0].line, bullets[0].start, bullets[0].line, bullets[0].end, text)
    return _join(lines, [b.line for b in bullets[1:]], [first])


def merge_pair(
    lines: Sequence[str], line: int, note: str, first_line: int, first: str
) -> list[Edit]:
    """Merge a note into an earlier one: ``"<first>; <second>"``, the later line removed."""
    if expected_note(lines, line, note) is None or expected_note(lines, first_line, first) is None:
        return []
    return merge_lines(lines, [first_line, line])


def normalise_line(lines: Sequence[str], line: int) -> list[Edit]:
    """Rewrite a note as its normalised text (controls and whitespace runs to one space)."""
    b = _bullet(lines, line)
    if b is None or b.blank:
        return []
    visible = lines[line][b.start : b.end]
    if visible == b.note:
        return []
    return [Edit(line, b.start, line, b.end, b.note)]


def remove_hidden_line(lines: Sequence[str], line: int) -> list[Edit]:
    """Remove zero-width, bidirectional and tag characters from a note."""
    b = _bullet(lines, line)
    if b is None:
        return []
    visible = lines[line][b.start : b.end]
    cleaned = remove_hidden(visible)
    if cleaned == visible:
        return []
    if not normalise(cleaned):  # nothing left: the line would become a blank bullet
        edit = remove_line(lines, line)
        return [edit] if edit else []
    return [Edit(line, b.start, line, b.end, cleaned)]


def remove_blank(lines: Sequence[str], line: int) -> list[Edit]:
    """Remove a blank bullet's line."""
    b = _bullet(lines, line)
    if b is None or not b.blank:
        return []
    edit = remove_line(lines, line)
    return [edit] if edit else []


def fix_all(lines: Sequence[str]) -> list[Edit]:
    """Every safe fix at once: later exact duplicates, blank bullets, controls, hidden chars.

    Near-duplicates that differ in wording are left alone: choosing a wording is
    the user's call. The edits never overlap, so a client can apply them as one.
    """
    seen: set[str] = set()
    removed: list[int] = []
    rewritten: list[Edit] = []
    for i, text in enumerate(lines):
        b = parse_bullet(text, i)
        if b is None:
            continue
        if b.blank:
            removed.append(i)
            continue
        visible = text[b.start : b.end]
        cleaned = normalise(remove_hidden(visible))
        if not cleaned:
            removed.append(i)
            continue
        if cleaned in seen:
            removed.append(i)
            continue
        seen.add(cleaned)
        if cleaned != visible and (has_controls(visible) or hidden_characters(visible)):
            rewritten.append(Edit(i, b.start, i, b.end, cleaned))
    return _join(lines, removed, rewritten)


def _join(lines: Sequence[str], removed: list[int], rewritten: list[Edit]) -> list[Edit]:
    """Turn removed lines (runs merged) and in-line rewrites into non-overlapping edits."""
    edits = list(rewritten)
    gone = set(removed)
    runs: list[tuple[int, int]] = []
    for i in sorted(gone):
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    for first, last in runs:
        if last + 1 < len(lines):
            edits.append(Edit(first, 0, last + 1, 0, ""))
        elif first > 0:
            edits.append(Edit(first - 1, len(lines[first - 1]), last, len(lines[last]), ""))
        else:
            edits.append(Edit(0, 0, last, len(lines[last]), ""))
    # A run at the end takes the break before it, which may touch a rewrite on the
    # line before; the rewrite ends at the note's end, so the two never overlap.
    return sorted(edits, key=lambda e: (e.line, e.start))


def apply_edits(lines: Sequence[str], edits: Sequence[Edit], eol: str = "\n") -> str:
    """Apply non-overlapping edits to ``lines`` and return the new text (for tests and checks)."""
    text = eol.join(lines)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + len(eol))

    def at(line: int, col: int) -> int:
        return offsets[line] + col

    for e in sorted(edits, key=lambda e: (e.line, e.start), reverse=True):
        text = text[: at(e.line, e.start)] + e.new_text + text[at(e.end_line, e.end) :]
    return text
