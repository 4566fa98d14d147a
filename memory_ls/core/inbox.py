"""The review inbox as pure functions over (store text, inbox text) (SPEC §12).

An inbox is a JSON Lines file beside its store: one proposal per line. Every
line is kept byte for byte: a proposal leaves the file only when it is
accepted or rejected, a line that is not a valid proposal is never touched
(it is ignored and reported), and a new proposal is appended. The runtime
(:mod:`memory_ls.store.review`) reads both files under the store's lock, calls
one of :func:`propose`, :func:`accept` or :func:`reject`, and writes what they
return.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from memory_ls.core.actions import Change, Request, check_text
from memory_ls.core.models import SCOPES, InboxResult, Proposal, Scope
from memory_ls.core.text import BOM, escape_unseen, normalise, remove_hidden

PROPOSAL_ACTIONS = ("add", "update", "forget")
"""What an agent may propose: no merge, move or clear."""

MAX_PROPOSALS = 200
"""At most this many proposals wait in one inbox."""

MAX_BY = 100
"""A ``by`` longer than this (characters, after normalisation) is cut."""

_ID = re.compile(r"[0-9a-f]{8}\Z")
_AT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\Z")
_KEYS = frozenset({"id", "action", "text", "to", "by", "at"})


def full_message(scope: Scope) -> str:
    """The refusal of a proposal to a full inbox."""
    return f"The {scope} inbox is full ({MAX_PROPOSALS} proposals); review them first."


SHOWN_ID = 40
"""An unknown id is quoted with at most this many characters (a real one has 8)."""


def unknown_id_message(proposal_id: str, scope: Scope | None) -> str:
    """The refusal of an id that waits in no inbox looked in (``None``: both were).

    The id comes from the client or the command line: it is quoted escaped and
    short, so it cannot forge a line of the answer or fill it.
    """
    where = scope if scope is not None else "project or global"
    shown = escape_unseen(proposal_id)
    if len(shown) > SHOWN_ID:
        shown = shown[: SHOWN_ID - 1] + "…"
    return f"No proposal {shown} in {where} inbox."


EDIT_NEEDS_ONE_ID = "Editing a proposal before accepting it needs exactly one id."


def too_many_ids_message(count: int, inboxes: int) -> str:
    """The refusal of more ids than ``inboxes`` inboxes can hold (each answered alone is huge)."""
    where = "the inbox holds" if inboxes == 1 else "the inboxes hold"
    return f"Too many ids ({count}); {where} at most {inboxes * MAX_PROPOSALS} proposals."


def edit_mismatch_message(proposal: Proposal, field_name: str) -> str:
    """The refusal of an edit that does not fit the proposal's action."""
    wanted = "an add" if field_name == "text" else "an update"
    return (
        f"Only {wanted} proposal's {field_name} can be edited; "
        f"{proposal['id']} proposes to {proposal['action']}."
    )


def label(proposal: Proposal) -> str:
    """The proposal's text as messages show it: ``text``, or ``text → to`` for an update.

    Hidden characters (bidi overrides, zero-width, tags) are shown escaped: the
    person reviewing must see what would be stored, not what it renders as.
    """
    if proposal["action"] == "update":
        return f"{escape_unseen(proposal['text'])} → {escape_unseen(proposal.get('to', ''))}"
    return escape_unseen(proposal["text"])


def proposed_message(proposal: Proposal, scope: Scope, waiting: int) -> str:
    """The result text of a queued proposal."""
    return f"Proposed for review ({scope} memory): {label(proposal)}\n{waiting} waiting for review."


def already_proposed_message(proposal: Proposal) -> str:
    """The result text of a proposal equal to one already waiting (not an error)."""
    return f"Already proposed ({proposal['id']}): {label(proposal)}"


BY_MESSAGE = "by must be a string: who proposes."
"""The refusal of a ``by`` that is given but is not a string (LSP commands; ``null`` is none)."""


def check_by(value: object) -> str | None:
    """Why ``by`` is refused (:data:`BY_MESSAGE`), or ``None``: absent, ``null`` or a string."""
    return None if value is None or isinstance(value, str) else BY_MESSAGE


def clean_by(value: object, default: str) -> str:
    """Who proposed: one line, normalised, without hidden characters (bidi overrides,
    zero-width), at most :data:`MAX_BY` characters; ``default`` when blank.

    A ``by`` is shown to people (lenses, the picker, notifications) and to agents
    (``memory://inbox``): it must not forge a line or hide what it says.
    """
    if not isinstance(value, str):
        return default
    cleaned = normalise(remove_hidden(value))[:MAX_BY].strip()
    return cleaned or default


# -- the file ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InboxLine:
    """One line of an inbox file: its exact text and the proposal it holds, if valid."""

    number: int
    """1-based."""
    raw: str
    proposal: Proposal | None


@dataclass(frozen=True, slots=True)
class Inbox:
    """An inbox file, line by line."""

    lines: tuple[InboxLine, ...] = ()

    @property
    def proposals(self) -> list[Proposal]:
        """The valid proposals, in file order."""
        return [line.proposal for line in self.lines if line.proposal is not None]

    @property
    def malformed(self) -> list[int]:
        """The numbers of the lines that are not a valid proposal (blank lines aside)."""
        return [line.number for line in self.lines if line.proposal is None and line.raw.strip()]

    def find(self, proposal_id: str) -> Proposal | None:
        """The waiting proposal with this id."""
        return next((p for p in self.proposals if p["id"] == proposal_id), None)

    def render(self) -> str:
        """The file's text: every non-blank line as it was, LF-terminated; ``""`` when none.

        An inbox with nothing left is deleted by the runtime, never left empty.
        """
        kept = [line.raw for line in self.lines if line.raw.strip()]
        return "".join(f"{raw}\n" for raw in kept)

    def without(self, ids: set[str]) -> Inbox:
        """This inbox without the proposals whose ids are given; every other line kept."""
        return Inbox(
            tuple(
                line
                for line in self.lines
                if line.proposal is None or line.proposal["id"] not in ids
            )
        )

    def with_proposal(self, proposal: Proposal) -> Inbox:
        """This inbox with ``proposal`` appended as a new last line."""
        number = len(self.lines) + 1
        return Inbox((*self.lines, InboxLine(number, serialise(proposal), proposal)))


def serialise(proposal: Proposal) -> str:
    """One proposal as its line (compact JSON, keys in the order of SPEC §12, no newline)."""
    ordered: dict[str, str] = {
        "id": proposal["id"],
        "action": proposal["action"],
        "text": proposal["text"],
    }
    if "to" in proposal:
        ordered["to"] = proposal["to"]
    ordered["by"] = proposal["by"]
    ordered["at"] = proposal["at"]
    return json.dumps(ordered, ensure_ascii=False, separators=(",", ":"))


def read_proposal(raw: str) -> Proposal | None:
    """The proposal one line holds, or ``None`` when it is not a valid one.

    Valid: a JSON object with an 8-hex ``id``, an ``action`` of add, update or
    forget, a ``text`` (and for an update a ``to``) that would pass the action's
    own validation, a non-blank string ``by`` and an ``at`` in the UTC format.
    Unknown keys are allowed (the line is kept as it is anyway); the text is
    taken normalised.
    """
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    pid, action, by, at = data.get("id"), data.get("action"), data.get("by"), data.get("at")
    if not (isinstance(pid, str) and _ID.match(pid)):
        return None
    if action not in PROPOSAL_ACTIONS:
        return None
    if not (isinstance(at, str) and _AT.match(at)):
        return None
    # A hand-edited `by` is read as a proposer's would have been written: one clean line.
    by = clean_by(by, "")
    if not by:
        return None
    text, error = check_text(data.get("text"))
    if error:
        return None
    out: dict[str, str] = {"id": pid, "action": action, "text": text}
    if action == "update":
        to, error = check_text(data.get("to"), "to")
        if error:
            return None
        out["to"] = to
    elif "to" in data:
        return None
    out["by"], out["at"] = by, at
    return cast(Proposal, out)


def parse_inbox(text: str) -> Inbox:
    """Read an inbox's text: one :class:`InboxLine` per ``\\n``-separated line.

    A second proposal with an id already seen is not a valid proposal (ids are
    unique in a file): it is kept and ignored like any other bad line. A
    leading byte order mark is set aside for reading, and kept.
    """
    if not text:
        return Inbox()
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
    seen: set[str] = set()
    lines: list[InboxLine] = []
    for number, raw in enumerate(parts, start=1):
        readable = raw.removeprefix(BOM) if number == 1 else raw
        proposal = read_proposal(readable)
        if proposal is not None:
            if proposal["id"] in seen:
                proposal = None
            else:
                seen.add(proposal["id"])
        lines.append(InboxLine(number, raw, proposal))
    return Inbox(tuple(lines))


def new_id(taken: set[str], seed: str) -> str:
    """An id of 8 lowercase hex characters that is not in ``taken``.

    Derived from ``seed`` (the runtime passes fresh random bytes), so this stays
    a pure function; a collision is retried with a counter.
    """
    # Imported here: hashlib loads OpenSSL (~3.5 MB resident), which `serve` does without
    # until a proposal needs an id (issue 11).
    import hashlib

    counter = 0
    while True:
        candidate = hashlib.sha256(f"{seed}:{counter}".encode()).hexdigest()[:8]
        if candidate not in taken:
            return candidate
        counter += 1


# -- propose ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Proposed:
    """What proposing did: the inbox's new text, and what to answer."""

    inbox: str
    queued: bool
    """A new line was appended."""
    proposal: Proposal | None = None
    """The queued proposal, or the equal one already waiting."""
    waiting: int = 0
    existing: str | None = None
    """For an add: the stored note with the same key (``Already in …``); nothing queued."""
    error: str | None = None
    """Why nothing was queued (no match, full inbox)."""


def propose(
    store: str,
    inbox_text: str,
    request: Request,
    by: str,
    at: str,
    seed: str,
) -> Proposed:
    """Queue ``request`` (an add, update or forget, validated) as a proposal for review.

    Checked against the store as the action itself would be (an add already
    stored, an update or forget matching nothing queue nothing), then against
    the inbox (an equal proposal already waiting; the :data:`MAX_PROPOSALS` cap).
    """
    if request.action not in PROPOSAL_ACTIONS:
        raise ValueError(f"{request.action} cannot be proposed")
    inbox = parse_inbox(inbox_text)
    waiting = len(inbox.proposals)
    change = request.change(request.scope)(store)
    if change.error:
        return Proposed(inbox_text, False, waiting=waiting, error=change.error)
    if change.existing is not None:
        return Proposed(inbox_text, False, waiting=waiting, existing=change.existing)
    if not change.changed:  # an update to the same text: nothing to review
        return Proposed(inbox_text, False, waiting=waiting)
    for p in inbox.proposals:
        if (
            p["action"] == request.action
            and p["text"] == request.text
            and p.get("to", "") == (request.to if request.action == "update" else "")
        ):
            return Proposed(inbox_text, False, proposal=p, waiting=waiting)
    if waiting >= MAX_PROPOSALS:
        return Proposed(inbox_text, False, waiting=waiting, error=full_message(request.scope))
    fields: dict[str, str] = {
        "id": new_id({p["id"] for p in inbox.proposals}, seed),
        "action": request.action,
        "text": request.text,
    }
    if request.action == "update":
        fields["to"] = request.to
    fields["by"], fields["at"] = by, at
    proposal = cast(Proposal, fields)
    grown = inbox.with_proposal(proposal)
    return Proposed(grown.render(), True, proposal=proposal, waiting=waiting + 1)


# -- accept and reject -------------------------------------------------------------------


def proposal_request(proposal: Proposal, scope: Scope) -> Request:
    """The action a proposal stands for, as if called directly."""
    return Request(proposal["action"], scope, proposal["text"], proposal.get("to", ""))


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one selected id."""

    id: str
    proposal: Proposal | None
    """``None``: no proposal with this id waits in the inbox."""
    request: Request | None = None
    """The action run (with any edit applied); ``None`` when none ran."""
    change: Change | None = None
    """The action's change to the store as it was at that point."""
    removed: bool = False
    """The proposal left the inbox."""
    error: str | None = None
    """Why it was refused before its action ran (unknown id, a bad edit)."""


@dataclass(frozen=True, slots=True)
class Reviewed:
    """What accepting or rejecting did to a store and its inbox."""

    store: str
    inbox: str
    outcomes: list[Outcome] = field(default_factory=list)
    waiting: int = 0

    @property
    def store_changed(self) -> bool:
        """Some accepted action changed the store."""
        return any(o.change is not None and o.change.changed for o in self.outcomes)

    @property
    def inbox_changed(self) -> bool:
        """Some proposal left the inbox."""
        return any(o.removed for o in self.outcomes)


def select(inbox: Inbox, ids: Sequence[str] | None) -> list[tuple[str, Proposal | None]]:
    """The selected proposals, each with the id asked for: every one when ``ids`` is ``None``.

    An id given twice is taken once; an unknown id pairs with ``None``.
    """
    if ids is None:
        return [(p["id"], p) for p in inbox.proposals]
    return [(i, inbox.find(i)) for i in dict.fromkeys(ids)]


def _edited(
    proposal: Proposal, scope: Scope, text: str | None, to: str | None
) -> tuple[Request | None, str | None]:
    """The proposal's request with ``text`` (an add) or ``to`` (an update) replaced."""
    request = proposal_request(proposal, scope)
    if text is not None:
        if proposal["action"] != "add":
            return None, edit_mismatch_message(proposal, "text")
        note, error = check_text(text)
        if error:
            return None, error
        request = Request("add", scope, note)
    if to is not None:
        if proposal["action"] != "update":
            return None, edit_mismatch_message(proposal, "to")
        note, error = check_text(to, "to")
        if error:
            return None, error
        request = Request("update", scope, request.text, note)
    return request, None


def accept(
    store: str,
    inbox_text: str,
    scope: Scope,
    ids: Sequence[str] | None,
    text: str | None = None,
    to: str | None = None,
) -> Reviewed:
    """Run the selected proposals' actions on ``store``, one after another, and drop them.

    Each action runs as if called directly, on the store as the previous ones
    left it. A proposal leaves the inbox when its action succeeded and also when
    the store already reflects it (an add already there, a note to update or
    forget gone: the action's own result says so). An edit (``text`` for an
    add, ``to`` for an update) needs exactly one id; a refused edit keeps the
    proposal. Refusals of the whole store (trust, read-only, size) are the
    runtime's, before or after this.
    """
    inbox = parse_inbox(inbox_text)
    chosen = select(inbox, ids)
    editing = text is not None or to is not None
    outcomes: list[Outcome] = []
    removed: set[str] = set()
    current = store
    for pid, proposal in chosen:
        if proposal is None:
            outcomes.append(Outcome(pid, None, error=unknown_id_message(pid, scope)))
            continue
        if editing and len(chosen) != 1:
            outcomes.append(Outcome(pid, proposal, error=EDIT_NEEDS_ONE_ID))
            continue
        request, error = _edited(proposal, scope, text, to)
        if request is None:
            outcomes.append(Outcome(pid, proposal, error=error))
            continue
        change = request.change(scope)(current)
        if change.changed and change.error is None:
            current = change.content
        removed.add(pid)
        outcomes.append(Outcome(pid, proposal, request, change, removed=True))
    left = inbox.without(removed)
    return Reviewed(current, left.render(), outcomes, len(left.proposals))


def reject(store: str, inbox_text: str, scope: Scope, ids: Sequence[str] | None) -> Reviewed:
    """Drop the selected proposals; the store is untouched."""
    inbox = parse_inbox(inbox_text)
    outcomes: list[Outcome] = []
    removed: set[str] = set()
    for pid, proposal in select(inbox, ids):
        if proposal is None:
            outcomes.append(Outcome(pid, None, error=unknown_id_message(pid, scope)))
            continue
        removed.add(pid)
        outcomes.append(Outcome(pid, proposal, removed=True))
    left = inbox.without(removed)
    return Reviewed(store, left.render(), outcomes, len(left.proposals))


def rejected_message(proposal: Proposal, scope: Scope) -> str:
    """The account of one rejected proposal."""
    return f"Rejected ({proposal['id']}) for {scope} memory: {label(proposal)}"


def listing_text(listing: InboxResult) -> str:
    """Both inboxes as text, one line a proposal: ``- <id> <action>: <text> (by <by>, <at>)``.

    What ``memory-ls inbox`` prints and the MCP resource ``memory://inbox`` reads.
    """
    lines: list[str] = []
    for scope in SCOPES:
        proposals = listing[scope]
        if not proposals:
            lines.append(f"{scope}: none")
            continue
        lines.append(f"{scope} ({len(proposals)}):")
        lines.extend(
            f"- {p['id']} {p['action']}: {label(p)} (by {p['by']}, {p['at']})" for p in proposals
        )
    return "\n".join(lines)
