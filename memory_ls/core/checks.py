"""Findings: what is wrong with a memory file, as plain data (SPEC §7 diagnostics).

The language server turns findings into LSP diagnostics and the CLI's ``check``
prints them; neither decides anything itself. Columns are ``str`` indices
(code points); the server converts them to the negotiated position encoding.

The work is split so an editor can recompute only what an edit touched:
:func:`line_findings` depends on one line alone, :func:`duplicate_findings` on
the key index, and :func:`file_findings` on the file-wide context.

Each code's ``data`` has a ``TypedDict`` of its own (ruff-lsp's ``DiagnosticData``
idea): built here where the finding is made, sent to the client after the
:class:`DiagnosticData` header (:func:`wire_data`), and read back with the same
types when the client asks for the code's quick fixes (:mod:`memory_ls.core.fixes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import compress, count, pairwise
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict

from memory_ls.core.notes import Bullet
from memory_ls.core.recall import RecallPlan
from memory_ls.core.records import field, record
from memory_ls.core.scopes import Scope, other_scope
from memory_ls.core.text import (
    MAX_NOTE_UTF16,
    MAX_STORE_BYTES,
    display_path,
    escape_unseen,
    has_controls,
    hidden_characters,
    utf16_length,
)

if TYPE_CHECKING:  # types only: `check` does without core.models (typing_extensions: ~10 ms)
    from memory_ls.core.models import Proposal

Severity = Literal["error", "warning", "information", "hint"]

CODES: dict[str, Severity] = {
    "duplicate": "warning",
    "cross-scope-duplicate": "information",
    "too-long": "warning",
    "blank-note": "warning",
    "control-characters": "warning",
    "hidden-unicode": "warning",
    "not-injected": "information",
    "recall-off": "hint",
    "untrusted": "information",
    "file-too-large": "error",
    "buffer-behind-file": "error",
    "symlink": "error",
    "outside-project": "error",
    "invalid-utf8": "error",
    "not-the-store": "warning",
    "similar": "hint",
    "export-stale": "information",
    "proposal": "information",
    "stale-path": "information",
    "stale-script": "information",
    "instruction-duplicate": "information",
    "conflict": "warning",
}
"""Every diagnostic code and its default severity (``conflict`` across scopes is
Information: :attr:`Finding.severity`)."""

STALE_AND_CONFLICT_CODES: dict[str, Severity] = {
    code: CODES[code]
    for code in ("stale-path", "stale-script", "instruction-duplicate", "conflict")
}
"""SPEC §13's codes: ``check`` and the doctor report them; the language server shows
``stale-path``, ``stale-script`` and ``instruction-duplicate`` from its cached picture
of the project (``server/project_watch.py``), and ``conflict``."""


class DiagnosticData(TypedDict):
    """What every diagnostic's ``data`` begins with on the wire: its code and line."""

    code: str
    line: int


class NoteData(TypedDict):
    """``blank-note``, ``control-characters``: the note the finding is on."""

    note: str


class TooLongData(NoteData):
    """``too-long``: the note's length in UTF-16 units."""

    length: int


class HiddenUnicodeData(NoteData):
    """``hidden-unicode``: how many hidden characters the note holds."""

    count: int


class PairData(NoteData):
    """A later note and the earlier one it repeats (``duplicate``, ``similar``)."""

    first: str
    firstLine: int


class DuplicateData(PairData):
    """``duplicate``: the first note with the same key, and whether it is worded the same."""

    exact: bool


class SimilarData(PairData):
    """``similar``: the earlier note it is close to, and how close (0-100)."""

    score: float


class CrossScopeData(NoteData):
    """``cross-scope-duplicate``: the note with the same key in the other scope's store."""

    scope: Scope
    otherScope: Scope
    other: str
    otherPath: str


class NotInjectedData(TypedDict):
    """``not-injected``: the notes in this run, and the bytes recall uses of its cap."""

    count: int
    used: int
    cap: int


class FileTooLargeData(TypedDict):
    """``file-too-large``: the file's size in bytes."""

    size: int


class InvalidUtf8Data(TypedDict):
    """``invalid-utf8``: the byte offset of the first bad byte."""

    offset: int


class NotTheStoreData(TypedDict):
    """``not-the-store``: the project's real store."""

    store: str


class ExportStaleData(TypedDict):
    """``export-stale`` (on an instruction file): the block's last line, why it is stale
    (``stale`` or ``edited``), and the block as it should read, in the file's line endings."""

    lastLine: int
    status: str
    block: str


class ProposalData(NoteData):
    """``proposal``: the waiting proposal that targets the note (SPEC §12)."""

    id: str
    action: str
    by: str
    to: NotRequired[str]


class StalePathData(NoteData):
    """``stale-path``: the path the note mentions, and which rule found it missing
    (``root``: its first component is at the project root, ``anywhere``: no path
    in the project ends with it)."""

    mention: str
    rule: str


class StaleScriptData(NoteData):
    """``stale-script``: the tool (``npm``, ``pnpm``, ``yarn``, ``bun``, ``make``, ``just``)
    and the script, target or recipe that nothing defines."""

    tool: str
    script: str


class InstructionDuplicateData(NoteData):
    """``instruction-duplicate``: the instruction file and line that already say it
    (``score`` 100 for an equal key, else the ``similar`` score)."""

    file: str
    fileLine: int
    text: str
    score: float


class ConflictData(NoteData):
    """``conflict``: the other note, where it is, and the thing both speak of."""

    other: str
    otherLine: int
    scope: Scope
    otherScope: Scope
    subject: str


class NoData(TypedDict):
    """The codes whose message says it all (``symlink``, ``untrusted``, ...)."""


FindingData = (
    NoteData
    | TooLongData
    | HiddenUnicodeData
    | DuplicateData
    | SimilarData
    | CrossScopeData
    | NotInjectedData
    | FileTooLargeData
    | InvalidUtf8Data
    | NotTheStoreData
    | ExportStaleData
    | ProposalData
    | StalePathData
    | StaleScriptData
    | InstructionDuplicateData
    | ConflictData
    | NoData
)
"""The ``data`` of a finding: its code's own fields."""


@record
class Related:
    """Another place a finding points at."""

    line: int
    start: int
    end: int
    message: str
    path: str | None = None
    """``None`` for the same file."""


@record
class Finding:
    """One problem at one range of a file (a record: ``check`` imports no
    :mod:`dataclasses`; :func:`memory_ls.core.records.replace` copies one with changes)."""

    code: str
    line: int
    start: int
    end_line: int
    end: int
    message: str
    data: FindingData = field(default_factory=NoData)
    related: tuple[Related, ...] = ()

    def __init__(
        self,
        code: str,
        line: int,
        start: int,
        end_line: int,
        end: int,
        message: str,
        data: FindingData | None = None,
        related: tuple[Related, ...] = (),
    ) -> None:
        # Written out (a record's own __init__ loops over the fields): ``check`` builds
        # thousands, the language server one per diagnostic of a changed line.
        setter = object.__setattr__
        setter(self, "code", code)
        setter(self, "line", line)
        setter(self, "start", start)
        setter(self, "end_line", end_line)
        setter(self, "end", end)
        setter(self, "message", message)
        setter(self, "data", NoData() if data is None else data)
        setter(self, "related", related)

    @property
    def severity(self) -> Severity:
        """The default severity of this finding: its code's, except a ``conflict`` across
        scopes, which is Information (SPEC §13)."""
        if self.code == "conflict" and "otherScope" in self.data:
            scope, other = self.data.get("scope"), self.data.get("otherScope")
            return "warning" if scope == other else "information"
        return CODES[self.code]


def wire_data(f: Finding) -> dict[str, object]:
    """A finding's ``data`` as the language server sends it: the header, then its fields.

    Clients send it back in ``textDocument/codeAction``, so its JSON is a contract.
    """
    header: DiagnosticData = {"code": f.code, "line": f.line}
    return {**header, **f.data}


def note_hash(note: str) -> str:
    """A short fingerprint of ``note`` that names it in a published diagnostic's ``data``
    (64 bits of BLAKE2b, the same in every process, as hex)."""
    global _blake2b
    if _blake2b is None:
        try:  # hashlib's own BLAKE2b, without hashlib: it loads OpenSSL, ~3.5 MB resident
            from _blake2 import blake2b  # (not on the CLI's read path either)
        except ImportError:  # a Python built without it
            from hashlib import blake2b
        _blake2b = blake2b  # found once: a store's first publish hashes a note per finding
    digest: str = _blake2b(note.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    return digest


_blake2b: Any = None
"""BLAKE2b, once :func:`note_hash` has looked for it."""


WIRE_TEXTS = frozenset({"note", "first", "other", "text"})
"""Fields of a finding's data that the language server does not publish: the texts of
the note, of the other note or of the instruction line, which it holds itself (two or
three copies of a note made up a third of a publish, sent on every keystroke)."""


def lean_wire_data(f: Finding) -> dict[str, object]:
    """:func:`wire_data` as the language server publishes it: without :data:`WIRE_TEXTS`,
    and with :func:`note_hash` of the note (``noteHash``) for a finding about a note.

    A client sends it back with the diagnostic's code and message; the server finds its
    own finding by those, the line and the note's hash, and builds the fix from its full
    data, so a fix still never re-analyses the file (SPEC §7). The hash, not the note,
    says which note the diagnostic was about, whatever columns the client turned its
    range into.
    """
    lean: dict[str, object] = {"code": f.code, "line": f.line}
    for k, v in f.data.items():
        if k not in WIRE_TEXTS:
            lean[k] = v
        elif k == "note" and isinstance(v, str):
            lean["noteHash"] = note_hash(v)
    return lean


def _at(b: Bullet, code: str, message: str, data: FindingData) -> Finding:
    return Finding(code, b.line, b.start, b.line, b.end, message, data)


def lines_findings(bullets: Iterable[Bullet | None]) -> dict[int, list[Finding]]:
    """:func:`line_findings` of every bullet, by line, lines without any left out.

    The common line is passed over without a call: an editor opening a store asks
    this of every line. It is a note (not blank) whose text is printable, so it holds
    no control and no hidden character (every one is a format character or unassigned,
    none printable), and short enough: at most half the limit in code points (a code
    point is at most two UTF-16 units), or ASCII within the limit.
    """
    out: dict[int, list[Finding]] = {}
    limit = MAX_NOTE_UTF16
    half = limit // 2
    for b in bullets:
        if b is None:
            continue
        raw = b.raw
        if (
            b.note
            and raw.isprintable()
            and (len(raw) <= half or (len(raw) <= limit and raw.isascii()))
        ):
            continue
        found = line_findings(b)
        if found:
            out[b.line] = found
    return out


def parsed_lines_findings(
    lines: list[str], bullets: list[Bullet | None], odd: Iterable[int]
) -> dict[int, list[Finding]]:
    """:func:`lines_findings` of ``bullets``, parsed from ``lines`` by
    :func:`~memory_ls.core.notes.parse_bullets`, which put the lines of every bullet
    that is not a plain note in ``odd``.

    Only those, and the lines long enough to hold a note over half the limit, are
    looked at: a plain note is printable and normalised already, so nothing but its
    length can be wrong with it (:func:`lines_findings`'s own rule). An editor opening
    a store has thousands of plain notes; one ``max`` in C rules out the long ones.
    """
    half = MAX_NOTE_UTF16 // 2
    look = set(odd)
    if max(map(len, lines), default=0) > half:
        look.update(i for i, line in enumerate(lines) if len(line) > half)
    return lines_findings(b for i in sorted(look) if (b := bullets[i]) is not None)


def line_findings(b: Bullet) -> list[Finding]:
    """Findings that depend on one bullet line alone."""
    if b.blank:
        return [
            Finding(
                "blank-note",
                b.line,
                0,
                b.line,
                b.end,
                "Blank bullet: it holds no note and is silently dropped.",
                NoteData(note=""),
            )
        ]
    if len(b.raw) <= MAX_NOTE_UTF16 and b.raw.isascii() and b.raw.isprintable():
        # The common case, decided in C: short, and no control (ASCII controls
        # are the only unprintable ASCII) and no hidden character (none is ASCII).
        return []
    out: list[Finding] = []
    units = utf16_length(b.note)
    if units > MAX_NOTE_UTF16:
        out.append(
            _at(
                b,
                "too-long",
                f"Note is {units} characters, longer than {MAX_NOTE_UTF16}: "
                "the memory tool would refuse it.",
                TooLongData(note=b.note, length=units),
            )
        )
    visible = b.raw.strip()
    if has_controls(visible):
        out.append(
            _at(
                b,
                "control-characters",
                "Note holds control characters; they are read as spaces.",
                NoteData(note=b.note),
            )
        )
    hidden = hidden_characters(visible)
    if hidden:
        out.append(
            _at(
                b,
                "hidden-unicode",
                f"Note holds {len(hidden)} hidden character(s) (zero-width, bidirectional "
                "or tag) that a reader cannot see but the model reads.",
                HiddenUnicodeData(note=b.note, count=len(hidden)),
            )
        )
    return out


def duplicate_pairs(bullets: Sequence[Bullet]) -> list[tuple[Bullet, Bullet]]:
    """Each note whose key an earlier note already has, paired with that first note.

    The one decision of what a duplicate pair is: the editor, ``check`` and the
    doctor all report these pairs (SPEC §9).
    """
    first: dict[str, Bullet] = {}
    out: list[tuple[Bullet, Bullet]] = []
    for b in bullets:
        if not b.note:  # blank (`b.blank` is a property: a call a note)
            continue
        earlier = first.setdefault(b.key, b)
        if earlier is not b:
            out.append((earlier, b))
    return out


def duplicate_message(first_line: int, first_note: str) -> str:
    """How a duplicate is reported everywhere: the first note's line (1-based) and its text
    (escaped: a bidi control in it must not reorder the message a person reads)."""
    return f"Duplicate of the note on line {first_line}: {escape_unseen(first_note)}"


def duplicate_findings(bullets: Sequence[Bullet]) -> list[Finding]:
    """A ``duplicate`` finding on the later note of each :func:`duplicate_pairs` pair."""
    return [
        Finding(
            "duplicate",
            b.line,
            b.start,
            b.line,
            b.end,
            duplicate_message(earlier.line + 1, earlier.note),
            DuplicateData(
                note=b.note,
                first=earlier.note,
                firstLine=earlier.line,
                exact=earlier.note == b.note,
            ),
            (Related(earlier.line, earlier.start, earlier.end, "First written here"),),
        )
        for earlier, b in duplicate_pairs(bullets)
    ]


def cross_scope_message(other: Scope, other_note: str) -> str:
    """What a ``cross-scope-duplicate`` says: the other scope and its note (escaped)."""
    return f"Also in {other} memory: {escape_unseen(other_note)}"


def cross_scope_findings(
    bullets: Sequence[Bullet], scope: Scope, other_keys: Mapping[str, str], other_path: str
) -> list[Finding]:
    """Notes whose key the other scope's store also holds."""
    other = other_scope(scope)
    return [
        _at(
            b,
            "cross-scope-duplicate",
            cross_scope_message(other, other_keys[b.key]),
            CrossScopeData(
                note=b.note,
                scope=scope,
                otherScope=other,
                other=other_keys[b.key],
                otherPath=other_path,
            ),
        )
        for b in bullets
        if b.note and b.key in other_keys  # (b.note: not blank, without a property call)
    ]


def proposal_message(proposal: Proposal) -> str:
    """What a ``proposal`` diagnostic says: who proposes what, waiting for review."""
    if proposal["action"] == "update":
        what = f"to update this note to: {escape_unseen(proposal.get('to', ''))}"
    else:
        what = "to forget this note"
    return f"{proposal['by']} proposes {what} (waiting for review, {proposal['id']})"


def proposal_findings(bullets: Sequence[Bullet], proposals: Sequence[Proposal]) -> list[Finding]:
    """A ``proposal`` finding on each note that a waiting update or forget targets.

    ``bullets`` may be only the candidates (those with a targeted note's key): a
    proposal targets the notes whose normalised text equals its ``text``.
    """
    targeted = [p for p in proposals if p["action"] in ("update", "forget")]
    if not targeted:
        return []
    out: list[Finding] = []
    for b in bullets:
        for p in targeted:
            if b.blank or b.note != p["text"]:
                continue
            data = ProposalData(note=b.note, id=p["id"], action=p["action"], by=p["by"])
            if "to" in p:
                data["to"] = p["to"]
            out.append(_at(b, "proposal", proposal_message(p), data))
    return out


def not_injected_findings(notes: Sequence[Bullet], scope: Scope, plan: RecallPlan) -> list[Finding]:
    """One finding per run of consecutive notes that the recall plan leaves out.

    ``notes`` are the store's bullets without the blank ones (the plan's notes, in
    order). The runs are the gaps between the notes the plan takes, found in C: a
    large store leaves out thousands of notes and takes a few hundred, and only the
    ends of each run are looked at.
    """
    if not plan.inject:
        return []
    planned = plan.notes_in(scope)
    taken = list(compress(count(), map(_INCLUDED, planned)))
    total = len(planned) - len(taken)
    if not total:
        return []
    runs: list[tuple[int, int]] = []  # (first, last) note index of each run
    for before, after in pairwise((-1, *taken, len(planned))):
        first_i, last_i = before + 1, min(after - 1, len(notes) - 1)
        if first_i > last_i:
            continue  # (no gap, or past the last note)
        runs.append((first_i, last_i))
    out = []
    for first_i, last_i in runs:
        first, last = notes[first_i], notes[last_i]
        n = last_i - first_i + 1
        what = "This note is" if n == 1 else f"These {n} notes are"
        out.append(
            Finding(
                "not-injected",
                first.line,
                first.start,
                last.line,
                last.end,
                f"{what} left out of recall: it uses {plan.used} of {plan.max_bytes} bytes "
                f"(maxInjectBytes); {total} {scope} note(s) left out in all.",
                NotInjectedData(count=n, used=plan.used, cap=plan.max_bytes),
            )
        )
    return out


_INCLUDED = attrgetter("included")


@record
class FileContext:
    """What is known about the file beyond its text."""

    scope: Scope | None = None
    """The store this file is, or ``None`` for a lone file."""
    size: int = 0
    """Its size in UTF-8 bytes."""
    symlink: bool = False
    invalid_utf8_at: tuple[int, int, int] | None = None
    """(byte offset, line, column) of the first bad byte."""
    inject: bool = True
    trusted: bool = True
    trust_reason: str = ""
    """The trust verdict with its rule, as every report says it (``TrustDecision.summary``)."""
    real_store: str | None = None
    """Set when this ``.pi/memory.md`` is not its project's store."""
    outside_project: str | None = None
    """The refusal, when the project's ``.pi`` resolves outside the project (SPEC §1)."""


def _first_line(lines: Sequence[str]) -> tuple[int, int]:
    return 0, len(lines[0]) if lines else 0


def file_findings(lines: Sequence[str], ctx: FileContext) -> list[Finding]:
    """Findings about the file as a whole, anchored on its first line."""
    _, end = _first_line(lines)
    out: list[Finding] = []

    def whole(code: str, message: str, data: FindingData | None = None, *related: Related) -> None:
        out.append(Finding(code, 0, 0, 0, end, message, data or NoData(), related))

    if ctx.symlink:
        whole("symlink", "The memory file is a symlink: memory-ls and Pi refuse to use it.")
    if ctx.outside_project is not None:
        whole("outside-project", ctx.outside_project)
    if ctx.size > MAX_STORE_BYTES:
        whole(
            "file-too-large",
            f"The file is {ctx.size} bytes, larger than the {MAX_STORE_BYTES}-byte limit: "
            "the agent refuses the whole store.",
            FileTooLargeData(size=ctx.size),
        )
    if ctx.invalid_utf8_at is not None:
        offset, line, col = ctx.invalid_utf8_at
        out.append(
            Finding(
                "invalid-utf8",
                line,
                col,
                line,
                col + 1,
                f"The file is not valid UTF-8 (first bad byte at offset {offset}): "
                "changes to it are refused.",
                InvalidUtf8Data(offset=offset),
            )
        )
    if ctx.real_store is not None:
        whole(
            "not-the-store",
            f"This is not the project's memory store; the agent reads {display_path(ctx.real_store)}",
            NotTheStoreData(store=ctx.real_store),
            # Point at the real store, so a client can jump there.
            Related(0, 0, 0, "The project's memory store", path=ctx.real_store),
        )
    if ctx.scope is not None and not ctx.inject:
        whole(
            "recall-off", "Recall is off (inject: false): nothing in this file reaches the model."
        )
    if ctx.scope == "project" and not ctx.trusted:
        whole(
            "untrusted",
            f"The project is {ctx.trust_reason or 'untrusted'}: these notes are not recalled "
            "and the memory tool cannot change them.",
        )
    return out


def check_bullets(
    lines: Sequence[str],
    bullets: Sequence[Bullet],
    ctx: FileContext,
    *,
    plan: RecallPlan | None = None,
    other_keys: Mapping[str, str] | None = None,
    other_path: str = "",
) -> list[Finding]:
    """Every finding for one file, in line order: what ``memory-ls check`` reports
    (through :func:`memory_ls.store.lint.lint_file`). The language server builds
    the same findings from these parts, recomputing only what an edit touched."""
    found: list[Finding] = file_findings(lines, ctx)
    for line in lines_findings(bullets).values():  # (the common note without a call)
        found.extend(line)
    found.extend(duplicate_findings(bullets))
    if ctx.scope is not None and other_keys:
        found.extend(cross_scope_findings(bullets, ctx.scope, other_keys, other_path))
    if ctx.scope is not None and plan is not None:
        noted = [b for b in bullets if b.note]  # (not blank)
        found.extend(not_injected_findings(noted, ctx.scope, plan))
    return sort_findings(found)


def sort_findings(found: Iterable[Finding]) -> list[Finding]:
    """Findings in reading order."""
    return sorted(found, key=lambda f: (f.line, f.start, f.code))


def key_index(bullets: Iterable[Bullet]) -> dict[str, str]:
    """Key → first note with that key, for cross-scope checks."""
    index: dict[str, str] = {}
    for b in bullets:
        if b.note:  # not blank
            index.setdefault(b.key, b.note)
    return index
