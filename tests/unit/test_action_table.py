"""The action table (memory_ls.core.actions.ACTION_TABLE): validation and each change (SPEC §3)."""

from __future__ import annotations

from typing import Any

import pytest

from memory_ls.core.actions import (
    ACTION_MESSAGE,
    ACTION_TABLE,
    DISTINCT_MESSAGE,
    SCOPE_MESSAGE,
    Change,
    Request,
    apply_add,
    apply_clear,
    apply_forget,
    apply_merge,
    apply_update,
    check_action,
    read_request,
)
from memory_ls.core.models import Scope

STORE = "# Memory\n\nprose\n- use pnpm\n  * indented note\n- run tests\n\n"
TEXTS = [STORE, "", "- use pnpm", "\ufeff- a\r\n- use pnpm\r\n", "- Use PNPM!\n- other\n"]


def test_the_table_holds_every_action_of_spec_3() -> None:
    assert list(ACTION_TABLE) == ["add", "update", "forget", "list", "merge", "move", "clear"]
    assert {name: a.fields for name, a in ACTION_TABLE.items()} == {
        "add": ("text",),
        "update": ("text", "to"),
        "forget": ("text",),
        "list": (),
        "merge": ("text", "other", "to"),
        "move": ("text",),
        "clear": (),
    }
    for name in ACTION_TABLE:
        assert check_action(name) is None


@pytest.mark.parametrize("scope", ["project", "global"])
def test_the_stores_each_action_writes(scope: Scope) -> None:
    other: Scope = "global" if scope == "project" else "project"
    stores = {name: Request(name, scope).stores() for name in ACTION_TABLE}
    assert stores == {
        "add": (scope,),
        "update": (scope,),
        "forget": (scope,),
        "list": (),
        "merge": (scope,),
        "move": (other, scope),  # the target first: never in neither
        "clear": (scope,),
    }


def _direct(request: Request, store: Scope) -> Any:
    """The change as the apply_* functions give it, spelled out per action."""
    text, to, other = request.text, request.to, request.other
    return {
        "add": lambda c: apply_add(c, text),
        "update": lambda c: apply_update(c, text, to, store),
        "forget": lambda c: apply_forget(c, text, store),
        "merge": lambda c: apply_merge(c, text, other, to, store),
        "move": (
            (lambda c: apply_forget(c, text, store))
            if store == request.scope
            else (lambda c: apply_add(c, text))
        ),
        "clear": apply_clear,
    }[request.action]


REQUESTS = [
    Request("add", "project", "use pnpm"),
    Request("add", "global", "a new note"),
    Request("update", "project", "use pnpm", to="use yarn"),
    Request("update", "global", "missing", to="x"),
    Request("forget", "project", "run tests"),
    Request("forget", "global", "missing"),
    Request("merge", "project", "use pnpm", to="pnpm; tests", other="run tests"),
    Request("merge", "project", "use pnpm", to="x", other="missing"),
    Request("move", "project", "use pnpm"),
    Request("move", "global", "a"),
    Request("clear", "project"),
    Request("clear", "global"),
]


@pytest.mark.parametrize("request_", REQUESTS, ids=repr)
@pytest.mark.parametrize("text", TEXTS, ids=repr)
def test_each_change_through_the_table_is_the_apply_function(request_: Request, text: str) -> None:
    for store in request_.stores():
        through_table: Change = request_.change(store)(text)
        assert through_table == _direct(request_, store)(text)


def test_list_changes_no_store() -> None:
    with pytest.raises(ValueError, match="list changes no store"):
        Request("list").change("project")


@pytest.mark.parametrize(
    ("action", "args", "expected"),
    [
        ("add", {"text": "  use   pnpm "}, Request("add", "project", "use pnpm")),
        ("add", {"text": "x", "scope": "global"}, Request("add", "global", "x")),
        ("update", {"text": "a", "to": "b"}, Request("update", "project", "a", to="b")),
        ("forget", {"text": "a", "uri": "file:///x"}, Request("forget", "project", "a")),
        ("list", {"text": 5}, Request("list", "project")),
        (
            "merge",
            {"text": "a", "other": "b", "to": "a; b"},
            Request("merge", "project", "a", to="a; b", other="b"),
        ),
        ("move", {"text": "a", "scope": "global"}, Request("move", "global", "a")),
        ("clear", {}, Request("clear", "project")),
    ],
)
def test_read_request(action: str, args: dict[str, object], expected: Request) -> None:
    assert read_request(action, args) == (expected, None)


@pytest.mark.parametrize(
    ("action", "args", "expected", "message"),
    [
        ("delete", {"text": "a"}, Request("delete"), ACTION_MESSAGE),
        ("ADD", {}, Request("ADD"), ACTION_MESSAGE),
        (None, {"scope": "global"}, Request("", "global"), ACTION_MESSAGE),
        (["add"], {}, Request(""), ACTION_MESSAGE),
        ("add", {"text": "a", "scope": "both"}, Request("add"), SCOPE_MESSAGE),
        ("clear", {"scope": 1}, Request("clear"), SCOPE_MESSAGE),
        ("add", {}, Request("add"), "text is required."),
        ("add", {"text": "   "}, Request("add"), "text is required."),
        ("add", {"text": 3}, Request("add"), "text is required."),
        ("forget", {"text": "x" * 501}, Request("forget"), "text is longer than 500 characters."),
        ("update", {"text": "a"}, Request("update"), "to is required."),
        ("update", {"to": "b"}, Request("update"), "text is required."),
        ("merge", {"text": "a", "to": "x"}, Request("merge"), "other is required."),
        ("merge", {"text": "a", "other": "b"}, Request("merge"), "to is required."),
        (
            "merge",
            {"text": "a", "other": " a ", "to": "x", "scope": "global"},
            Request("merge", "global", "a", to="x", other="a"),
            DISTINCT_MESSAGE,
        ),
        ("move", {"text": None, "scope": "global"}, Request("move", "global"), "text is required."),
    ],
)
def test_refused_requests_give_the_spec_messages(
    action: object, args: dict[str, object], expected: Request, message: str
) -> None:
    assert read_request(action, args) == (expected, message)


def test_messages_are_exact() -> None:
    assert ACTION_MESSAGE == "action must be one of add, update, forget, list."
    assert SCOPE_MESSAGE == "scope must be one of project, global."
    assert DISTINCT_MESSAGE == "text and other must be different notes."


def test_the_result_echoes_the_note_and_its_new_text() -> None:
    assert Request("add", text="a").echoed() == {"entry": "a"}
    assert Request("update", text="a", to="b").echoed() == {"entry": "a", "to": "b"}
    assert Request("merge", text="a", to="b", other="c").echoed() == {"entry": "a", "to": "b"}
    assert Request("move", text="a").echoed() == {"entry": "a"}
    assert Request("clear").echoed() == {}
    assert Request("list").echoed() == {}
