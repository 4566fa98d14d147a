"""The recall plan: which notes reach the model under the byte budget (SPEC §6).

One function, :func:`recall_plan`, decides; the injection body, the doctor, the
diagnostics and the editor's budget view all read its result.
:func:`incremental_plan` updates a plan after an edit without re-planning when
no decision can change (the editor calls it on every keystroke), and
:func:`note_recall` / :func:`scope_recall` say what the plan means for one
note or one store, so hover and the code lens only render.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from itertools import count, repeat

from memory_ls.core.records import record
from memory_ls.core.text import utf8_length

TYPE_CHECKING = False  # not `typing`'s: the read verbs do without importing it (~3.5 ms)
if TYPE_CHECKING:  # types only: the read verbs do not import the boundary shapes
    from typing import Literal

    from memory_ls.core.models import InjectResult, OmittedNote, Scope

    RecallState = Literal["in", "budget", "recall-off", "untrusted", "unread"]
    """What the plan does with a note: ``in`` the body, or why it is out. ``unread``:
    the plan was never given the note (its store is refused, SPEC §1)."""


MARKER = "[MEMORY]"
INTRO = (
    "Durable notes saved in earlier sessions. Treat them as facts the user asked you to remember."
)
TAIL_RESERVE = 64
"""Bytes held back so the ``(+N more …)`` tail always fits."""


def tail_line(omitted: int) -> str:
    """The line that counts the notes left out."""
    return f"- (+{omitted} more; use the memory tool)"


def note_cost(note: str) -> int:
    """What a note's ``- <note>`` line costs in the body, newline included."""
    return utf8_length(note) + 3


if TYPE_CHECKING:
    from typing import NamedTuple

    class PlannedNote(NamedTuple):
        """One note and the plan's verdict on it."""

        scope: Scope
        index: int  # type: ignore[assignment]  # (a field named as tuple's method, which it hides)
        """Position among its scope's notes."""
        text: str
        bytes: int
        """What its ``- <note>`` line costs, newline included."""
        included: bool

else:
    # A tuple, made as typing.NamedTuple makes it, without `typing`: a plan holds one
    # per note, and building a tuple is a third of a record's cost (issue 11: a store of
    # 4,500 notes is planned when the editor opens it, before its first diagnostics).
    PlannedNote = collections.namedtuple(
        "PlannedNote", ("scope", "index", "text", "bytes", "included")
    )
    PlannedNote.__doc__ = "One note and the plan's verdict on it."


@record
class RecallPlan:
    """The whole recall decision and the body built from it."""

    inject: bool
    max_bytes: int
    notes: tuple[PlannedNote, ...]
    """Project notes first, then global ones, each scope in file order."""
    body: str | None
    project: tuple[str, ...] = ()
    """The project notes the plan was made from (so an update can tell what changed)."""
    global_: tuple[str, ...] = ()
    """The global notes the plan was made from."""

    @property
    def used(self) -> int:
        """UTF-8 bytes of the body (0 without one)."""
        return utf8_length(self.body) if self.body is not None else 0

    @property
    def included(self) -> list[PlannedNote]:
        """Notes that reach the model."""
        return [n for n in self.notes if n.included] if self.inject else []

    @property
    def omitted(self) -> list[PlannedNote]:
        """Notes the budget leaves out (none when recall is off)."""
        return [n for n in self.notes if not n.included] if self.inject else []

    def notes_in(self, scope: Scope) -> tuple[PlannedNote, ...]:
        """``scope``'s notes as planned, in file order (left out or not)."""
        split = len(self.project)
        return self.notes[:split] if scope == "project" else self.notes[split:]

    def omitted_in(self, scope: Scope) -> list[PlannedNote]:
        """``scope``'s notes the budget leaves out (none when recall is off)."""
        return [n for n in self.notes if n.scope == scope and not n.included] if self.inject else []

    def planned(self, scope: Scope, index: int) -> PlannedNote | None:
        """The plan's entry for ``scope``'s note number ``index``, if it was planned."""
        position = index if scope == "project" else len(self.project) + index
        if index >= 0 and position < len(self.notes):
            note = self.notes[position]
            if note.scope == scope and note.index == index:
                return note
        return None

    def as_inject_result(self) -> InjectResult:
        """The ``memory.inject`` object."""
        omitted: list[OmittedNote] = [{"scope": n.scope, "text": n.text} for n in self.omitted]
        return {
            "body": self.body,
            "bytes": self.used,
            "maxInjectBytes": self.max_bytes,
            "included": len(self.included),
            "omitted": omitted,
            "inject": self.inject,
        }


def recall_plan(
    project: Sequence[str], global_: Sequence[str], max_bytes: int, inject: bool = True
) -> RecallPlan:
    """Plan recall of ``project`` then ``global_`` notes within ``max_bytes``.

    The caller passes ``project=[]`` for an untrusted project. A note is taken when
    it (plus its section header, if the section has no note yet) still fits within
    ``max_bytes - 64``; later, shorter notes may still fit after one is skipped.
    """
    planned: list[PlannedNote] = []
    body = _plan(project, global_, max_bytes, inject, planned)
    return RecallPlan(inject, max_bytes, tuple(planned), body, tuple(project), tuple(global_))


def recall_body(
    project: list[str], global_: list[str], max_bytes: int, inject: bool = True
) -> str | None:
    """``recall_plan(project, global_, max_bytes, inject).body``, without the plan.

    What ``memory-ls inject`` prints: the same decisions, but no
    :class:`PlannedNote` per note (~1.5 ms of 4,500) and nothing at all to decide
    when recall is off or there is no note.
    """
    if not (inject and (project or global_)):
        return None
    return _plan(project, global_, max_bytes, inject, None)


def _plan(
    project: Sequence[str],
    global_: Sequence[str],
    max_bytes: int,
    inject: bool,
    planned: list[PlannedNote] | None,
) -> str | None:
    """The body of :func:`recall_plan`; each note's verdict appended to ``planned`` if given."""
    lines = [MARKER, INTRO]
    used = sum(utf8_length(line) + 1 for line in lines)
    limit = max(0, max_bytes - TAIL_RESERVE)
    skipped = 0
    sections: tuple[tuple[Scope, Sequence[str]], ...] = (
        ("project", project),
        ("global", global_),
    )
    new = tuple.__new__
    for scope, notes in sections:
        header = f"{scope}:"
        header_cost = utf8_length(header) + 1
        section: list[str] = []
        append = None if planned is None else planned.append
        # note_cost of each, inlined (its ASCII case too): this runs per keystroke
        costs = [(len(note) if note.isascii() else utf8_length(note)) + 3 for note in notes]
        smallest = min(costs, default=0)
        for i, note in enumerate(notes):
            cost = costs[i]
            fits = used + (0 if section else header_cost) + cost <= limit
            if append is not None:
                append(new(PlannedNote, (scope, i, note, cost, fits)))
            if fits:
                if not section:
                    used += header_cost
                section.append(f"- {note}")
                used += cost
                if used + smallest > limit:
                    # No later note of this scope fits now: the rest are left out, made
                    # in one pass (on a large store, most of its notes).
                    rest = len(notes) - i - 1
                    if planned is not None:
                        planned.extend(
                            map(
                                new,
                                repeat(PlannedNote),
                                zip(
                                    repeat(scope),
                                    count(i + 1),
                                    notes[i + 1 :],
                                    costs[i + 1 :],
                                    repeat(False),
                                ),
                            )
                        )
                    skipped += rest
                    break
            else:
                skipped += 1
        if section:
            lines.append(header)
            lines.extend(section)
    if skipped:
        lines.append(tail_line(skipped))
    has_notes = bool(project or global_)
    return "\n".join(lines) if (inject and has_notes) else None


def incremental_plan(
    previous: RecallPlan,
    project: Sequence[str],
    global_: Sequence[str],
    max_bytes: int,
    inject: bool = True,
    project_changed: Sequence[int] | None = None,
) -> RecallPlan | None:
    """``previous`` updated to new notes, or ``None`` when only :func:`recall_plan` can say.

    The result always equals ``recall_plan(project, global_, max_bytes, inject)``;
    it is ``previous`` itself when nothing changed. A note the plan leaves out
    does not touch the budget, so a one-note edit of such a note changes no other
    decision as long as the note still does not fit where it stands. Anything
    else (an included note, several notes, a note added or removed, other
    settings) needs a fresh plan.

    ``project_changed``: every index where ``project`` differs from
    ``previous.project``, when the caller knows them (the editor's buffer does:
    ``MemoryDocument.notes_changed``); else the two are compared.
    """
    if max_bytes != previous.max_bytes or inject != previous.inject:
        return None
    if len(project) != len(previous.project) or len(global_) != len(previous.global_):
        return None
    if project_changed is None:
        project_changed = _changed(previous.project, project)
    changed: list[tuple[Scope, int]] = [("project", i) for i in project_changed]
    changed += [("global", i) for i in _changed(previous.global_, global_)]
    if not changed:
        return previous
    if len(changed) != 1:
        return None
    scope, index = changed[0]
    text = (project if scope == "project" else global_)[index]
    kept = kept_out(previous, scope, index, text)
    if kept is None:
        return None
    position = index if scope == "project" else len(project) + index
    notes = list(previous.notes)  # (one copy each way: unpacking two slices copies twice more)
    notes[position] = kept
    return RecallPlan(
        previous.inject, max_bytes, tuple(notes), previous.body, tuple(project), tuple(global_)
    )


def kept_out(
    plan: RecallPlan, scope: Scope, index: int, text: str, current: PlannedNote | None = None
) -> PlannedNote | None:
    """The plan's verdict on ``scope``'s note number ``index`` once its text is ``text``,
    when that is the only change and no decision changes with it: the note was left
    out and still does not fit where it stands (a note left out does not touch the
    budget). ``None`` when only :func:`recall_plan` can say.

    ``current``: the note's verdict as the plan has it now, when that is not
    ``plan.notes``' (an edit already kept out, not yet in a plan of its own).
    """
    position = index if scope == "project" else len(plan.project) + index
    old = plan.notes[position] if current is None else current
    if old.included:
        return None
    cost = note_cost(text)
    if cost < old.bytes and _fits_at(plan, position, cost):
        return None
    return PlannedNote(old.scope, old.index, text, cost, False)


def with_kept_out(
    plan: RecallPlan, project: tuple[str, ...], kept: dict[int, PlannedNote]
) -> RecallPlan:
    """``plan`` with its project notes ``project``, of which those at the indices of ``kept``
    were edited, each still left out (:func:`kept_out` said so, one edit at a time)."""
    notes = list(plan.notes)
    for index, note in kept.items():
        notes[index] = note
    return RecallPlan(plan.inject, plan.max_bytes, tuple(notes), plan.body, project, plan.global_)


def budget_before(plan: RecallPlan, position: int) -> tuple[int, bool]:
    """The per-note budget: bytes the body uses before ``plan.notes[position]``, and
    whether that note's section already has a note (its header is then paid)."""
    used = utf8_length(MARKER) + 1 + utf8_length(INTRO) + 1
    seen: set[str] = set()
    for n in plan.notes[:position]:
        if n.included:
            if n.scope not in seen:
                seen.add(n.scope)
                used += utf8_length(f"{n.scope}:") + 1
            used += n.bytes
    return used, plan.notes[position].scope in seen


def _fits_at(plan: RecallPlan, position: int, cost: int) -> bool:
    """Whether a note of ``cost`` bytes at ``position`` would be taken (recall_plan's rule)."""
    used, started = budget_before(plan, position)
    header = 0 if started else utf8_length(f"{plan.notes[position].scope}:") + 1
    return used + header + cost <= max(0, plan.max_bytes - TAIL_RESERVE)


def _changed(old: tuple[str, ...], new: Sequence[str]) -> list[int]:
    """The first (at most two) indices where ``new`` differs from ``old`` (same length).

    Compared in C, as tuples: a tuple compares its items by identity first, and the
    notes that did not change are the very strings of the last plan, so each costs a
    pointer comparison; a difference is then found by halving, comparing slices. This
    runs on every keystroke over every note of both stores: a ``map`` of ``!=`` over
    them (a call per note) was ~0.1-0.2 ms of a keystroke on 4,500 notes, this ~0.02.
    """
    new = new if type(new) is tuple else tuple(new)
    found: list[int] = []
    low = 0
    while len(found) < 2 and old[low:] != new[low:]:
        high = len(old)  # old[low:high] != new[low:high]: the first difference is in it
        while high - low > 1:
            middle = (low + high) // 2
            if old[low:middle] == new[low:middle]:
                low = middle
            else:
                high = middle
        found.append(low)
        low += 1
    return found


@record
class NoteRecall:
    """One note's verdict: in or out of recall, what it costs, and why it is out."""

    state: RecallState
    bytes: int
    """What its ``- <note>`` line costs in the body."""

    @property
    def included(self) -> bool:
        """Whether the note reaches the model."""
        return self.state == "in"


@record
class ScopeRecall:
    """What recall does with one store: taken as a whole, or why it is out, and how many
    of its notes the budget leaves out."""

    state: Literal["on", "recall-off", "untrusted"]
    left_out: int


def _scope_out(
    plan: RecallPlan, scope: Scope, trusted: bool
) -> Literal["recall-off", "untrusted"] | None:
    """Why none of ``scope``'s notes is recalled. Trust comes first: an untrusted
    project's notes are never offered to the plan, whatever the configuration."""
    if scope == "project" and not trusted:
        return "untrusted"
    if not plan.inject:
        return "recall-off"
    return None


def note_recall(
    plan: RecallPlan, scope: Scope, index: int, note: str, *, trusted: bool = True
) -> NoteRecall:
    """Whether ``scope``'s note number ``index`` (text ``note``) is recalled, and why not.

    ``trusted`` is the project's trust (it only matters for a project note).
    """
    cost = note_cost(note)
    out = _scope_out(plan, scope, trusted)
    if out is not None:
        return NoteRecall(out, cost)
    planned = plan.planned(scope, index)
    if planned is None:
        return NoteRecall("unread", cost)
    return NoteRecall("in" if planned.included else "budget", cost)


def scope_recall(plan: RecallPlan, scope: Scope, *, trusted: bool = True) -> ScopeRecall:
    """What recall does with ``scope``'s store (the code lens's verdict)."""
    out = _scope_out(plan, scope, trusted)
    if out is not None:
        return ScopeRecall(out, 0)
    return ScopeRecall("on", len(plan.omitted_in(scope)))
