"""How the server writes a response (``server/protocol.py``), in process.

A result that is plain JSON (a ``MemoryResult``: every note of both stores) is
written as it is, without cattrs walking its thousands of values, and its long lists
from the encodings of the lists answered before; anything else, and an lsprotocol
object inside such a result, is written as pygls writes it. Either way the bytes are
pygls' own.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from lsprotocol import types as lsp
from lsprotocol.converters import get_converter
from pygls.protocol import JsonRPCProtocol, JsonRPCResponseMessage

from memory_ls.core.text import without_lone_surrogates
from memory_ls.server.protocol import LONG_LIST, ListJson, _did_change, _did_open
from memory_ls.server.server import create_server

from .conftest import InProcess, uri_of

CONVERTER = get_converter()
PROTOCOL = create_server().protocol


def written(message: object) -> object:
    """The JSON the server's protocol writes for ``message`` (as pygls' ``_send_data``)."""
    protocol = create_server().protocol
    return json.loads(json.dumps(message, default=protocol._serialize_message))


def test_a_plain_result_is_written_as_it_is_and_as_pygls_would() -> None:
    result = {"action": "add", "project": [f"note {i}" for i in range(50)], "changed": True}
    for message in (
        lsp.ExecuteCommandResponse(id=7, result=result),
        JsonRPCResponseMessage(id=7, result=result, jsonrpc="2.0"),
    ):
        serialised = create_server().protocol._serialize_message(message)
        assert serialised["result"] is result  # handed to json as it is, not copied
        assert written(message) == CONVERTER.unstructure(message)
        assert written(message) == {"id": 7, "jsonrpc": "2.0", "result": result}


def test_an_lsprotocol_object_inside_a_plain_result_is_still_unstructured() -> None:
    edit = lsp.TextEdit(
        range=lsp.Range(start=lsp.Position(line=1, character=0), end=lsp.Position(1, 3)),
        new_text="- x",
    )
    message = lsp.ExecuteCommandResponse(id=3, result={"edits": [edit], "kind": None})
    assert written(message) == CONVERTER.unstructure(message)
    assert written(message)["result"]["edits"][0]["newText"] == "- x"


def test_other_responses_are_written_as_pygls_writes_them() -> None:
    hover = lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value="**x**"))
    for message in (
        lsp.HoverResponse(id=1, result=hover),
        lsp.HoverResponse(id=2, result=None),
        lsp.ExecuteCommandResponse(id=3, result=["a", 1]),
    ):
        assert written(message) == CONVERTER.unstructure(message)


async def test_memory_add_answers_with_every_note(server: InProcess) -> None:
    server.workspace.write("project", [f"note {i}" for i in range(30)])
    await server.initialize()
    answer = await server.client.request(
        lsp.WORKSPACE_EXECUTE_COMMAND,
        lsp.ExecuteCommandParams(command="memory.add", arguments=[{"text": "one more"}]),
    )
    result = answer["result"]
    assert result["changed"] is True
    assert result["project"] == [*(f"note {i}" for i in range(30)), "one more"]


# -- a response with a plain result: the bytes pygls writes, from kept encodings ----------

NOTE_TEXT = st.text(st.sampled_from('ab é😀\ud800"\\\n'), max_size=4)


def pygls_bytes(protocol: Any, message: object) -> bytes:
    """What pygls' own ``_send_data`` writes for ``message`` (without headers)."""
    out: list[bytes] = []
    protocol.set_writer(Capture(out), include_headers=False)
    JsonRPCProtocol._send_data(protocol, message)
    return b"".join(out)


def our_bytes(protocol: Any, message: object) -> bytes:
    out: list[bytes] = []
    protocol.set_writer(Capture(out), include_headers=False)
    protocol._send_data(message)
    return b"".join(out)


class Capture:
    """A pygls writer that keeps the bytes it is given."""

    def __init__(self, out: list[bytes]) -> None:
        self.out = out

    def write(self, data: bytes) -> None:
        self.out.append(data)

    def close(self) -> None:
        return None


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_lists_written_from_kept_encodings_are_what_json_writes(data: st.DataObject) -> None:
    """Whatever lists follow each other (one note more, one changed, fewer, another list,
    the same list changed in place after it was written), each is written as
    ``json.dumps`` writes it: a kept encoding never stands for a list that changed."""
    lists = ListJson(keep=2)
    items = data.draw(st.lists(NOTE_TEXT, max_size=40))
    others: list[list[str]] = []
    for _ in range(data.draw(st.integers(1, 8))):
        assert lists.encode(items) == json.dumps(items)
        step = data.draw(st.sampled_from(["more", "same", "change", "drop", "in place", "other"]))
        if step == "more":
            items = items + data.draw(st.lists(NOTE_TEXT, min_size=1, max_size=3))
        elif step == "change" and items:
            at = data.draw(st.integers(0, len(items) - 1))
            items = [*items[:at], data.draw(NOTE_TEXT), *items[at + 1 :]]
        elif step == "drop" and items:
            items = items[: data.draw(st.integers(0, len(items) - 1))]
        elif step == "in place" and items:  # the very list written before, changed since
            items[data.draw(st.integers(0, len(items) - 1))] = data.draw(NOTE_TEXT)
        elif step == "other":
            others.append(items)
            items = data.draw(st.sampled_from(others)) if len(others) > 1 else []


def test_a_list_with_something_else_than_strings_is_never_kept() -> None:
    lists = ListJson()
    mixed: list[Any] = ["a", 1, None, "b", *("x" * LONG_LIST)]
    assert lists.encode(mixed) == json.dumps(mixed)
    mixed[1] = 2
    assert lists.encode(mixed) == json.dumps(mixed)
    longer = [*mixed, "more"]
    assert lists.encode(longer) == json.dumps(longer)


def test_a_plain_result_is_written_byte_for_byte_as_pygls_writes_it() -> None:
    protocol = create_server().protocol
    notes = [f"note {i} naïve 😀" for i in range(100)]
    edit = lsp.TextEdit(range=lsp.Range(lsp.Position(0, 0), lsp.Position(0, 1)), new_text="x")
    results: list[dict[Any, Any]] = [
        {"action": "add", "project": notes, "global": ["g"] * 40, "changed": True},
        {"action": "add", "project": [*notes, "one more"], "global": ["g"] * 40},
        {"action": "forget", "project": notes[1:], "global": [], "error": "\ud800 no"},
        {},
        {"edits": [edit] * 40, "kind": None, "n": 1.5, "nested": {"project": notes}},
    ]
    for n, result in enumerate(results):
        for message in (
            lsp.ExecuteCommandResponse(id=n, result=result),
            JsonRPCResponseMessage(id=f"id-{n}", result=result, jsonrpc="2.0"),
        ):
            assert our_bytes(protocol, message) == pygls_bytes(protocol, message)


def test_what_the_fast_encoding_cannot_write_goes_pygls_way() -> None:
    """A key json would convert, or a value it cannot write: pygls' own path, as before."""
    protocol = create_server().protocol
    converted = lsp.ExecuteCommandResponse(id=1, result={1: ["a"] * 40, None: True})
    assert our_bytes(protocol, converted) == pygls_bytes(protocol, converted)
    unwritable = lsp.ExecuteCommandResponse(id=2, result={"x": [object()] * 40})
    with pytest.raises(AttributeError) as raised:  # what pygls' json.dumps raises here
        json.dumps(unwritable, default=protocol._serialize_message)
    errors: list[object] = []
    protocol._server._report_server_error = lambda error, source: errors.append(error)  # type: ignore[method-assign]
    assert our_bytes(protocol, unwritable) == b""  # nothing half written
    assert [type(e) for e in errors] == [raised.type]  # reported as pygls reports it


async def test_memory_add_answers_are_the_bytes_pygls_would_write(server: InProcess) -> None:
    """Each answer of a run of adds (kept encodings extended), a forget (a list written
    afresh) and a list is byte for byte pygls' own encoding of the same result."""
    server.workspace.write("project", [f"note {i} “naïve” 😀" for i in range(60)])
    server.workspace.write("global", [f"global {i}" for i in range(40)])
    await server.initialize()
    protocol = server.ls.protocol
    raw: list[bytes] = []
    client = server.client

    class Tee:
        def write(self, data: bytes) -> None:
            raw.append(data)
            client.write(data)

        def close(self) -> None:
            return None

    protocol.set_writer(Tee(), include_headers=False)
    commands = [
        ("memory.add", {"text": "first new note"}),
        ("memory.add", {"text": "second new note é"}),
        ("memory.add", {"text": "a global one", "scope": "global"}),
        ("memory.forget", {"text": "note 7 “naïve” 😀"}),
        ("memory.add", {"text": "third new note"}),
        ("memory.list", {}),
    ]
    for command, argument in commands:
        raw.clear()
        answer = await client.request(
            lsp.WORKSPACE_EXECUTE_COMMAND,
            lsp.ExecuteCommandParams(command=command, arguments=[argument]),
        )
        assert answer["result"].get("error") is None, answer
        body = next(b for b in raw if b'"result"' in b and b'"project"' in b)
        response = lsp.ExecuteCommandResponse(id=answer["id"], result=answer["result"])
        assert body == pygls_bytes(protocol, response)
        protocol.set_writer(Tee(), include_headers=False)
    assert answer["result"]["project"][-1] == "third new note"
    assert "note 7 “naïve” 😀" not in answer["result"]["project"]


ANY_TEXT = st.text(
    st.characters(exclude_categories=[]) | st.sampled_from(["\ud800", "\udfff", "😀", "é"]),
    max_size=12,
)
"""Text with lone surrogates too (which both readers turn into U+FFFD)."""
JSON_VALUES = st.none() | st.booleans() | st.integers() | st.floats() | ANY_TEXT
DOCUMENT_ITEMS = st.fixed_dictionaries(
    {
        "uri": ANY_TEXT | st.just("file:///p/.pi/memory.md"),
        "languageId": st.sampled_from(["markdown", "plaintext"]) | ANY_TEXT,
        "version": st.integers(-(2**32), 2**32) | JSON_VALUES,
        "text": ANY_TEXT | st.just("- a note\n- 😀 another\n"),
    }
)


def _changed(item: dict[str, object], drop: str | None, extra: str | None) -> dict[str, object]:
    changed = {k: v for k, v in item.items() if k != drop}
    if extra is not None:
        changed[extra] = 1
    return changed


def _read_as_cattrs_reads(fast: object, message: dict[str, object], kind: type) -> bool:
    """Assert the fast reader's ``fast`` is what cattrs reads from ``message`` (or that
    it left to cattrs a message cattrs refuses); whether cattrs could read it."""
    try:
        expected = PROTOCOL._converter.structure(without_lone_surrogates(message), kind)
    except Exception:
        assert fast is None  # cattrs says what is wrong
        return False
    if fast is not None:
        assert fast == expected
    return True


@given(
    DOCUMENT_ITEMS,
    st.none() | st.sampled_from(["uri", "languageId", "version", "text"]),
    st.none() | st.sampled_from(["uri", "extra"]),
    st.sampled_from(["item", "params", "message"]),
)
@example(
    {"uri": "file:///a\udce9", "languageId": "markdown", "version": 3, "text": "- a\ud800 b\n"},
    None,
    None,
    "item",
)
@example({"uri": "u", "languageId": "markdown", "version": 2**31, "text": ""}, None, None, "item")
@example({"uri": "u", "languageId": "markdown", "version": True, "text": ""}, None, None, "item")
def test_a_did_open_is_read_as_cattrs_reads_it(
    item: dict[str, object], drop: str | None, extra: str | None, where: str
) -> None:
    """The ``didOpen`` read without cattrs is the object cattrs reads, or is left to it."""
    document = _changed(item, drop, extra) if where == "item" else item
    params: dict[str, object] = {"textDocument": document}
    if where == "params":
        params = _changed(params, None, extra)
    message = {"jsonrpc": "2.0", "method": lsp.TEXT_DOCUMENT_DID_OPEN, "params": params}
    if where == "message":
        message = _changed(message, None, extra)
    fast = _did_open(message)
    if not _read_as_cattrs_reads(fast, message, lsp.DidOpenTextDocumentNotification):
        return
    if fast is not None:
        assert type(fast.params.text_document.language_id) is str
    ordinary = extra is None and (where != "item" or drop is None)
    if ordinary and type(item["version"]) is int and abs(item["version"]) < 2**31:
        assert fast is not None  # what editors send is never left to cattrs


POSITIONS = st.fixed_dictionaries(
    {"line": st.integers(-1, 2**32) | JSON_VALUES, "character": st.integers(-1, 2**32)}
)
PARTIAL_CHANGES = st.fixed_dictionaries(
    {"range": st.fixed_dictionaries({"start": POSITIONS, "end": POSITIONS}), "text": ANY_TEXT},
    optional={"rangeLength": st.integers(-1, 2**32) | JSON_VALUES},
)
CONTENT_CHANGES = PARTIAL_CHANGES | st.fixed_dictionaries({"text": ANY_TEXT | JSON_VALUES})
VERSIONED = st.fixed_dictionaries(
    {
        "uri": ANY_TEXT | st.just("file:///p/.pi/memory.md"),
        "version": st.integers(-(2**32), 2**32) | JSON_VALUES,
    }
)


@given(
    VERSIONED,
    st.lists(CONTENT_CHANGES, max_size=3),
    st.none() | st.sampled_from(["uri", "version", "text", "range", "start", "line"]),
    st.none() | st.sampled_from(["extra", "uri"]),
    st.sampled_from(["document", "change", "range", "position", "params", "message"]),
)
@example(
    {"uri": "file:///a\udce9", "version": 3},
    [
        {
            "range": {"start": {"line": 0, "character": 1}, "end": {"line": 0, "character": 1}},
            "text": "\ud800",
        }
    ],
    None,
    None,
    "document",
)
@example(
    {"uri": "u", "version": 7},
    [
        {
            "range": {"start": {"line": 2, "character": 0}, "end": {"line": 3, "character": 1}},
            "rangeLength": 9,
            "text": "é",
        },
        {"text": "the whole text"},
    ],
    None,
    None,
    "document",
)
@example({"uri": "u", "version": True}, [{"text": "x"}], None, None, "document")
@example({"uri": "u", "version": 2**31}, [{"text": "x"}], None, None, "document")
def test_a_did_change_is_read_as_cattrs_reads_it(
    document: dict[str, object],
    changes: list[dict[str, Any]],
    drop: str | None,
    extra: str | None,
    where: str,
) -> None:
    """The ``didChange`` read without cattrs is the object cattrs reads, or is left to it."""
    if where == "document":
        document = _changed(document, drop, extra)
    elif changes and where in ("change", "range", "position"):
        first = changes[0]
        if where == "change":
            first = _changed(first, drop, extra)
        elif "range" in first:
            bounds = dict(first["range"])
            if where == "range":
                bounds = _changed(bounds, drop, extra)
            else:
                bounds["start"] = _changed(bounds["start"], drop, extra)
            first = {**first, "range": bounds}
        changes = [first, *changes[1:]]
    params: dict[str, object] = {"textDocument": document, "contentChanges": changes}
    if where == "params":
        params = _changed(params, None, extra)
    message = {"jsonrpc": "2.0", "method": lsp.TEXT_DOCUMENT_DID_CHANGE, "params": params}
    if where == "message":
        message = _changed(message, None, extra)
    fast = _did_change(message)
    if not _read_as_cattrs_reads(fast, message, lsp.DidChangeTextDocumentNotification):
        return
    if fast is not None:
        assert type(fast.params.content_changes) is tuple
    ordinary = (drop is None and extra is None) or where in ("params", "message")
    ordinary = ordinary and extra is None
    typed = type(document.get("version")) is int and type(document.get("uri")) is str
    if ordinary and typed and all(_plain_change(c) for c in changes):
        assert fast is not None  # what editors send is never left to cattrs


def _plain_change(change: dict[str, Any]) -> bool:
    """Whether ``change`` is of the shape an editor sends, with values lsprotocol takes."""
    if type(change.get("text")) is not str:
        return False
    if "range" not in change:
        return change.keys() == {"text"}
    length = change.get("rangeLength", 0)
    points = (change["range"]["start"], change["range"]["end"])
    values = [p.get("line") for p in points] + [p.get("character") for p in points]
    return (
        type(length) is int
        and 0 <= length < 2**31
        and all(type(v) is int and 0 <= v < 2**31 for v in values)
    )


async def test_document_notifications_leave_no_future_behind(server: InProcess) -> None:
    """Every keystroke is published with its version, and none leaves pygls' bookkeeping
    of a future behind (it kept one a notification, for good: a day of typing's worth)."""
    server.workspace.write("project", ["run pytest before every push", "keep the notes short"])
    await server.initialize()
    path = server.workspace.project_store
    uri = uri_of(path)
    text = path.read_text(encoding="utf-8")
    futures = len(server.ls.protocol._request_futures)

    def notify(method: str, params: dict[str, Any]) -> None:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        protocol = server.ls.protocol
        protocol.handle_message(
            json.loads(json.dumps(message), object_hook=protocol.structure_message)
        )

    item = {"uri": uri, "languageId": "markdown", "version": 1, "text": text}
    notify(lsp.TEXT_DOCUMENT_DID_OPEN, {"textDocument": item})
    for version in range(2, 12):
        at = {"line": 0, "character": 2 + version}
        change = {"range": {"start": at, "end": at}, "text": "x"}
        notify(
            lsp.TEXT_DOCUMENT_DID_CHANGE,
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
        )
    versions = [
        p["version"]
        for p in server.client.notifications(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if p["uri"] == uri
    ]
    assert versions[-11:] == list(range(1, 12))
    notify(lsp.TEXT_DOCUMENT_DID_CLOSE, {"textDocument": {"uri": uri}})
    assert server.ls.document(uri) is None
    assert len(server.ls.protocol._request_futures) == futures


def test_nothing_but_answers_is_written_after_the_answer_to_shutdown() -> None:
    """A client may stop reading once ``shutdown`` is answered: a notification written
    then (a late publish of a large store) blocked the server with its ``exit`` unread
    (``tests/e2e/test_transports.py``)."""
    from memory_ls.server.protocol import send_encoded, send_json

    protocol = create_server().protocol
    out: list[bytes] = []
    protocol.set_writer(Capture(out), include_headers=False)
    publish = {"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {}}
    protocol.shutdown_id = 5  # as lsp_shutdown records it
    send_json(protocol, publish)  # shutdown is not answered yet: still written
    protocol._send_data(JsonRPCResponseMessage(id=4, result=None, jsonrpc="2.0"))
    assert len(out) == 2 and not protocol.shutdown_answered
    protocol._send_data(JsonRPCResponseMessage(id=5, result=None, jsonrpc="2.0"))
    assert protocol.shutdown_answered
    del out[:]
    send_json(protocol, publish)
    send_encoded(protocol, json.dumps(publish).encode())
    protocol.notify(lsp.WINDOW_LOG_MESSAGE, lsp.LogMessageParams(lsp.MessageType.Log, "x"))
    assert out == []
    # Answers still are (a request after shutdown gets its InvalidRequest), and a
    # request's own answer with a plain result.
    send_json(protocol, {"jsonrpc": "2.0", "id": 6, "error": {"code": -32600, "message": "x"}})
    protocol._send_data(JsonRPCResponseMessage(id=7, result={"a": 1}, jsonrpc="2.0"))
    assert [json.loads(b)["id"] for b in out] == [6, 7]
