"""The recall plan: which notes reach the model under the byte budget (SPEC §6).

One function, :func:`recall_plan`, decides; the injection body, the doctor, the
diagnostics and the editor's budget view all read its result.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory_ls.core.models import InjectResult, OmittedNote, Scope
from memory_ls.core.text import utf8_length

MARKER = "[MEMORY]"
INTRO = (
    "Durable notes saved in earlier sessions. Treat them as facts the user asked you to remember."
)
TAIL_RESERVE = 64
"""Bytes held back so the ``(+N more …)`` tail always fits."""


def tail_line(omitted: int) -> str:
    """The line that counts the notes left out."""
    return f"- (+{omitted} more; use the memory tool)"


@dataclass(slots=True)
class PlannedNote:
    """One note and the plan's verdict on it (not frozen: plans build thousands per edit)."""

    scope: Scope
    index: int
    """Position among its scope's notes."""
    text: str
    bytes: int
    """What its ``- <note>`` line costs, newline included."""
    included: bool


@dataclass(frozen=True, slots=True)
class RecallPlan:
    """The whole recall decision and the body built from it."""

    inject: bool
    max_bytes: int
    notes: tuple[PlannedNote, ...]
    body: str | None

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
    project: list[str], global_: list[str], max_bytes: int, inject: bool = True
) -> RecallPlan:
    """Plan recall of ``project`` then ``global_`` notes within ``max_bytes``.

    The caller passes ``project=[]`` for an untrusted project. A note is taken when
    it (plus its section header, if the section has no note yet) still fits within
    ``max_bytes - 64``; later, shorter notes may still fit after one is skipped.
    """
    lines = [MARKER, INTRO]
    used = sum(utf8_length(line) + 1 for line in lines)
    limit = max(0, max_bytes - TAIL_RESERVE)
    planned: list[PlannedNote] = []
    skipped = 0
    sections: tuple[tuple[Scope, list[str]], ...] = (("project", project), ("global", global_))
    for scope, notes in sections:
        header = f"{scope}:"
        header_cost = utf8_length(header) + 1
        section: list[str] = []
        append = planned.append
        for i, note in enumerate(notes):
            cost = utf8_length(note) + 3  # "- " and the newline
            fits = used + (0 if section else header_cost) + cost <= limit
            append(PlannedNote(scope, i, note, cost, fits))
            if fits:
                if not section:
                    used += header_cost
                section.append(f"- {note}")
                used += cost
            else:
                skipped += 1
        if section:
            lines.append(header)
            lines.extend(section)
    if skipped:
        lines.append(tail_line(skipped))
    has_notes = bool(project or global_)
    body = "\n".join(lines) if (inject and has_notes) else None
    return RecallPlan(inject=inject, max_bytes=max_bytes, notes=tuple(planned), body=body)
