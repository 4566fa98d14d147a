"""How the server writes a response (``server/protocol.py``), in process.

A result that is plain JSON (a ``MemoryResult``: every note of both stores) is
written as it is, without cattrs walking its thousands of values; anything else,
and an lsprotocol object inside such a result, is written as pygls writes it.
"""

from __future__ import annotations

import json

from lsprotocol import types as lsp
from lsprotocol.converters import get_converter
from pygls.protocol import JsonRPCResponseMessage

from memory_ls.server.server import create_server

from .conftest import InProcess

CONVERTER = get_converter()


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
