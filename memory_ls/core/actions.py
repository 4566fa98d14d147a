"""Each action as a pure function from a store's text to its new text (SPEC §3).

Nothing here touches a file: the runtime reads the store under its lock, calls
one of these, and writes ``Change.content`` when ``Change.changed``.

:data:`ACTION_TABLE` holds every action once: the fields it requires, the
stores it writes and its change as a function of a store's text. The runtime
validates and runs actions from it (:func:`read_request`), and the language
server replays a command's change on a buffer with unsaved edits from it
(:meth:`Request.change`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypedDict

from memory_ls.core.models import SCOPES, Scope, other_scope
from memory_ls.core.notes import parse, parse_bullet
from memory_ls.core.text import (
    BOM,
    HEADER,
    MAX_NOTE_UTF16,
    SplitText,
    escape_unseen,
    near_duplicate_key,
    normalise,
    split_text,
    utf16_length,
)

READ_ONLY_MESSAGE = "memory-ls is read-only: changes are refused."
UNTRUSTED_MESSAGE = 'Project memory is unavailable for an untrusted project; use scope "global".'
ACTION_MESSAGE = "action must be one of add, update, forget, list."
SCOPE_MESSAGE = "scope must be one of project, global."
DISTINCT_MESSAGE = "text and other must be different notes."
_BLANK_RUNS = re.compile(r"\n{3,}")


@dataclass(frozen=True, slots=True)
class Change:
    """What an action does to one store's text."""

    content: str
    changed: bool
    existing: str | None = None
    """For ``add``: the stored note with the same near-duplicate key."""
    error: str | None = None
    """A refusal found only by looking at the text (no match)."""


def clear_moved(command: str, asked: str, path: str, now: str) -> str:
    """Why a confirmed clear changed nothing: ``path`` led to ``asked`` when the person
    was asked, and leads to ``now`` (a folder link on the way pointed elsewhere meanwhile).
    The paths are quoted as messages quote them (``display_path``)."""
    return (
        f"{command} was confirmed for {asked}, but {path} leads to {now} now; "
        f"nothing was changed (run {command} again to clear that file)."
    )


def no_match(scope: Scope, text: str) -> str:
    """The refusal for a note that is not in ``scope`` (quoted escaped: a person reads it,
    and a U+202E in the text asked for must not reorder the line)."""
    return f"No {scope} memory note matches: {escape_unseen(text)}"


def check_action(value: object) -> str | None:
    """The error for an action name that the ``memory`` tool does not know."""
    return None if isinstance(value, str) and value in ACTION_TABLE else ACTION_MESSAGE


def check_scope(value: object) -> tuple[Scope, str | None]:
    """Validate a scope field (missing means ``project``)."""
    if value is None:
        return "project", None
    for scope in SCOPES:
        if value == scope:
            return scope, None
    return "project", SCOPE_MESSAGE


def check_text(value: object, field: str = "text") -> tuple[str, str | None]:
    """Validate and normalise a note field: a non-blank string of at most 500 UTF-16 units."""
    if not isinstance(value, str):
        return "", f"{field} is required."
    note = normalise(value)
    if not note:
        return "", f"{field} is required."
    if utf16_length(note) > MAX_NOTE_UTF16:
        return note, f"{field} is longer than {MAX_NOTE_UTF16} characters."
    return note, None


def _lf_tidy_end(lines: list[str]) -> list[str]:
    """Collapse trailing newlines to exactly one; nothing at all stays nothing."""
    body = "\n".join(lines).rstrip("\n")
    return (body + "\n").split("\n") if body else [""]


def _rewrite(
    content: str, rule: Callable[[int, str], str | None], tidy_end: bool
) -> tuple[SplitText, list[str], bool]:
    """Apply ``rule`` to every line: it returns the new line, or ``None`` to drop it."""
    split = split_text(content)
    out: list[str] = []
    changed = False
    for i, line in enumerate(split.lines):
        new = rule(i, line)
        if new != line:
            changed = True
        if new is not None:
            out.append(new)
    if changed and tidy_end:
        out = _lf_tidy_end(out)
    return split, out, changed


def _matching(note: str) -> Callable[[str], bool]:
    def matches(line: str) -> bool:
        b = parse_bullet(line)
        return b is not None and b.note == note

    return matches


def apply_add(content: str, note: str) -> Change:
    """Append ``- note`` unless a stored note has the same near-duplicate key."""
    existing = parse(content).keys.get(near_duplicate_key(note))
    if existing is not None:
        return Change(content, False, existing=existing)
    if "\r" in content:  # CRLF (or a stray CR): cut into lines, written back alike
        split = split_text(content)
        body = "\n".join(split.lines).rstrip()
        new_body = f"{body}\n- {note}\n" if body else f"{HEADER}\n\n- {note}\n"
        return Change(split.render(new_body.split("\n")), True)
    # LF only: the same text without cutting the store into lines and joining them again
    # (a 256 KB store with one emoji is 1 MB of code points: each copy counts).
    bom = content.startswith(BOM)
    if content[-1:] == "\n" and not content[-2:-1].isspace() and len(content) > 1 + bom:
        # The usual end, one LF after text: trimming it and adding "\n- note\n" is this.
        return Change(f"{content}- {note}\n", True)
    body = (content[1:] if bom else content).rstrip()
    new_body = f"{body}\n- {note}\n" if body else f"{HEADER}\n\n- {note}\n"
    return Change(BOM + new_body if bom or new_body.startswith(BOM) else new_body, True)


def apply_update(content: str, note: str, to: str, scope: Scope) -> Change:
    """Replace every note equal to ``note`` with ``to``, keeping indentation and marker."""
    matches = _matching(note)

    def rule(_: int, line: str) -> str:
        if not matches(line):
            return line
        b = parse_bullet(line)
        assert b is not None
        return f"{b.indent}{b.marker} {to}"

    split, out, _ = _rewrite(content, rule, tidy_end=False)
    if not any(matches(line) for line in split.lines):
        return Change(content, False, error=no_match(scope, note))
    if note == to:
        return Change(content, False)
    new = split.render(out)
    return Change(new, new != content)


def apply_forget(content: str, note: str, scope: Scope) -> Change:
    """Remove every line whose note equals ``note``; tidy the file's end."""
    matches = _matching(note)
    split, out, changed = _rewrite(
        content, lambda _, line: None if matches(line) else line, tidy_end=True
    )
    if not changed:
        return Change(content, False, error=no_match(scope, note))
    return Change(split.render(out), True)


def apply_merge(content: str, note: str, other: str, to: str, scope: Scope) -> Change:
    """Replace ``note`` with ``to`` and remove ``other``, in one write."""
    first, second = _matching(note), _matching(other)
    split = split_text(content)
    if not any(first(line) for line in split.lines):
        return Change(content, False, error=no_match(scope, note))
    if not any(second(line) for line in split.lines):
        return Change(content, False, error=no_match(scope, other))

    def rule(_: int, line: str) -> str | None:
        if second(line):
            return None
        if first(line):
            b = parse_bullet(line)
            assert b is not None
            return f"{b.indent}{b.marker} {to}"
        return line

    _, out, _ = _rewrite(content, rule, tidy_end=True)
    return Change(split.render(out), True)


def apply_clear(content: str) -> Change:
    """Remove every bullet line (blank bullets too), keep prose, tidy; header if empty."""
    split = split_text(content)
    kept = [line for line in split.lines if parse_bullet(line) is None]
    if len(kept) == len(split.lines):
        return Change(content, False)
    collapsed = _BLANK_RUNS.sub("\n\n", "\n".join(kept)).rstrip()
    body = collapsed.lstrip()
    if body and parse_bullet(body.split("\n", 1)[0]) is not None:
        # Trimming would make a note of prose such as "\x0b- x" (its indentation is
        # not spaces or tabs): drop only the leading blank lines, keep that line whole.
        first = collapsed.split("\n")
        while not first[0].strip():
            first.pop(0)
        body = "\n".join(first)
    new_body = f"{body}\n" if body else f"{HEADER}\n"
    return Change(split.render(new_body.split("\n")), True)


# -- the action table -------------------------------------------------------------


class Echoed(TypedDict, total=False):
    """What a :data:`MemoryResult` repeats of its request."""

    entry: str
    to: str


@dataclass(frozen=True, slots=True)
class Request:
    """One action with its fields validated and normalised."""

    action: str
    scope: Scope = "project"
    text: str = ""
    to: str = ""
    other: str = ""

    @property
    def spec(self) -> Action:
        """The action's row of :data:`ACTION_TABLE`."""
        return ACTION_TABLE[self.action]

    def stores(self) -> tuple[Scope, ...]:
        """The stores this request writes, in the order it writes them."""
        return self.spec.stores(self.scope)

    def change(self, store: Scope) -> Callable[[str], Change]:
        """This request's change to ``store`` as a function of the store's text.

        The runtime applies it to the file under its lock; the language server
        applies it again to a buffer with unsaved edits.
        """
        transform = self.spec.transform
        if transform is None:
            raise ValueError(f"{self.action} changes no store")

        def apply(content: str) -> Change:
            return transform(content, self, store)

        return apply

    def echoed(self) -> Echoed:
        """The fields the result repeats: ``entry`` (the note) and ``to``, where required."""
        fields = self.spec.fields
        out: Echoed = {}
        if "text" in fields:
            out["entry"] = self.text
        if "to" in fields:
            out["to"] = self.to
        return out


Transform = Callable[[str, Request, Scope], Change]
"""An action's new text of one store it writes: ``(content, request, store) -> Change``."""


@dataclass(frozen=True, slots=True)
class Action:
    """One action: the note fields it requires, the stores it writes, and its change."""

    name: str
    fields: tuple[str, ...]
    """The note fields it requires, validated in this order (``check_text``)."""
    transform: Transform | None
    """Its change to a store's text (``None``: it only reads)."""
    both_scopes: bool = False
    """It writes the other scope's store first, then its own (``move``)."""
    check: Callable[[Request], str | None] | None = None
    """A rule across fields, checked once each field is valid."""

    def stores(self, scope: Scope) -> tuple[Scope, ...]:
        """The stores it writes for ``scope``, in order."""
        if self.transform is None:
            return ()
        return (other_scope(scope), scope) if self.both_scopes else (scope,)


def _add(content: str, request: Request, store: Scope) -> Change:
    return apply_add(content, request.text)


def _update(content: str, request: Request, store: Scope) -> Change:
    return apply_update(content, request.text, request.to, store)


def _forget(content: str, request: Request, store: Scope) -> Change:
    return apply_forget(content, request.text, store)


def _merge(content: str, request: Request, store: Scope) -> Change:
    return apply_merge(content, request.text, request.other, request.to, store)


def _move(content: str, request: Request, store: Scope) -> Change:
    """Added to the other scope's store, forgotten from its own."""
    if store == request.scope:
        return apply_forget(content, request.text, store)
    return apply_add(content, request.text)


def _clear(content: str, request: Request, store: Scope) -> Change:
    return apply_clear(content)


def _distinct(request: Request) -> str | None:
    return DISTINCT_MESSAGE if request.text == request.other else None


ACTION_TABLE: dict[str, Action] = {
    a.name: a
    for a in (
        Action("add", ("text",), _add),
        Action("update", ("text", "to"), _update),
        Action("forget", ("text",), _forget),
        Action("list", (), None),
        Action("merge", ("text", "other", "to"), _merge, check=_distinct),
        Action("move", ("text",), _move, both_scopes=True),
        Action("clear", (), _clear),
    )
}
"""Every action (SPEC §3), by name."""


def read_request(action: object, args: Mapping[str, object]) -> tuple[Request, str | None]:
    """Validate an action's raw arguments: the request, and the first refusal if any (SPEC §3).

    Checked in order: the action, the scope, each required field, then a rule
    across fields. A refused request still names the action (``""`` when it is
    not a string) and the scope (``project`` when not valid), for the error result.
    """
    scope, scope_error = check_scope(args.get("scope"))
    spec = ACTION_TABLE.get(action) if isinstance(action, str) else None
    if spec is None:
        return Request(action if isinstance(action, str) else "", scope), ACTION_MESSAGE
    if scope_error:
        return Request(spec.name, scope), scope_error
    values: dict[str, str] = {}
    for name in spec.fields:
        value, error = check_text(args.get(name), name)
        if error:
            return Request(spec.name, scope), error
        values[name] = value
    request = Request(spec.name, scope, **values)
    return request, spec.check(request) if spec.check else None
