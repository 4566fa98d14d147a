"""The editor on a project store whose global store cannot be reached (an agent dir that is
a symlink loop, a file, or a symlink to nothing): the lens says global memory cannot be
read, so the missing global notes are not a mystery, and its doctor says why."""

from __future__ import annotations

import pytest

from tests.cli.test_unreachable_store import BROKEN, broken_store

from .test_store_paths import lens_title


@pytest.mark.parametrize("how", BROKEN)
async def test_the_lens_says_global_memory_cannot_be_read(start, workspace, how):
    store, message = broken_store(workspace, "global", how)
    why = message.removeprefix(f"Cannot read {store}: ")
    s = await start(init_options={"trusted": True})
    uri = s.open(workspace.project_store)
    await s.diagnostics(uri)
    title = await lens_title(s, uri)
    assert title.startswith("1 notes · ") and title.endswith(" · global memory cannot be read")
    doctor = await s.command("memory.doctor", {"uri": uri})
    assert f"global: {store}\n  cannot be read: {why}\n" in doctor["text"]
    assert doctor["global"]["error"] == message


async def test_the_lens_says_nothing_of_a_global_store_simply_not_there(start, workspace):
    workspace.write("project", ["a project note"])
    s = await start(init_options={"trusted": True})
    uri = s.open(workspace.project_store)
    await s.diagnostics(uri)
    assert "cannot be read" not in await lens_title(s, uri)


@pytest.mark.parametrize("how", ["a symlink loop", "a symlink to nothing"])
async def test_a_forget_of_it_says_it_cannot_be_read(start, workspace, how):
    """``memory.forget`` of the unreachable global store: not "no note matches"."""
    store, message = broken_store(workspace, "global", how)
    s = await start(init_options={"trusted": True})
    uri = s.open(workspace.project_store)
    await s.diagnostics(uri)
    forgot = await s.command(
        "memory.forget", {"text": "a global note", "scope": "global", "uri": uri}
    )
    assert forgot["error"] == message and forgot["changed"] is False
    assert not store.exists() and not store.is_symlink()
