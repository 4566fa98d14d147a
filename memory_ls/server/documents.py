"""One open memory document and its incremental state: lines → bullets → key index.

An edit re-parses only the lines it touched. What depends on one line alone
(its bullet and its line findings) is cached per line; the key index maps each
near-duplicate key to the lines holding it, so duplicate and cross-scope checks
look only at the keys that can have findings.

The document also says what changed since its diagnostics last looked: the lines
edited in place (:attr:`MemoryDocument.dirty_lines`), the keys whose notes changed
(:attr:`MemoryDocument.dirty_keys`), and an :attr:`MemoryDocument.epoch` that moves
when lines moved (then everything after the edit has new line numbers).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memory_ls.core.checks import Finding, line_findings, parsed_lines_findings
from memory_ls.core.notes import Bullet, parse_bullet, parse_bullets
from memory_ls.core.text import BOM, split_text, utf8_length
from memory_ls.server.positions import from_client

_BREAK = re.compile(r"\r?\n")


@dataclass(frozen=True, slots=True)
class Span:
    """A change's range in client units, as LSP sends it."""

    line: int
    character: int
    end_line: int
    end_character: int


class MemoryDocument:
    """The editor's text of one memory file, kept parsed."""

    def __init__(self, uri: str, path: Path, text: str, version: int | None) -> None:
        self.uri = uri
        self.path = path
        self.version = version
        self.layout = 0
        """Bumped whenever lines move or a line starts or stops being a note."""
        self.notes_version = 0
        """Bumped whenever any note's text changes."""
        self.bullets_version = 0
        """Bumped whenever any bullet changes: its note, its line or its columns (a note
        that only moved right, ``-  use X``, is the same note at new columns)."""
        self.touched_keys: set[str] = set()
        """Keys added or removed since the ``similar`` hints last looked (consumed by them)."""
        self.epoch = 0
        """Bumped when the whole text is replaced or lines move: line-keyed state is stale."""
        self.dirty_lines: set[int] = set()
        """Lines edited in place since the diagnostics last looked (consumed by them)."""
        self.dirty_keys: set[str] = set()
        """Keys whose lines or notes changed since the diagnostics last looked (consumed)."""
        self.moved_from: int | None = None
        """The first line whose number or text may have changed when lines were added or
        removed since the diagnostics last looked (consumed by them); ``None``: none."""
        self.line_shift = 0
        """How far the lines after the last edit moved since the diagnostics last looked
        (consumed by them); a hint for reusing their encoded form, never trusted alone."""
        self._notes: list[str] | None = None
        """The notes in file order, kept while no note appears, disappears or moves."""
        self._note_lines: list[int] = []
        """The line of each note in :attr:`_notes`."""
        self._noted: list[Bullet] = []
        """The bullet of each note in :attr:`_notes` (blank bullets are no note)."""
        self._shown: tuple[str, ...] | None = None
        """:attr:`_notes` as :meth:`notes` last gave them (``None``: changed since)."""
        self._given: tuple[str, ...] | None = None
        """What :meth:`notes` last gave, kept while only notes' texts change (``None``: a
        note appeared, disappeared or moved since)."""
        self._edited: set[int] = set()
        """The indices of :attr:`_notes` set in place since :attr:`_given` was given."""
        self._since: tuple[tuple[str, ...], tuple[int, ...]] | None = None
        """What :meth:`notes` gave before its current answer, and the only indices where
        the two may differ (:meth:`notes_changed`); ``None``: not known."""
        self.set_text(text)

    # -- whole-text ---------------------------------------------------------------

    def set_text(self, text: str) -> None:
        """Replace the whole text and re-parse everything."""
        split = split_text(text)
        self.bom = split.bom
        self.eol = split.eol
        self.lines: list[str] = split.lines
        self.size = utf8_length(text)
        odd: list[int] = []
        self.bullets: list[Bullet | None] = parse_bullets(self.lines, odd)
        self._reindex(odd)
        self.touched_keys = set(self.key_lines)
        self.epoch += 1
        self.dirty_lines = set()
        self.dirty_keys = set()
        self.moved_from = None
        self.line_shift = 0

    def text(self) -> str:
        """The document's text as the editor holds it."""
        body = self.eol.join(self.lines)
        return BOM + body if self.bom else body

    def _reindex(self, odd: list[int]) -> None:
        """Rebuild the line findings and the key index (the whole text changed; ``odd``:
        the lines :func:`parse_bullets` found no plain note on)."""
        self.found: dict[int, list[Finding]] = parsed_lines_findings(self.lines, self.bullets, odd)
        key_lines: dict[str, list[int]] = {}
        dup_keys: set[str] = set()
        get = key_lines.get
        # One pass, and a list only for a key seen first (not one per line for
        # `setdefault` to throw away): an opened store is indexed before it is published.
        for b in self.bullets:
            if b is not None and (key := b.key):
                at = get(key)
                if at is None:
                    key_lines[key] = [b.line]
                else:
                    at.append(b.line)
                    dup_keys.add(key)
        self.key_lines = key_lines
        self.dup_keys = dup_keys
        self.layout += 1
        self.notes_version += 1
        self.bullets_version += 1
        self._notes = self._shown = None

    # -- incremental ------------------------------------------------------------

    def apply_change(self, span: Span | None, text: str, encoding: str) -> None:
        """Apply one ``didChange`` content change (``span`` ``None``: the whole text)."""
        if span is None:
            self.set_text(text)
            return
        lines = self.lines
        last = len(lines) - 1
        sl = min(max(span.line, 0), last)
        el = min(max(span.end_line, 0), last)
        if (el, span.end_character) < (sl, span.character):
            sl, el = el, sl
        sc = (
            from_client(lines[sl], span.character, encoding)
            if span.line <= last
            else len(lines[sl])
        )
        ec = (
            from_client(lines[el], span.end_character, encoding)
            if span.end_line <= last
            else len(lines[el])
        )
        if sl == el and ec < sc:
            sc, ec = ec, sc
        old = lines[sl : el + 1]
        pieces = _BREAK.split(text)
        pieces[0] = old[0][:sc] + pieces[0]
        pieces[-1] = pieces[-1] + old[-1][ec:]
        removed_bytes = sum(utf8_length(x) for x in old) + len(self.eol) * (len(old) - 1)
        added_bytes = sum(utf8_length(x) for x in pieces) + len(self.eol) * (len(pieces) - 1)
        self.size += added_bytes - removed_bytes
        lines[sl : el + 1] = pieces
        if len(pieces) == len(old):
            self._reparse_in_place(sl, pieces)
        else:
            self._reparse_moved(sl, el, pieces)

    def _reparse_in_place(self, first: int, pieces: list[str]) -> None:
        """Lines replaced one for one: update only their entries."""
        for offset, line in enumerate(pieces):
            i = first + offset
            # Any edited line: a column's client units depend on the text before it.
            self.dirty_lines.add(i)
            before = self.bullets[i]
            after = parse_bullet(line, i)
            if before == after:
                continue
            self.bullets[i] = after
            self.bullets_version += 1
            if (before is None) != (after is None) or (
                before is not None and after is not None and before.blank != after.blank
            ):
                self.layout += 1
                self._notes = self._shown = None
            if before is not None and before.key:
                self.dirty_keys.add(before.key)
                if after is None or after.key != before.key:
                    self._drop_key(before.key, i)
            if after is not None and after.key:
                self.dirty_keys.add(after.key)
                if before is None or before.key != after.key:
                    self._add_key(after.key, i)
            if (before.note if before else None) != (after.note if after else None):
                self.notes_version += 1
                if self._notes is not None and after is not None and after.note:
                    at = bisect.bisect_left(self._note_lines, i)
                    self._notes[at] = after.note
                    self._noted[at] = after
                    self._edited.add(at)
                    self._shown = None
            found = line_findings(after) if after is not None else []
            if found:
                self.found[i] = found
            else:
                self.found.pop(i, None)

    def _reparse_moved(self, first: int, last_old: int, pieces: list[str]) -> None:
        """Lines were added or removed: shift what follows and its index entries."""
        shift = len(pieces) - (last_old - first + 1)
        self.line_shift += shift
        fresh = [parse_bullet(line, first + k) for k, line in enumerate(pieces)]
        removed = self.bullets[first : last_old + 1]
        for b in removed:
            if b is not None and b.key:
                self._drop_key(b.key, b.line)
        tail = self.bullets[last_old + 1 :]
        # The index entries after the edit move by `shift`, once per key found there.
        key_lines = self.key_lines
        for key in {b.key for b in tail if b is not None and b.key}:
            at = key_lines[key]
            cut = bisect.bisect_right(at, last_old)
            at[cut:] = [i + shift for i in at[cut:]]
        # Bullets are shared (parse_bullet caches them): a moved one is a new tuple,
        # built directly (`_replace` costs three times as much).
        new = tuple.__new__
        self.bullets[last_old + 1 :] = [
            None if b is None else new(Bullet, (b[0] + shift, *b[1:])) for b in tail
        ]
        self.bullets[first : last_old + 1] = fresh
        found: dict[int, list[Finding]] = {}
        for i, old_found in self.found.items():
            if i < first:
                found[i] = old_found
            elif i > last_old and (b := self.bullets[i + shift]) is not None:
                found[i + shift] = line_findings(b)
        for b in fresh:
            if b is not None:
                if line_found := line_findings(b):
                    found[b.line] = line_found
                if b.key:
                    self._add_key(b.key, b.line)
        self.found = found
        self.layout += 1
        self.notes_version += 1
        self.bullets_version += 1
        self._notes = self._shown = None
        # Everything from the first changed line on has new numbers or text; a line
        # edited in place before it was numbered as it still is.
        earlier = min(self.dirty_lines, default=first)
        self.moved_from = min(first, earlier, first if self.moved_from is None else self.moved_from)
        self.dirty_lines = set()
        self.dirty_keys.update(b.key for b in (*removed, *fresh) if b is not None and b.key)

    def _drop_key(self, key: str, line: int) -> None:
        at = self.key_lines.get(key)
        if not at:
            return
        idx = bisect.bisect_left(at, line)
        if idx < len(at) and at[idx] == line:
            at.pop(idx)
        if not at:
            del self.key_lines[key]
            self.touched_keys.add(key)
        if len(at) < 2:
            self.dup_keys.discard(key)

    def _add_key(self, key: str, line: int) -> None:
        at = self.key_lines.setdefault(key, [])
        bisect.insort(at, line)
        if len(at) > 1:
            self.dup_keys.add(key)
        self.touched_keys.add(key)

    # -- queries ----------------------------------------------------------------

    def notes(self) -> tuple[str, ...]:
        """The notes in file order (blank bullets dropped).

        Kept between calls while only notes' texts change, so a keystroke does not
        list every line (the recall plan asks on every publish); a tuple, the same one
        until a note changes, which the plan keeps as it is (no copy of its own).
        """
        notes = self._notes if self._notes is not None else self._index_notes()
        if self._shown is None:
            shown = tuple(notes)
            before = self._given
            self._since = None if before is None else (before, tuple(sorted(self._edited)))
            self._edited = set()
            self._shown = self._given = shown
        return self._shown

    def noted_bullets(self) -> list[Bullet]:
        """The bullets of :meth:`notes`, in the same order: every bullet but the blank ones.

        The list the document keeps: read it, never change it.
        """
        if self._notes is None:
            self._index_notes()
        return self._noted

    def _index_notes(self) -> list[str]:
        """List the notes, their lines and their bullets again; the notes."""
        found = [b for b in self.bullets if b is not None and b.note]
        self._noted = found
        self._notes = notes = [b.note for b in found]
        self._note_lines = [b.line for b in found]
        self._given = None  # (notes came, went or moved: no index says what changed)
        self._edited = set()
        return notes

    def notes_changed(self, earlier: tuple[str, ...]) -> list[int] | None:
        """The indices where :meth:`notes` now differs from ``earlier``, one of its own
        answers, when the document knows them without comparing every note: ``earlier``
        is its current answer, or the one before while notes were only edited in place
        (an editor's keystroke). ``None``: it does not know (compare them).

        The recall plan asks on every keystroke: finding the one changed note of 4,500
        by comparing the two tuples cost ~0.05 ms of it.
        """
        shown = self.notes()
        if earlier is shown:
            return []
        since = self._since
        if since is None or since[0] is not earlier:
            return None
        # (An index edited back to its earlier text is no change.)
        return [i for i in since[1] if earlier[i] != shown[i]]

    def notes_edited(self, earlier: tuple[str, ...]) -> tuple[list[int], Sequence[str]] | None:
        """:meth:`notes_changed` without making the notes a tuple: the indices of the notes
        edited in place since ``earlier``, :meth:`notes`' last answer, in order (some may
        hold their earlier text again), and the notes as they are now (a view of the
        document's own list: read it at once, never keep it). ``None``: ``earlier`` is not
        its last answer, or notes came, went or moved since.

        A keystroke's recall check asks: a tuple of 4,500 notes, made and then freed with
        the plan it went into, cost ~0.03 ms of it.
        """
        if earlier is not self._given or self._notes is None:
            return None
        if self._shown is not None:
            return [], self._shown
        return sorted(self._edited), self._notes

    def note_bullets(self) -> list[Bullet]:
        """Every bullet, blank ones included, in file order."""
        return [b for b in self.bullets if b is not None]

    def bullets_for(self, keys: Iterable[str]) -> list[Bullet]:
        """The bullets holding any of ``keys``, in file order."""
        lines = sorted(i for k in keys for i in self.key_lines.get(k, ()))
        return [b for i in lines if (b := self.bullets[i]) is not None]

    def bullet_at(self, line: int) -> Bullet | None:
        """The bullet on ``line``, if any (``None`` out of range)."""
        if 0 <= line < len(self.bullets):
            return self.bullets[line]
        return None

    def first_of(self, key: str) -> Bullet | None:
        """The first bullet with ``key``."""
        at = self.key_lines.get(key)
        return self.bullets[at[0]] if at else None
