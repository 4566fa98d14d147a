"""The note-wise three-way merge that git runs as the ``memory-ls`` merge driver (SPEC §14).

Pure: ``(base, current, other)`` texts in, the merged text (or the reason it is
left to ``git merge-file``) out. A note is its normalised text (what the parser
reads); everything else in the file (the header, headings, prose, blank lines,
blank bullets) is the file's *layout*.

- A note removed on either side is removed; a note added on either side is
  kept; an update is a removal plus an addition.
- The layout is CURRENT's, unless only OTHER changed it, then OTHER's. When
  both changed it differently the merge is not clean: the caller leaves the
  file to ``git merge-file`` (conflict markers). Trailing blank lines and
  whitespace at a line's end do not count as a change (a store's end is tidied
  by every write).
- Notes keep their lines in the layout side; the other side's new notes go
  after the layout side's last note, in that side's order. A new note whose
  near-duplicate key is already in the result collapses into the note there
  (CURRENT's wording wins when both sides add the same note). Notes that were
  already near-duplicates on one side stay as they are: a merge removes only
  what a side removed.
- The result keeps CURRENT's line endings and byte order mark, and is refused
  (not clean) when it would pass the 262,144-byte cap.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory_ls.core.notes import parse_bullet
from memory_ls.core.text import HEADER, MAX_STORE_BYTES, SplitText, split_text, utf8_length

BOTH_CHANGED = "both sides changed the lines around the notes"
OVER_CAP = f"the merged file would be larger than the {MAX_STORE_BYTES}-byte limit"


@dataclass(frozen=True, slots=True)
class MergeResult:
    """The merged text when ``clean``; otherwise why git must merge the file itself."""

    text: str | None
    clean: bool
    reason: str | None = None


def _note(line: str) -> str | None:
    """The note on ``line``, or ``None`` when the line is layout (prose, blank bullet, ...)."""
    bullet = parse_bullet(line)
    return bullet.note if bullet is not None and bullet.note else None


def _notes(lines: list[str]) -> list[str]:
    return [n for line in lines if (n := _note(line)) is not None]


def _layout(lines: list[str]) -> list[str]:
    """The lines that are not notes, as compared: trailing whitespace and blank lines left out.

    Whitespace at a line's end (a stray CR among it) is invisible, and how it
    reads back depends on the file's line endings: it is no change of the layout.
    """
    kept = [line.rstrip() for line in lines if _note(line) is None]
    while kept and not kept[-1].strip():
        kept.pop()
    # The header alone is what the first write adds to an empty file, and forgetting
    # every note leaves an empty file: neither is a change of the layout.
    return [] if kept == [HEADER] else kept


def merge_notes(base: str, current: str, other: str) -> MergeResult:
    """Merge three versions of a memory file note by note (SPEC §14)."""
    if current == other or other == base:
        return _capped(current)
    b, c, o = split_text(base), split_text(current), split_text(other)
    if current == base:
        # Only OTHER changed: its lines, in CURRENT's line endings and byte order mark.
        return _capped(_in_style_of(c, o.lines))
    base_layout, cur_layout, oth_layout = _layout(b.lines), _layout(c.lines), _layout(o.lines)
    if cur_layout == base_layout and oth_layout != base_layout:
        layout, incoming = o.lines, c.lines
    elif oth_layout in (base_layout, cur_layout):
        layout, incoming = c.lines, o.lines
    else:
        return MergeResult(None, False, BOTH_CHANGED)
    merged = _merge_lines(set(_notes(b.lines)), layout, incoming)
    return _capped(_in_style_of(c, merged))


def _in_style_of(current: SplitText, lines: list[str]) -> str:
    """``lines`` joined with CURRENT's line endings and byte order mark."""
    if current.eol == "\n":
        # A CR that ended the last line (no line feed after it) would, with a line
        # after it now, read back as a CRLF ending: the file would mix endings.
        lines = [line.rstrip("\r") for line in lines[:-1]] + lines[-1:]
    return current.render(lines)


def _merge_lines(base: set[str], layout: list[str], incoming: list[str]) -> list[str]:
    """``layout``'s lines without the notes ``incoming`` removed, plus ``incoming``'s new notes."""
    incoming_notes = set(_notes(incoming))
    kept: list[str] = []
    keys: set[str] = set()
    last_note = -1
    dropped = False
    for line in layout:
        bullet = parse_bullet(line)
        if bullet is not None and bullet.note:
            if bullet.note in base and bullet.note not in incoming_notes:
                dropped = True  # removed on the incoming side
                continue
            keys.add(bullet.key)
            last_note = len(kept)
        kept.append(line)
    added: list[str] = []
    layout_notes = set(_notes(layout))
    for line in incoming:
        bullet = parse_bullet(line)
        if bullet is None or not bullet.note:
            continue
        note = bullet.note
        if note in base or note in layout_notes or bullet.key in keys:
            continue
        keys.add(bullet.key)
        added.append(f"- {note}")
    if dropped:
        kept = _tidy_end(kept)
        last_note = max((i for i, line in enumerate(kept) if _note(line)), default=-1)
    if not added:
        return kept
    if last_note >= 0:
        return kept[: last_note + 1] + added + kept[last_note + 1 :]
    # No note left to follow: append as `add` does (trailing whitespace trimmed;
    # an empty file gets the header).
    body = "\n".join(kept).rstrip()
    head = f"{body}\n" if body else f"{HEADER}\n\n"
    return (head + "\n".join(added) + "\n").split("\n")


def _tidy_end(lines: list[str]) -> list[str]:
    """As ``forget`` leaves a file: exactly one trailing newline; nothing stays nothing."""
    body = "\n".join(lines).rstrip("\n")
    return (body + "\n").split("\n") if body else [""]


def _capped(text: str) -> MergeResult:
    if utf8_length(text) > MAX_STORE_BYTES:
        return MergeResult(None, False, OVER_CAP)
    return MergeResult(text, True)
