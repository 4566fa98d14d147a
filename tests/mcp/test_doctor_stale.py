"""``memory://doctor`` lists SPEC §13's findings per store, as ``doctor`` does, and withholds
an untrusted project's text."""

from __future__ import annotations

from typing import Any

from tests.conftest import Workspace
from tests.stale_project import project

WITHHELD = "(text withheld: the project is untrusted)"


async def test_doctor_resource_lists_stale_and_conflicting_notes(
    workspace: Workspace, memory: Any
) -> None:
    project(workspace)
    async with memory("--trusted") as m:
        doctor = (await m.read("memory://doctor")).text
    assert "  line 3: stale-path `src/old_name.py` does not exist in the project." in doctor
    assert "  line 4: stale-script " in doctor
    assert "  line 5: instruction-duplicate " in doctor and "AGENTS.md line 3" in doctor
    assert "  line 8: conflict Conflicts with a global note about tabs" in doctor
    assert "- project: 3 conflicting note(s)" in doctor


async def test_doctor_resource_withholds_them_for_an_untrusted_project(
    workspace: Workspace, memory: Any
) -> None:
    project(workspace)
    async with memory("--untrusted") as m:
        doctor = (await m.read("memory://doctor")).text
    assert f"  line 3: stale-path {WITHHELD}" in doctor
    assert f"  line 6: conflict {WITHHELD}" in doctor
    for secret in ("old_name", "gone", "small and focused", "pnpm for installs"):
        assert secret not in doctor, secret
