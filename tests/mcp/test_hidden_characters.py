"""``memory://doctor`` quotes notes with their hidden characters escaped: a note holding
U+202E must not reorder the report an agent (and the person watching it) reads."""

from __future__ import annotations

from typing import Any

from tests import hidden_notes
from tests.conftest import Workspace
from tests.hidden_notes import SHOWN


async def test_the_doctor_resource_quotes_notes_escaped(workspace: Workspace, memory: Any) -> None:
    hidden_notes.write(workspace)
    async with memory("--trusted") as m:
        doctor = (await m.read("memory://doctor")).text
    assert "\u202e" not in doctor and "\u202c" not in doctor, doctor
    assert f"    - {SHOWN}" in doctor
    assert f"  line 4: Duplicate of the note on line 3: {SHOWN}" in doctor
    assert f"in both scopes: {SHOWN}" in doctor
