"""Review probes for ``memory-ls mcp`` (SPEC §11): edge calls a real agent makes."""

from __future__ import annotations

from typing import Any

from mcp.types import CallToolResult

from memory_ls.core.actions import ACTION_MESSAGE
from tests.mcp.conftest import Stores, text_of, within


def refused(result: CallToolResult, message: str) -> dict[str, Any]:
    assert result.is_error is True
    assert text_of(result) == f"Error: {message}"
    content = result.structured_content
    assert content is not None and content["error"] == message and content["changed"] is False
    return content


async def test_call_without_arguments_is_an_action_error(memory: Any, stores: Stores) -> None:
    async with memory() as m:
        await m.call({"action": "add", "text": "keep me"})
        result = await within(m.session.call_tool("memory", None))
        content = refused(result, ACTION_MESSAGE)
        assert content["project"] == ["keep me"] and content["global"] == []


async def test_null_fields_and_update_no_op(memory: Any, stores: Stores) -> None:
    async with memory() as m:
        await m.call({"action": "add", "text": "a note"})
        # A JSON null for an optional field is the same as leaving it out.
        added = await m.call({"action": "add", "text": "other note", "scope": None})
        assert text_of(added) == "Added to project memory: other note\nNow 2 project, 0 global."
        same = await m.call({"action": "update", "text": "a note", "to": "a note"})
        assert not same.is_error
        assert text_of(same) == "Updated project memory: a note\nNow 2 project, 0 global."
        gone = await m.call({"action": "forget", "text": "a note"})
        assert text_of(gone) == "Removed from project memory: a note\nNow 1 project, 0 global."
        listed = await m.call({"action": "list"})
        assert (
            text_of(listed)
            == "Memory (1 project, 0 global).\nproject (1):\n- other note\nglobal: none"
        )
