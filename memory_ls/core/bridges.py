"""Bridges to other agents (SPEC §15): reading their memory files, writing ours where they read.

Everything here is pure. :func:`import_candidates` reads another agent's memory
file into candidate notes; :func:`plan_import` decides, against the target
store's text, what an import adds, skips and refuses, and the store's new text;
:func:`plan_import_proposals` does the same for ``import --propose``, against the
store and the scope's review inbox, and gives the inbox's new text.
:func:`plan_export` keeps a marked block in an instruction file (``AGENTS.md``,
``CLAUDE.md``, ``GEMINI.md``) equal to the recall body, touching nothing else.
The formats were checked against each tool's own source; ``docs/bridges.md``
says where.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, cast

from memory_ls.core.actions import check_text
from memory_ls.core.checks import ExportStaleData, Finding
from memory_ls.core.inbox import MAX_PROPOSALS, new_id, parse_inbox
from memory_ls.core.models import ExportStatusName, ImportRefusal, ImportResult, Proposal
from memory_ls.core.notes import parse, parse_bullet
from memory_ls.core.recall import INTRO, MARKER
from memory_ls.core.text import (
    BOM,
    HEADER,
    MAX_STORE_BYTES,
    escape_unseen,
    key_of_normalised,
    normalise,
    split_text,
)

ImportFormat = Literal["auto", "markdown", "claude", "gemini", "hermes"]
IMPORT_FORMATS: tuple[ImportFormat, ...] = ("auto", "markdown", "claude", "gemini", "hermes")

GEMINI_HEADING = "## Gemini Added Memories"
"""The heading Gemini CLI's ``save_memory`` tool wrote its bullets under (``memoryTool.ts``)."""
HERMES_SEPARATOR = "§"
"""Hermes Agent's entry separator: a line holding only ``§`` (``tools/memory_tool.py``)."""

EXPORT_BEGIN = (
    "<!-- memory-ls:begin (generated from memory.md by memory-ls export; edit the notes there) -->"
)
EXPORT_END = "<!-- memory-ls:end -->"
INSTRUCTION_FILES = frozenset({"AGENTS.md", "CLAUDE.md", "GEMINI.md"})
"""The instruction files the language server checks for a stale export block."""

# A fence opens with three or more backticks or tildes, indented at most three spaces.
_FENCE_RE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
# An ATX heading of level 1 or 2 ends Gemini's section.
_SECTION_END_RE = re.compile(r" {0,3}#{1,2}(?:[ \t]|$)")


# -- the fields of memory.import / memory.export ---------------------------------------------

FORMAT_MESSAGE = "format must be one of auto, markdown, claude, gemini, hermes."
FILES_MESSAGE = "files is required: a list of paths or file URIs."
TO_MESSAGE = "to must be a path or a file URI."
CHECK_MESSAGE = "check must be true or false."
PROPOSE_MESSAGE = "propose must be true or false."


def check_format(value: object) -> tuple[ImportFormat, str | None]:
    """Validate an import ``format`` field (missing means ``auto``)."""
    if value is None:
        return "auto", None
    for fmt in IMPORT_FORMATS:
        if value == fmt:
            return fmt, None
    return "auto", FORMAT_MESSAGE


def check_files(value: object) -> tuple[list[str], str | None]:
    """Validate an import ``files`` field: a non-empty list of non-blank strings (or one string)."""
    if isinstance(value, str):
        value = [value]
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, str) and v.strip() for v in value)
    ):
        return [], FILES_MESSAGE
    return list(value), None


# -- import: reading another agent's file -------------------------------------------------


def detect_format(text: str) -> Literal["markdown", "gemini", "hermes"]:
    """``auto``: a ``## Gemini Added Memories`` heading means gemini, a ``§`` line hermes."""
    lines = split_text(text).lines
    if any(line.strip() == GEMINI_HEADING for line in lines):
        return "gemini"
    if any(line.strip() == HERMES_SEPARATOR for line in lines):
        return "hermes"
    return "markdown"


def import_candidates(text: str, fmt: ImportFormat = "auto") -> list[str]:
    """The candidate notes of one file, as written (not yet normalised), in file order.

    ``markdown``/``claude``: every bullet outside code fences, front matter and
    a memory-ls export block (nested bullets too); ``gemini``: the bullets of
    the ``## Gemini Added Memories`` section(s), which end at the next heading
    of level 1 or 2; ``hermes``: each ``§``-separated entry (one note however
    many lines it spans). Blank bullets and empty entries are not notes.
    """
    if fmt == "auto":
        fmt = detect_format(text)
    lines = split_text(text).lines
    if fmt == "hermes":
        return _hermes_entries(lines)
    skipped = _skipped_lines(lines)
    gemini = fmt == "gemini"
    in_section = False
    out: list[str] = []
    for i, line in enumerate(lines):
        if i in skipped:
            continue
        if gemini and line.strip() == GEMINI_HEADING:
            in_section = True
            continue
        if gemini and _SECTION_END_RE.match(line):
            in_section = False
            continue
        bullet = parse_bullet(line, i)
        if bullet is not None and bullet.note and (in_section or not gemini):
            out.append(bullet.raw)
    return out


def _hermes_entries(lines: list[str]) -> list[str]:
    entries: list[str] = []
    current: list[str] = []
    for line in [*lines, HERMES_SEPARATOR]:
        if line.strip() == HERMES_SEPARATOR:
            entry = "\n".join(current).strip()
            if normalise(entry):
                entries.append(entry)
            current = []
        else:
            current.append(line)
    return entries


def _skipped_lines(lines: list[str]) -> frozenset[int]:
    """Lines that hold no note: front matter, code fences, a memory-ls export block."""
    skipped: set[int] = set()
    start = 0
    if lines and lines[0].strip() == "---":  # YAML front matter (Claude's memory files)
        for j in range(1, len(lines)):
            if lines[j].strip() in ("---", "..."):
                skipped.update(range(j + 1))
                start = j + 1
                break
    fenced = _fenced_lines(lines, start)
    skipped |= fenced
    in_export = False
    for i in range(start, len(lines)):
        if i in fenced:
            continue
        stripped = lines[i].strip()
        if stripped == EXPORT_BEGIN:
            in_export = True
        if in_export:
            skipped.add(i)
            if stripped == EXPORT_END:
                in_export = False
    return frozenset(skipped)


def _fenced_lines(lines: Sequence[str], start: int = 0) -> frozenset[int]:
    """The lines of fenced code blocks, their fences included (CommonMark's rules)."""
    fenced: set[int] = set()
    fence: str | None = None
    for i in range(start, len(lines)):
        line = lines[i].rstrip()
        if fence is not None:
            fenced.add(i)
            closing = _FENCE_RE.fullmatch(line)
            if (
                closing is not None
                and closing.group(1)[0] == fence[0]
                and len(closing.group(1)) >= len(fence)
                and not closing.group(2).strip()
            ):
                fence = None
            continue
        opening = _FENCE_RE.fullmatch(line)
        # A backtick fence's info string holds no backtick (CommonMark), else it is code text.
        if opening is not None and not (opening.group(1)[0] == "`" and "`" in opening.group(2)):
            fence = opening.group(1)
            fenced.add(i)
    return frozenset(fenced)


def instruction_skipped_lines(lines: list[str]) -> frozenset[int]:
    """The lines of an instruction file that say nothing of its own: front matter, code
    fences and the memory-ls export block (for ``instruction-duplicate``, SPEC §13)."""
    return _skipped_lines(lines)


# -- import: what it does to the store ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class ImportPlan:
    """What one import does to the target store's text."""

    content: str
    """The store's new text (the old text when nothing is added)."""
    added: list[str]
    skipped: list[str]
    refused: list[ImportRefusal]
    size: int
    """UTF-8 bytes of ``content``."""

    @property
    def changed(self) -> bool:
        """Whether the store's text changes."""
        return bool(self.added)

    @property
    def over_cap(self) -> bool:
        """Whether the new text would pass the 262,144-byte cap (the import is refused whole)."""
        return self.size > MAX_STORE_BYTES

    def result(self) -> ImportResult:
        """The import's result as every front end reports it."""
        return {
            "added": list(self.added),
            "skipped": list(self.skipped),
            "refused": list(self.refused),
        }

    def refused_whole(self, error: str) -> ImportResult:
        """The result of an import refused as a whole: nothing added, each note it would
        have added refused with ``error``."""
        whole: list[ImportRefusal] = [{"text": note, "error": error} for note in self.added]
        return {"added": [], "skipped": list(self.skipped), "refused": [*self.refused, *whole]}


def _judge(
    store: str, candidates: Sequence[str], waiting: Collection[str] = ()
) -> tuple[list[str], list[str], list[ImportRefusal], set[str]]:
    """Each candidate's verdict, in order: added, skipped, refused, and the skipped notes
    whose key a waiting ``add`` proposal holds (``waiting``: those keys).

    A blank candidate is not a note (SPEC §2); an over-long one is refused; a key the
    store or an earlier candidate holds is skipped, and so is one in ``waiting``.
    """
    seen = set(parse(store).keys)
    added: list[str] = []
    skipped: list[str] = []
    refused: list[ImportRefusal] = []
    already: set[str] = set()
    for raw in candidates:
        note, error = check_text(raw)
        if not note:
            continue
        if error is not None:
            refused.append({"text": note, "error": error})
            continue
        key = key_of_normalised(note)
        if key in seen:
            skipped.append(note)
            continue
        seen.add(key)
        if key in waiting:
            skipped.append(note)
            already.add(note)
            continue
        added.append(note)
    return added, skipped, refused, already


def plan_import(store: str, candidates: Sequence[str]) -> ImportPlan:
    """Normalise each candidate; refuse the over-long, skip what the store or the import
    already holds (same near-duplicate key); append the rest as ``- <note>`` lines.

    The store's text is kept as ``add`` keeps it (end trimmed, header for an
    empty store, its line endings and BOM), so an import of one note writes
    exactly what ``memory-ls add`` would.
    """
    added, skipped, refused, _ = _judge(store, candidates)
    content = store
    if added:
        split = split_text(store)
        body = "\n".join(split.lines).rstrip()
        new = "".join(f"- {note}\n" for note in added)
        content = split.render((f"{body}\n{new}" if body else f"{HEADER}\n\n{new}").split("\n"))
    return ImportPlan(content, added, skipped, refused, len(content.encode("utf-8", "replace")))


@dataclass(frozen=True, slots=True)
class ProposalImportPlan:
    """What one ``import --propose`` does to the target scope's inbox (SPEC §12, §15)."""

    inbox: str
    """The inbox's new text (the old text when nothing is proposed)."""
    proposals: list[Proposal]
    """One ``add`` proposal per note proposed, in import order."""
    skipped: list[str]
    already_proposed: frozenset[str]
    """The skipped notes whose key an ``add`` proposal already waiting holds (the others
    are stored, or came earlier in the import)."""
    refused: list[ImportRefusal]
    waiting: int
    """Proposals in the inbox once these are queued."""

    @property
    def added(self) -> list[str]:
        """The notes proposed (an import's ``added``)."""
        return [p["text"] for p in self.proposals]

    @property
    def changed(self) -> bool:
        """Whether the inbox's text changes."""
        return bool(self.proposals)

    @property
    def full(self) -> bool:
        """Whether the inbox would pass :data:`MAX_PROPOSALS` (the import is refused whole)."""
        return bool(self.proposals) and self.waiting > MAX_PROPOSALS

    @property
    def size(self) -> int:
        """UTF-8 bytes of the new inbox."""
        return len(self.inbox.encode("utf-8", "replace"))

    def result(self) -> ImportResult:
        """The import's result: ``added`` lists the notes proposed."""
        return {
            "added": self.added,
            "skipped": list(self.skipped),
            "refused": list(self.refused),
        }

    def refused_whole(self, error: str) -> ImportResult:
        """Nothing proposed: each note it would have proposed refused with ``error``."""
        whole: list[ImportRefusal] = [{"text": note, "error": error} for note in self.added]
        return {"added": [], "skipped": list(self.skipped), "refused": [*self.refused, *whole]}


def plan_import_proposals(
    store: str,
    inbox_text: str,
    candidates: Sequence[str],
    by: str,
    at: str,
    seed: str,
) -> ProposalImportPlan:
    """``import --propose``: one ``add`` proposal per note the import would add.

    Normalised and judged as :func:`plan_import` judges them (over-long refused;
    a key already stored or already imported skipped), and also skipped when an
    ``add`` proposal already waiting has the same near-duplicate key. The
    proposals are appended to the inbox's text, every other line kept; ids are
    derived from ``seed`` (fresh random bytes from the runtime). Whether the
    inbox would pass its cap is the caller's to check (:attr:`ProposalImportPlan.full`).
    """
    inbox = parse_inbox(inbox_text)
    waiting_keys = {key_of_normalised(p["text"]) for p in inbox.proposals if p["action"] == "add"}
    taken = {p["id"] for p in inbox.proposals}
    added, skipped, refused, already = _judge(store, candidates, waiting_keys)
    proposals: list[Proposal] = []
    for note in added:
        pid = new_id(taken, f"{seed}:{len(proposals)}")
        taken.add(pid)
        proposal = cast(Proposal, {"id": pid, "action": "add", "text": note, "by": by, "at": at})
        proposals.append(proposal)
        inbox = inbox.with_proposal(proposal)
    text = inbox.render() if proposals else inbox_text
    return ProposalImportPlan(
        text, proposals, skipped, frozenset(already), refused, len(inbox.proposals)
    )


def import_summary(result: ImportResult) -> str:
    """The import's result as text: a count line, then each note under its verdict."""
    added, skipped, refused = result["added"], result["skipped"], result["refused"]
    lines = [f"Imported {len(added)}, skipped {len(skipped)}, refused {len(refused)}."]
    lines += [f"+ {escape_unseen(note)}" for note in added]
    lines += [f"= {escape_unseen(note)} (already stored)" for note in skipped]
    lines += [f"! {escape_unseen(item['text'])} ({item['error']})" for item in refused]
    return "\n".join(lines)


def proposal_summary(
    result: ImportResult, already_proposed: Collection[str] = (), waiting: int = 0
) -> str:
    """``import --propose``'s result as text: like :func:`import_summary`, the notes
    proposed counted as such, then (when any was) how many proposals now wait."""
    added, skipped, refused = result["added"], result["skipped"], result["refused"]
    lines = [f"Proposed {len(added)} for review, skipped {len(skipped)}, refused {len(refused)}."]
    lines += [f"+ {escape_unseen(note)}" for note in added]
    lines += [
        f"= {escape_unseen(note)} "
        + ("(already proposed)" if note in already_proposed else "(already stored)")
        for note in skipped
    ]
    lines += [f"! {escape_unseen(item['text'])} ({item['error']})" for item in refused]
    if added:
        lines.append(f"{waiting} waiting for review.")
    return "\n".join(lines)


# -- export: the marked block ---------------------------------------------------------------

ExportStatus = ExportStatusName
"""What export found: the block is current; the file or the block was missing; the
block was an older recall body; the block was not a recall body (edited by hand)."""


@dataclass(frozen=True, slots=True)
class ExportBlock:
    """Where the block is in a file: character offsets and line numbers of its markers."""

    start: int
    """Offset of the begin marker's line."""
    end: int
    """Offset just after the end marker's line (before its line ending)."""
    first_line: int
    last_line: int
    inner: list[str] = field(default_factory=list)
    """The lines between the markers."""


class ExportError(ValueError):
    """A file whose block cannot be rewritten without losing text (its message says why)."""


def block_lines(body: str | None) -> list[str]:
    """The block's lines: the markers around the recall body's lines (no body: markers alone)."""
    inner = body.split("\n") if body else []
    return [EXPORT_BEGIN, *inner, EXPORT_END]


def _lines_with_offsets(content: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, line)`` for each line of ``content``, split on ``\\n`` and ``\\r\\n``."""
    base = 1 if content.startswith(BOM) else 0
    pos = base
    while True:
        nl = content.find("\n", pos)
        if nl == -1:
            yield pos, len(content), content[pos:]
            return
        end = nl - 1 if nl > pos and content[nl - 1] == "\r" else nl
        yield pos, end, content[pos:end]
        pos = nl + 1


def find_block(content: str) -> ExportBlock | None:
    """The file's export block, or ``None``; :class:`ExportError` when it cannot be
    rewritten safely (a marker without its pair, or more than one block).

    Markers inside a code fence are text (a README showing how the block looks),
    never the block.
    """
    begin: tuple[int, int] | None = None
    inner: list[str] = []
    found: ExportBlock | None = None
    lines = list(_lines_with_offsets(content))
    fenced = _fenced_lines([line for _, _, line in lines])
    for number, (start, end, line) in enumerate(lines):
        if number in fenced:
            if begin is not None:
                inner.append(line)
            continue
        stripped = line.strip()
        if stripped == EXPORT_BEGIN:
            if begin is not None:
                raise ExportError(
                    f"a second begin marker on line {number + 1} before the end marker"
                )
            if found is not None:
                raise ExportError(f"a second memory-ls block starts on line {number + 1}")
            begin, inner = (start, number), []
        elif stripped == EXPORT_END:
            if begin is None:
                raise ExportError(f"an end marker on line {number + 1} without a begin marker")
            found = ExportBlock(begin[0], end, begin[1], number, inner)
            begin = None
        elif begin is not None:
            inner.append(line)
    if begin is not None:
        raise ExportError(f"the begin marker on line {begin[1] + 1} has no end marker")
    return found


def looks_generated(inner: Sequence[str]) -> bool:
    """Whether the lines could have been written by export: a recall body (or nothing).

    A block that is not one (prose, another header, a changed intro, a bullet
    that is not a normalised note) was edited by hand.
    """
    if not inner:
        return True
    if len(inner) < 2 or inner[0] != MARKER or inner[1] != INTRO:
        return False
    section = 0
    noted = tailed = False
    tail = re.compile(r"- \(\+\d+ more; use the memory tool\)")
    for i, line in enumerate(inner[2:], start=2):
        if line in ("project:", "global:"):
            order = 1 if line == "project:" else 2
            if order <= section or (section and not noted):
                return False
            section, noted = order, False
        elif tail.fullmatch(line):
            if i != len(inner) - 1:
                return False
            tailed = True  # nothing fitted at all: the header and the tail alone
        elif line.startswith("- ") and section:
            # A stored note is normalised (its length is not checked: a hand-edited
            # store may hold an over-long note, and recall includes it).
            if not line[2:] or normalise(line[2:]) != line[2:]:
                return False
            noted = True
        else:
            return False
    return (section > 0 and noted) or tailed


@dataclass(frozen=True, slots=True)
class ExportPlan:
    """What export does to an instruction file."""

    content: str
    """The file's new text (the same text when the block is current)."""
    status: ExportStatus
    block: ExportBlock | None
    """The block as it was found (``None`` when there was none)."""

    @property
    def changed(self) -> bool:
        """Whether the file must be written."""
        return self.status != "current"


def plan_export(content: str | None, body: str | None) -> ExportPlan:
    """The file's text with its block equal to ``body``'s lines; everything else byte for byte.

    ``content`` is ``None`` for a missing file (created holding the block alone).
    A missing block is added at the end of the file, after a blank line. The
    block's lines take the file's line-ending style (its first line ending;
    LF for a new file). Raises :class:`ExportError` for a file whose markers
    do not pair up.
    """
    wanted = block_lines(body)
    if content is None:
        return ExportPlan("\n".join(wanted) + "\n", "created", None)
    eol = split_text(content).eol
    block = find_block(content)
    if block is None:
        head = content
        if head and not head.endswith("\n"):
            head += eol
        if head.strip(BOM + " \t\r\n") and not head.endswith(("\n\n", "\n\r\n")):
            head += eol  # a blank line between the prose and the block
        return ExportPlan(head + eol.join(wanted) + eol, "added", None)
    if [EXPORT_BEGIN, *block.inner, EXPORT_END] == wanted:
        return ExportPlan(content, "current", block)
    status: ExportStatus = "stale" if looks_generated(block.inner) else "edited"
    new = content[: block.start] + eol.join(wanted) + content[block.end :]
    return ExportPlan(new, status, block)


def export_message(status: ExportStatus, path: str) -> str:
    """What ``memory-ls export`` says it did."""
    return {
        "current": f"The memory-ls block in {path} is up to date.",
        "created": f"Created {path} with the memory-ls block.",
        "added": f"Added the memory-ls block to {path}.",
        "stale": f"Updated the memory-ls block in {path}.",
        "edited": (
            f"Replaced the memory-ls block in {path}: it had been edited by hand "
            "(edit the notes in memory.md instead; export rewrites the block)."
        ),
    }[status]


def check_message(status: ExportStatus, path: str) -> str:
    """What ``memory-ls export --check`` says about a block that is not current."""
    return {
        "current": f"The memory-ls block in {path} is up to date.",
        "created": f"{path} does not exist; run memory-ls export --to {path}.",
        "added": f"{path} has no memory-ls block; run memory-ls export --to {path}.",
        "stale": f"The memory-ls block in {path} is out of date; run memory-ls export --to {path}.",
        "edited": (
            f"The memory-ls block in {path} was edited by hand; "
            f"run memory-ls export --to {path} to restore it."
        ),
    }[status]


def export_stale_finding(lines: Sequence[str], eol: str, body: str | None) -> Finding | None:
    """The ``export-stale`` finding of an instruction file's text, or ``None``.

    ``None`` when the file holds no block, when its block is current, or when
    its markers do not pair up (no fix could rewrite it without losing text).
    The finding spans the block; its data carries the block as it should read,
    so the quick fix needs nothing else.
    """
    content = "\n".join(lines)
    try:
        block = find_block(content)
    except ExportError:
        return None
    if block is None:
        return None
    plan = plan_export(content, body)
    if not plan.changed:
        return None
    message = EDITED_MESSAGE if plan.status == "edited" else STALE_MESSAGE
    data: ExportStaleData = {
        "lastLine": block.last_line,
        "status": plan.status,
        "block": eol.join(block_lines(body)),
    }
    end = len(lines[block.last_line])
    return Finding("export-stale", block.first_line, 0, block.last_line, end, message, data)


STALE_MESSAGE = (
    "This memory-ls block differs from the current recall body; rewrite it from memory.md."
)
EDITED_MESSAGE = (
    "This memory-ls block was edited by hand and differs from the recall body; "
    "edit the notes in memory.md instead, then rewrite the block."
)
