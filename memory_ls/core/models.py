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

from memory_ls.core.config import SourceStatus
from memory_ls.core.trust import TrustRule

Scope = Literal["project", "global"]
SCOPES: tuple[Scope, Scope] = ("project", "global")


def other_scope(scope: Scope) -> Scope:
    """The scope that is not ``scope``."""
    return "global" if scope == "project" else "project"


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


# -- the doctor (SPEC §9) ---------------------------------------------------------


class DuplicatePair(TypedDict):
    """Two notes with the same near-duplicate key."""

    first: str
    second: str
    firstLine: int
    secondLine: int


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
    error: NotRequired[str]
    readOnlyReason: NotRequired[str]


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


def _closed(*shapes: Any) -> None:
    # pydantic reads ``__pydantic_config__`` from a TypedDict (what ``pydantic.with_config``
    # sets); set here so the core does not import pydantic.
    for shape in shapes:
        shape.__pydantic_config__ = {"extra": "forbid"}


_closed(
    Proposal,
    MemoryResult,
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
)
