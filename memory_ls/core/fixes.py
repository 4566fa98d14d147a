"""Code-action edits, computed from a file's lines and a finding's ``data`` (SPEC §7).

Pure: every function takes the document's lines (without line endings) and
returns plain :class:`Edit` values whose columns are ``str`` indices; the
language server converts them to the negotiated position encoding. Nothing
here re-analyses the file beyond parsing the lines it is told about.

:func:`quick_fixes` reads the ``data`` a client sends back as its code's
``TypedDict`` (:mod:`memory_ls.core.checks`), checking every field's type, and
builds each fix from it: one table, :data:`QUICK_FIXES`, says which codes have
fixes and what each reads.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar, cast, get_args, get_origin, get_type_hints

from memory_ls.core.checks import (
    ConflictData,
    CrossScopeData,
    DiagnosticData,
    DuplicateData,
    ExportStaleData,
    HiddenUnicodeData,
    InstructionDuplicateData,
    NoteData,
    PairData,
    SimilarData,
    StalePathData,
    StaleScriptData,
)
from memory_ls.core.notes import Bullet, parse_bullet
from memory_ls.core.text import (
    MAX_NOTE_UTF16,
    escape_unseen,
    has_controls,
    hidden_characters,
    normalise,
    remove_hidden,
    utf16_length,
)

T = TypeVar("T")
D = TypeVar("D")


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the text from ``(line, start)`` to ``(end_line, end)`` with ``new_text``."""

    line: int
    start: int
    end_line: int
    end: int
    new_text: str


@dataclass(frozen=True, slots=True)
class Selection:
    """A range of one line for the user to edit: ``[start, end)`` of ``line``."""

    line: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class CommandCall:
    """A change that is not an edit of this document: a ``memory.*`` command the server
    runs through the store's safe writer, with its argument (the server adds ``uri``)."""

    command: str
    argument: dict[str, str]


@dataclass(frozen=True, slots=True)
class Fix:
    """One code action's change: its title, its edits (or its command), and whether to
    prefer it; or, instead of edits, a range to select for the user to edit (no snippet:
    the server shows the document with that selection)."""

    title: str
    edits: list[Edit]
    preferred: bool = False
    select: Selection | None = None
    command: CommandCall | None = None
    refused: str | None = None
    """Why this fix cannot be applied (no edits then): shown as a disabled action."""


def shorten(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters for a title."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quoted(note: str) -> str:
    """A note in a title: hidden characters escaped (a bidi control must not reorder what
    the person reads before choosing), then shortened."""
    return shorten(escape_unseen(note))


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
    bullets = _notes_on(lines, targets)
    if len(bullets) < 2:
        return []
    text = "; ".join(b.note for b in bullets)
    first = Edit(bullets[0].line, bullets[0].start, bullets[0].line, bullets[0].end, text)
    return _join(lines, [b.line for b in bullets[1:]], [first])


def _notes_on(lines: Sequence[str], targets: Sequence[int]) -> list[Bullet]:
    """The notes (not blank bullets) on ``targets``, in file order."""
    return [b for t in sorted(set(targets)) if (b := _bullet(lines, t)) and b.note]


def merge_pair(
    lines: Sequence[str], line: int, note: str, first_line: int, first: str
) -> list[Edit]:
    """Merge a note into an earlier one: ``"<first>; <second>"``, the later line removed."""
    if expected_note(lines, line, note) is None or expected_note(lines, first_line, first) is None:
        return []
    return merge_lines(lines, [first_line, line])


def conflict_merge_text(earlier: str, later: str) -> str:
    """Two conflicting notes as one: the later one (a note is appended, so the later is
    usually the newer decision) with the earlier kept as its history, for the user to
    reword: ``"Never use pnpm (was: Use pnpm for installs)"``. The claim reader skips a
    ``(was: …)`` part, so the merged note conflicts with nothing the later one did not."""
    return normalise(f"{later.rstrip('.')} (was: {earlier.rstrip('.')})")


def merge_conflicting(
    lines: Sequence[str], line: int, note: str, other_line: int, other: str
) -> list[Edit]:
    """Replace the earlier of two conflicting notes with :func:`conflict_merge_text` and
    remove the later one (if both still hold what the data says)."""
    if line == other_line or note == other:
        return []
    if expected_note(lines, line, note) is None or expected_note(lines, other_line, other) is None:
        return []
    (first_line, first), (later_line, later) = sorted([(line, note), (other_line, other)])
    replace = replace_note(lines, first_line, conflict_merge_text(first, later))
    remove = remove_line(lines, later_line)
    return [e for e in (replace, remove) if e is not None]


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


# -- reading data back ------------------------------------------------------------


def read_data(shape: type[T], raw: object) -> T | None:
    """``raw`` read as the ``TypedDict`` ``shape`` (its keys only), or ``None`` if it is not one.

    The data comes back from a client, which may drop or mangle it: every key
    must be there with a value of its declared type. An ``int`` is read as a
    ``float`` too (a JavaScript client writes ``86.0`` back as ``86``); a
    ``bool`` is not an ``int``.
    """
    if not isinstance(raw, Mapping):
        return None
    out: dict[str, object] = {}
    for name, read in _readers(shape):
        value = read(raw.get(name, _MISSING))
        if value is _MISSING:
            return None
        out[name] = value
    return cast(T, out)


_MISSING: Any = object()
"""A key that is not there, or a value of the wrong type."""


def _read_str(value: object) -> object:
    return value if isinstance(value, str) else _MISSING


def _read_int(value: object) -> object:
    return value if isinstance(value, int) and not isinstance(value, bool) else _MISSING


def _read_float(value: object) -> object:
    # A client may send back 1e999 (read as inf) or an integer of 400 digits
    # (too large for a float): neither is a score any diagnostic gave it.
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:
            return _MISSING
        return number if math.isfinite(number) else _MISSING
    return _MISSING


def _read_bool(value: object) -> object:
    return value if isinstance(value, bool) else _MISSING


_READERS: dict[object, Callable[[object], object]] = {
    str: _read_str,
    int: _read_int,
    float: _read_float,
    bool: _read_bool,
}


_Readers = tuple[tuple[str, Callable[[object], object]], ...]
_READERS_OF: dict[object, _Readers] = {}


def _readers(shape: object) -> _Readers:
    """How to read each field of the ``TypedDict`` ``shape`` from JSON (built once per shape)."""
    readers = _READERS_OF.get(shape)
    if readers is None:
        out: list[tuple[str, Callable[[object], object]]] = []
        for name, kind in get_type_hints(shape).items():
            if get_origin(kind) is Literal:
                out.append((name, functools.partial(_read_choice, get_args(kind))))
            elif kind in _READERS:
                out.append((name, _READERS[kind]))
            else:
                raise TypeError(f"{shape!r}.{name}: {kind!r} is not read from JSON")
        readers = _READERS_OF[shape] = tuple(out)
    return readers


def _read_choice(allowed: tuple[object, ...], value: object) -> object:
    return value if isinstance(value, str) and value in allowed else _MISSING


# -- quick fixes -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _QuickFixes(Generic[D]):
    """One code's quick fixes: the shape of its data, and the fixes made from it."""

    shape: type[D]
    make: Callable[[Sequence[str], int, D], list[Fix]]

    def __call__(self, lines: Sequence[str], line: int, raw: object) -> list[Fix] | None:
        data = read_data(self.shape, raw)
        return None if data is None else self.make(lines, line, data)


def _duplicate(lines: Sequence[str], line: int, data: DuplicateData) -> list[Fix]:
    if data["exact"]:
        return [Fix("Remove the duplicate note", remove_duplicate(lines, line, data["note"]), True)]
    return _wordings(lines, line, data)


def _wordings(lines: Sequence[str], line: int, data: PairData) -> list[Fix]:
    """Keep either wording of two near-duplicates, or merge them."""
    note, first, first_line = data["note"], data["first"], data["firstLine"]
    merged = merged_text(first, note)
    return [
        Fix(f"Keep “{quoted(first)}”", remove_duplicate(lines, line, note)),
        Fix(f"Keep “{quoted(note)}”", keep_later_wording(lines, line, note, first_line, first)),
        _merge(
            f"Merge into “{quoted(merged)}”",
            merged,
            merge_pair(lines, line, note, first_line, first),
        ),
    ]


def _cross_scope(lines: Sequence[str], line: int, data: CrossScopeData) -> list[Fix]:
    title = f"Forget here (it stays in {data['otherScope']} memory)"
    return [Fix(title, remove_duplicate(lines, line, data["note"]))]


def _conflict(lines: Sequence[str], line: int, data: ConflictData) -> list[Fix]:
    """Forget either note, or merge them (inside one store); across scopes, forget this
    note or, through the ``memory.forget`` command, the other store's."""
    note, other, other_line = data["note"], data["other"], data["otherLine"]
    if data["scope"] == data["otherScope"]:
        earlier, later = (note, other) if line < other_line else (other, note)
        merged = conflict_merge_text(earlier, later)
        merge = _merge(
            f"Merge the two notes: “{quoted(merged)}”",
            merged,
            merge_conflicting(lines, line, note, other_line, other),
        )
        return [
            Fix(f"Forget this note: “{quoted(note)}”", remove_duplicate(lines, line, note)),
            Fix(
                f"Forget the other note: “{quoted(other)}”",
                remove_duplicate(lines, other_line, other),
            ),
            merge,
        ]
    where = data["otherScope"]
    forget = CommandCall("memory.forget", {"text": other, "scope": where})
    return [
        Fix(
            f"Forget this note (the {where} note then applies here)",
            remove_duplicate(lines, line, note),
        ),
        Fix(f"Forget the {where} note, in every project: “{quoted(other)}”", [], command=forget),
    ]


def _merge(title: str, merged: str, edits: list[Edit]) -> Fix:
    """A merge that writes the note ``merged`` with ``edits``; refused, with why, when
    ``merged`` is longer than a note may be (SPEC §2: the store would refuse it, and
    ``too-long`` would flag what the fix wrote). (That no fix takes the store over its
    cap is the shell's check: it knows the line ends.) Stale data (no edits) stays
    without edits, so the fix is left out."""
    units = utf16_length(merged)
    if not edits or units <= MAX_NOTE_UTF16:
        return Fix(title, edits)
    refused = (
        f"The merged note would be {units} characters, longer than {MAX_NOTE_UTF16}: "
        "forget one of the notes, or shorten them first."
    )
    return Fix(title, [], refused=refused)


def _blank(lines: Sequence[str], line: int, _: NoteData) -> list[Fix]:
    return [Fix("Remove the blank bullet", remove_blank(lines, line), True)]


def _controls(lines: Sequence[str], line: int, _: NoteData) -> list[Fix]:
    return [Fix("Normalise the note", normalise_line(lines, line), True)]


def _hidden(lines: Sequence[str], line: int, _: HiddenUnicodeData) -> list[Fix]:
    return [Fix("Remove the hidden characters", remove_hidden_line(lines, line), True)]


def _export_stale(lines: Sequence[str], line: int, data: ExportStaleData) -> list[Fix]:
    """Rewrite an instruction file's memory-ls block as the data says it should read."""
    from memory_ls.core.bridges import EXPORT_BEGIN, EXPORT_END

    last = data["lastLine"]
    if not (0 <= line < last < len(lines)):
        return []  # stale data: the block moved since
    if lines[line].strip() != EXPORT_BEGIN or lines[last].strip() != EXPORT_END:
        return []
    edit = Edit(line, 0, last, len(lines[last]), data["block"])
    return [Fix("Rewrite the memory-ls block from memory.md", [edit], True)]


def forget_note(lines: Sequence[str], line: int, note: str) -> Fix:
    """Forget the note on ``line`` (if it still holds ``note``): its whole line goes."""
    return Fix("Forget this note", remove_duplicate(lines, line, note))


def mention_selection(
    lines: Sequence[str], line: int, note: str, kind: Literal["path", "script"], text: str
) -> Selection | None:
    """Where the note on ``line`` (if it still holds ``note``) mentions the path or
    script ``text`` (its first such mention, as :mod:`memory_ls.core.stale` reads them)."""
    from memory_ls.core.stale import path_mentions, script_mentions

    b = expected_note(lines, line, note)
    if b is None:
        return None
    visible = lines[line][b.start : b.end]
    found = path_mentions(visible) if kind == "path" else script_mentions(visible)
    for m in found:
        if m.text == text:
            return Selection(line, b.start + m.start, b.start + m.end)
    return None


def _stale(
    lines: Sequence[str], line: int, note: str, kind: Literal["path", "script"], text: str
) -> list[Fix]:
    """Edit the note (the stale mention selected), or forget it."""
    selection = mention_selection(lines, line, note, kind, text)
    edit = [Fix("Edit the note", [], select=selection)] if selection is not None else []
    return [forget_note(lines, line, note), *edit]


def _stale_path(lines: Sequence[str], line: int, data: StalePathData) -> list[Fix]:
    return _stale(lines, line, data["note"], "path", data["mention"])


def _stale_script(lines: Sequence[str], line: int, data: StaleScriptData) -> list[Fix]:
    return _stale(lines, line, data["note"], "script", data["script"])


def _instruction_duplicate(
    lines: Sequence[str], line: int, data: InstructionDuplicateData
) -> list[Fix]:
    return [forget_note(lines, line, data["note"])]


QUICK_FIXES: dict[str, _QuickFixes[Any]] = {
    "duplicate": _QuickFixes(DuplicateData, _duplicate),
    "similar": _QuickFixes(SimilarData, _wordings),
    "cross-scope-duplicate": _QuickFixes(CrossScopeData, _cross_scope),
    "blank-note": _QuickFixes(NoteData, _blank),
    "control-characters": _QuickFixes(NoteData, _controls),
    "hidden-unicode": _QuickFixes(HiddenUnicodeData, _hidden),
    "export-stale": _QuickFixes(ExportStaleData, _export_stale),
    "stale-path": _QuickFixes(StalePathData, _stale_path),
    "stale-script": _QuickFixes(StaleScriptData, _stale_script),
    "instruction-duplicate": _QuickFixes(InstructionDuplicateData, _instruction_duplicate),
    "conflict": _QuickFixes(ConflictData, _conflict),
}
"""Every code that has quick fixes: the data it reads, and how it makes them."""


def quick_fixes(lines: Sequence[str], code: str, data: object) -> list[Fix] | None:
    """The quick fixes for one diagnostic, from its ``data`` alone (SPEC §7).

    ``None`` when ``data`` cannot be read as the code's data (the client dropped
    or mangled it, or it belongs to another code): the caller may look up the
    diagnostic's current data instead. A fix that no longer applies (the note
    moved or changed since: stale data) is left out.
    """
    make = QUICK_FIXES.get(code)
    if make is None:
        return []
    header = read_data(DiagnosticData, data)
    if header is None or header["code"] != code:
        return None
    found = make(lines, header["line"], data)
    if found is None:
        return None
    return [
        f
        for f in found
        if f.edits or f.command is not None or f.select is not None or f.refused is not None
    ]


def forget_fix(lines: Sequence[str], line: int) -> Fix | None:
    """Forget the note on ``line`` (its whole line goes)."""
    b = _bullet(lines, line)
    edit = remove_line(lines, line) if b is not None and b.note else None
    if b is None or edit is None:
        return None
    return Fix(f"Forget “{quoted(b.note)}”", [edit])


def merge_fix(lines: Sequence[str], targets: Sequence[int]) -> Fix | None:
    """Merge the notes on ``targets`` into the first one (:func:`merge_lines`); refused
    when the merged note would be too long."""
    edits = merge_lines(lines, targets)
    if not edits:
        return None
    notes = [b.note for b in _notes_on(lines, targets)]
    return _merge(f"Merge the {len(notes)} selected notes", "; ".join(notes), edits)


def fix_all_fix(lines: Sequence[str]) -> Fix | None:
    """Every safe fix at once (:func:`fix_all`), or ``None`` when there is none."""
    edits = fix_all(lines)
    return Fix("Fix all safe memory problems", edits) if edits else None


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
