"""``memory://doctor`` quotes notes with their hidden characters escaped: a note holding
U+202E must not reorder the report an agent (and the person watching it) reads."""

from __future__ import annotations

from typing import Any

from tests import hidden_notes
from tests.conftest import Workspace
from tests.hidden_notes import EVIL, SHOWN
from tests.mcp.conftest import text_of


async def test_the_doctor_resource_quotes_notes_escaped(workspace: Workspace, memory: Any) -> None:
    hidden_notes.write(workspace)
    async with memory("--trusted") as m:
        doctor = (await m.read("memory://doctor")).text
    assert "\u202e" not in doctor and "\u202c" not in doctor, doctor
    assert f"    - {SHOWN}" in doctor
    assert f"  line 4: Duplicate of the note on line 3: {SHOWN}" in doctor
    assert f"in both scopes: {SHOWN}" in doctor


async def test_tool_texts_quote_notes_escaped_and_results_keep_them(
    workspace: Workspace, memory: Any
) -> None:
    async with memory("--trusted") as m:
        added = await m.call({"action": "add", "text": EVIL})
        assert text_of(added) == f"Added to project memory: {SHOWN}\nNow 1 project, 0 global."
        again = await m.call({"action": "add", "text": EVIL})
        assert text_of(again) == f"Already in project memory: {SHOWN}"
        listed = await m.call({"action": "list"})
        assert text_of(listed).splitlines()[1:] == ["project (1):", f"- {SHOWN}", "global: none"]
        assert listed.structured_content is not None
        assert listed.structured_content["project"] == [EVIL]  # the data: the note as it is
        updated = await m.call({"action": "update", "text": EVIL, "to": f"{EVIL}!"})
        assert text_of(updated).startswith(f"Updated project memory: {SHOWN}!\n")
        removed = await m.call({"action": "forget", "text": f"{EVIL}!"})
        assert text_of(removed).startswith(f"Removed from project memory: {SHOWN}!\n")
        await m.call({"action": "add", "text": EVIL})
        assert f"- {EVIL}" in (await m.read("memory://recall")).text  # recall: unchanged
    assert f"- {EVIL}\n" in workspace.text("project")
