"""How the server writes a response (``server/protocol.py``), in process.

A result that is plain JSON (a ``MemoryResult``: every note of both stores) is
written as it is, without cattrs walking its thousands of values; anything else,
and an lsprotocol object inside such a result, is written as pygls writes it.
"""

from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st
from lsprotocol import types as lsp
from lsprotocol.converters import get_converter
from pygls.protocol import JsonRPCResponseMessage

from memory_ls.core.text import without_lone_surrogates
from memory_ls.server.protocol import _did_open
from memory_ls.server.server import create_server

from .conftest import InProcess

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
    try:
        expected = PROTOCOL._converter.structure(
            without_lone_surrogates(message), lsp.DidOpenTextDocumentNotification
        )
    except Exception:
        assert fast is None  # cattrs says what is wrong
        return
    if fast is not None:
        assert fast == expected
        assert type(fast.params.text_document.language_id) is str
    ordinary = extra is None and (where != "item" or drop is None)
    if ordinary and type(item["version"]) is int and abs(item["version"]) < 2**31:
        assert fast is not None  # what editors send is never left to cattrs
