"""``memory://doctor`` on a store that cannot be reached because of its path (an agent dir
that is a symlink loop, a file, or a symlink to nothing; SPEC §9, §11): it says the store
cannot be read and why, as ``doctor`` does, not "missing (reads as empty)"."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cli.test_unreachable_store import BROKEN, broken_store
from tests.conftest import Workspace
from tests.mcp.conftest import text_of


@pytest.mark.parametrize("how", BROKEN)
async def test_the_doctor_resource_says_the_global_store_cannot_be_read(
    memory: Any, workspace: Workspace, how: str
) -> None:
    store, message = broken_store(workspace, "global", how)
    why = message.removeprefix(f"Cannot read {store}: ")
    async with memory("--trusted") as m:
        doctor = (await m.read("memory://doctor")).text
        listed = await m.call({"action": "list", "scope": "global"})
    lines = doctor.splitlines()
    assert lines[lines.index(f"global: {store}") + 1] == f"  cannot be read: {why}"
    assert "missing (reads as empty)" not in doctor
    assert listed.is_error and text_of(listed) == f"Error: {message}"


@pytest.mark.parametrize("how", ["a symlink loop", "a long chain", "a symlink to nothing"])
async def test_a_forget_or_update_of_it_says_it_cannot_be_read(
    memory: Any, workspace: Workspace, how: str
) -> None:
    """Not "No global memory note matches": it could not look."""
    store, message = broken_store(workspace, "global", how)
    async with memory("--trusted") as m:
        forgot = await m.call({"action": "forget", "scope": "global", "text": "a global note"})
        updated = await m.call(
            {"action": "update", "scope": "global", "text": "a global note", "to": "other"}
        )
    assert forgot.is_error and text_of(forgot) == f"Error: {message}"
    assert updated.is_error and text_of(updated) == f"Error: {message}"
    assert not store.exists() and not store.is_symlink()
