"""The shapes that cross a boundary (CLI ``--json``, LSP commands, MCP).

They are ``TypedDict``s rather than pydantic models so that the read-only CLI
verbs start fast (pydantic's import and model build cost ~200 ms);
:mod:`memory_ls.schemas` turns them into published JSON Schemas with pydantic,
and the VS Code client's TypeScript types are generated from those schemas.
Every shape is closed (its schema forbids keys it does not list), so a key
added to a result without its model fails validation instead of surprising a
client.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

from memory_ls.core.scopes import SCOPES as SCOPES
from memory_ls.core.scopes import Scope as Scope
from memory_ls.core.scopes import other_scope as other_scope

SourceStatus = Literal["used", "missing", "ignored", "skipped-untrusted"]
"""What became of one configuration file (``core/config.py``)."""
TrustRule = Literal["explicit", "trust.json", "resources"]
"""The rule that decided trust (``core/trust.py``). These two live here, not where they
are decided, so that the read verbs, which load those modules, need not import `typing`."""


class Proposal(TypedDict):
    """One waiting proposal, as stored on a line of an inbox file (SPEC §12).

    ``id`` is 8 lowercase hex characters, unique in its inbox; ``by`` says who
    proposed it; ``at`` is UTC, ``YYYY-MM-DDTHH:MM:SSZ``. ``to`` only for an update.
    """

    id: str
    action: Literal["add", "update", "forget"]
    text: str
    to: NotRequired[str]
    by: str
    at: str


# Functional form: ``global`` is a Python keyword.
MemoryResult = TypedDict(
    "MemoryResult",
    {
        "action": str,
        "scope": Scope,
        "project": list[str],
        "global": list[str],
        "changed": bool,
        "entry": NotRequired[str],
        "to": NotRequired[str],
        "existing": NotRequired[str],
        "error": NotRequired[str],
        "proposal": NotRequired[Proposal],
        "waiting": NotRequired[int],
    },
)
MemoryResult.__doc__ = (
    "The result of every memory action: the notes of both scopes after it, whether "
    "the store changed, and the error that refused it, if any. With review (SPEC §12), "
    "``proposal`` is the proposal queued, accepted or rejected, and ``waiting`` the "
    "number of proposals now in that scope's inbox."
)


InboxResult = TypedDict("InboxResult", {"project": list[Proposal], "global": list[Proposal]})
InboxResult.__doc__ = (
    "The ``memory.inbox`` object (``memory-ls inbox --json``): the waiting proposals of "
    "both scopes, in file order. An untrusted project's are counted, their text withheld."
)

InboxCounts = TypedDict("InboxCounts", {"project": int, "global": int})
InboxCounts.__doc__ = (
    "How many proposals wait in each inbox (also the ``memory/inbox`` notification)."
)


class ReviewResult(TypedDict):
    """The result of ``memory.accept`` and ``memory.reject``: one result per proposal.

    Each of ``results`` is the :data:`MemoryResult` of one selected id: for an
    accepted proposal, what its action returned; for a rejected one, the notes
    with ``changed: false``; for an id that is not waiting, an error. ``text`` is
    the readable account (what the CLI prints), ``error`` every refusal joined.
    """

    action: Literal["accept", "reject"]
    changed: bool
    results: list[MemoryResult]
    waiting: InboxCounts
    text: str
    error: NotRequired[str]


class OmittedNote(TypedDict):
    """A note the recall plan leaves out."""

    scope: Scope
    text: str


class InjectResult(TypedDict):
    """The ``memory.inject`` object: the recall body and its budget."""

    body: str | None
    bytes: int
    maxInjectBytes: int
    included: int
    omitted: list[OmittedNote]
    inject: bool


PathInfo = TypedDict(
    "PathInfo",
    {"project": str, "global": str, "trusted": bool, "trustReason": str},
)
PathInfo.__doc__ = "The ``memory.path`` object: both store paths and the trust decision."


class NoteChanges(TypedDict):
    """The notes one store gained and lost between two reads."""

    added: list[str]
    removed: list[str]


ReloadChanges = TypedDict("ReloadChanges", {"project": NoteChanges, "global": NoteChanges})
ReloadChanges.__doc__ = "What ``memory.reload`` found changed in each store."


class ReloadResult(MemoryResult):
    """The ``memory.reload`` result: both stores' notes as now read, and what changed.

    ``changed`` says whether either store's notes differ from the previous read;
    ``reloaded`` gives the notes each store gained and lost.
    """

    reloaded: ReloadChanges


class RevealResult(TypedDict):
    """The ``memory.reveal`` result (an addition to SPEC §7's commands).

    ``shown``: whether the client showed the open memory document with the range
    selected (``window/showDocument``); ``error``: why not (a bad argument, a
    document that is not an open store, a client that cannot show documents).
    """

    shown: bool
    error: NotRequired[str]


# -- bridges to other agents (SPEC §15) ---------------------------------------------


class ImportRefusal(TypedDict):
    """A note an import refused, and why (over-long, or the whole import was refused)."""

    text: str
    error: str


class ImportResult(TypedDict):
    """The result of ``memory-ls import`` / ``memory.import``: each note under its verdict.

    ``added``: written to the store; ``skipped``: its near-duplicate key was
    already stored or already imported; ``refused``: not written, with the
    reason (an import that would pass the size cap, or that the scope refuses,
    refuses every note it would have added). ``error`` is set only when the
    import could not start (nothing was read, so nothing is listed).
    """

    added: list[str]
    skipped: list[str]
    refused: list[ImportRefusal]
    error: NotRequired[str]
    """Why the import could not start at all (a file that cannot be read, a bad field)."""


ExportStatusName = Literal["current", "created", "added", "stale", "edited"]


class ExportResult(TypedDict):
    """The result of ``memory.export`` (and ``memory-ls export --json``).

    ``status``: ``current`` (nothing written), ``created`` (the file was
    missing), ``added`` (the block was missing), ``stale`` (an older recall
    body was replaced), ``edited`` (a block edited by hand was replaced).
    ``changed`` says whether the file was (or, with ``check``, would be)
    written; ``error`` why nothing could be written.
    """

    path: str
    status: ExportStatusName
    changed: bool
    message: str
    error: NotRequired[str]


# -- the doctor (SPEC §9) ---------------------------------------------------------


class DuplicatePair(TypedDict):
    """Two notes with the same near-duplicate key."""

    first: str
    second: str
    firstLine: int
    secondLine: int


class ReviewFinding(TypedDict):
    """One of SPEC §13's findings on a store (``stale-path``, ``stale-script``,
    ``instruction-duplicate``, ``conflict``), as the doctor reports it."""

    line: int
    """1-based."""
    code: str
    severity: str
    message: str
    """Word for word what ``check`` says (withheld for an untrusted project)."""


FileType = Literal[
    "directory", "fifo", "socket", "character-device", "block-device", "symlink", "other"
]
"""What sits at a store path when it is not a regular file."""


class ScopeReport(TypedDict):
    """What the doctor found in one store."""

    path: str
    exists: bool
    bytes: int
    cap: int
    notes: int
    blankBullets: int
    tooLong: list[str]
    controlCharacters: list[str]
    hiddenUnicode: list[str]
    duplicates: list[DuplicatePair]
    staleAndConflicts: list[ReviewFinding]
    """Stale mentions, notes an instruction file already says, conflicting notes (§13)."""
    error: NotRequired[str]
    """Why the store cannot be read. With ``exists`` false, the way to it is broken (a
    folder on the way is a symlink loop, a file, a symlink to nothing, or unreadable): the
    store is not simply missing, and ``check`` fails on it with the same message."""
    readOnlyReason: NotRequired[str]
    fileType: NotRequired[FileType]
    """Only when the path holds something other than a regular file (never read)."""
    refused: NotRequired[str]
    """Only for a project store that is refused (SPEC §1: its ``.pi`` leads out of the
    project, or it is the global store's file): why, as every refusal says it. It is
    never read, so ``bytes`` and ``notes`` are 0; ``exists`` still says whether a file
    is at the path."""


CrossScopePair = TypedDict("CrossScopePair", {"project": str, "global": str})
CrossScopePair.__doc__ = "A note held by both stores."


class TrustReport(TypedDict):
    """The trust decision and the rule that made it."""

    trusted: bool
    rule: TrustRule
    reason: str
    problems: list[str]


class ConfigSourceReport(TypedDict):
    """One configuration file and what became of it."""

    path: str
    status: SourceStatus
    why: str | None


class ConfigReport(TypedDict):
    """The effective configuration and where it came from."""

    inject: bool
    maxInjectBytes: int
    sources: list[ConfigSourceReport]
    problems: list[str]


class RecallReport(TypedDict):
    """The recall plan's verdict."""

    inject: bool
    used: int
    maxInjectBytes: int
    included: int
    omitted: list[OmittedNote]


DoctorReport = TypedDict(
    "DoctorReport",
    {
        "project": ScopeReport,
        "global": ScopeReport,
        "crossScopeDuplicates": list[CrossScopePair],
        "trust": TrustReport,
        "config": ConfigReport,
        "recall": RecallReport,
        "problems": list[str],
    },
)
DoctorReport.__doc__ = (
    "The doctor's report (``memory-ls doctor --json``), also the source of its text."
)


class DoctorResult(DoctorReport):
    """The ``memory.doctor`` result: the report plus its text rendering."""

    text: str


# -- git (SPEC §14) ------------------------------------------------------------------


class SyncResult(TypedDict):
    """The ``memory-ls sync`` / ``memory.sync`` result: what was committed, arrived and left.

    ``arrived`` and ``left`` are the notes the pull brought in and took away;
    ``commit`` is the message of the commit of local changes, when one was made;
    ``setup`` lists what the merge driver's set-up changed. On a refusal or a
    failed pull or push, ``error`` says what happened and what to do; nothing
    local is lost either way.
    """

    scope: Scope
    repository: str
    upstream: str
    setup: list[str]
    commit: NotRequired[str]
    arrived: list[str]
    left: list[str]
    pushed: bool
    error: NotRequired[str]


def _closed(*shapes: Any) -> None:
    # pydantic reads ``__pydantic_config__`` from a TypedDict (what ``pydantic.with_config``
    # sets); set here so the core does not import pydantic.
    for shape in shapes:
        shape.__pydantic_config__ = {"extra": "forbid"}


_closed(
    Proposal,
    MemoryResult,
    ImportRefusal,
    ImportResult,
    ExportResult,
    InboxResult,
    InboxCounts,
    ReviewResult,
    OmittedNote,
    InjectResult,
    PathInfo,
    NoteChanges,
    ReloadChanges,
    ReloadResult,
    DuplicatePair,
    ScopeReport,
    CrossScopePair,
    TrustReport,
    ConfigSourceReport,
    ConfigReport,
    RecallReport,
    DoctorReport,
    DoctorResult,
    SyncResult,
    RevealResult,
)
