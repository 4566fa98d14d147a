"""The ``memory`` tool against a locked or read-only store (SPEC §3, §11)."""

from __future__ import annotations

from typing import Any

import pytest

from memory_ls.store.files import locked_message, read_only_message
from tests.conftest import Workspace, store_text
from tests.lock_holder import held_lock


async def test_the_tool_waits_for_a_held_lock_then_refuses(
    memory: Any, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = workspace.write("project", ["a"])
    monkeypatch.setenv("MEMORY_LS_LOCK_TIMEOUT", "0.5")
    async with memory() as m:
        with held_lock(store, workspace.env()):
            result = await m.call({"action": "add", "text": "b"})
        after = await m.call({"action": "add", "text": "b"})
    assert result.is_error
    assert result.structured_content is not None
    assert result.structured_content["error"] == locked_message(store, 0.5)
    assert result.structured_content["project"] == ["a"]
    assert not after.is_error  # the lock released: the same call goes through
    assert store.read_text() == store_text("a", "b")


async def test_a_read_only_store_is_refused(memory: Any, workspace: Workspace) -> None:
    store = workspace.write("global", ["g"])
    store.chmod(0o444)
    async with memory() as m:
        result = await m.call({"action": "add", "text": "h", "scope": "global"})
    assert result.is_error
    assert result.structured_content is not None
    assert result.structured_content["error"] == read_only_message(store)
    assert store.read_text() == store_text("g")
