"""``memory://doctor`` never quotes an untrusted project's notes (SPEC §4, §9; issue 9 item 2)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Workspace
from tests.untrusted_notes import (
    WITHHELD,
    assert_nothing_leaks,
    global_store_text,
    project_store_text,
)


@pytest.mark.parametrize("how", ["--untrusted", "project holds .pi/settings.json"])
async def test_doctor_resource_withholds_untrusted_notes(
    workspace: Workspace, memory: Any, how: str
) -> None:
    workspace.project_store.parent.mkdir(parents=True)
    workspace.project_store.write_text(project_store_text(), encoding="utf-8")
    workspace.global_store.write_text(global_store_text(), encoding="utf-8")
    flags: list[str] = []
    if how == "--untrusted":
        flags.append("--untrusted")
    else:
        (workspace.root / ".pi" / "settings.json").write_text("{}")
    async with memory(*flags) as m:
        doctor = (await m.read("memory://doctor")).text
    assert "trust: untrusted" in doctor
    assert_nothing_leaks(doctor)
    assert WITHHELD in doctor
    assert "line 5: Duplicate of the note on line 3: " + WITHHELD in doctor
