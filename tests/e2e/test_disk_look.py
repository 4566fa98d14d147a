"""A keystroke may take the last keystroke's look at the disk (trust, the configuration,
the project folder's refusal: ``diagnostics.DISK_LOOK_REUSE``), through a real
``memory-ls serve``. A change on disk that came meanwhile must still show once typing
rests, with no other event to bring it (no watcher, no edit)."""

from __future__ import annotations

import asyncio
import shutil

from lsprotocol import types as lsp

from memory_ls.server.diagnostics import DISK_LOOK_REUSE

from .conftest import TIMEOUT


def typed(s, uri: str, line: int, text: str) -> None:
    """One character typed into note ``line`` (a real keystroke: incremental)."""
    at = lsp.Position(line=line, character=2)
    s.edit(uri, [lsp.TextEdit(range=lsp.Range(start=at, end=at), new_text=text)])


async def next_publish(s, waiting) -> lsp.PublishDiagnosticsParams:
    params = await asyncio.wait_for(waiting, TIMEOUT)
    assert isinstance(params, lsp.PublishDiagnosticsParams)
    return params


async def test_a_change_on_disk_between_keystrokes_shows_once_typing_rests(
    start, workspace, tmp_path
):
    workspace.write("project", ["first note", "second note"])
    s = await start("visual-studio-code", init_options={"trusted": True})
    assert not s.pull
    method = lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
    waiting = s.client.protocol.wait_for_notification_async(method)
    uri = s.open(workspace.project_store)
    await next_publish(s, waiting)
    waiting = s.client.protocol.wait_for_notification_async(method)
    typed(s, uri, 2, "a")
    params = await next_publish(s, waiting)
    assert params.version == 2
    assert "outside-project" not in {d.code for d in params.diagnostics}
    # Now .pi leads out of the project, and a keystroke comes at once: within the
    # reuse time, its analysis takes the last look, which saw no refusal.
    elsewhere = tmp_path / "elsewhere"
    shutil.move(workspace.root / ".pi", elsewhere)
    (workspace.root / ".pi").symlink_to(elsewhere)
    waiting = s.client.protocol.wait_for_notification_async(method)
    typed(s, uri, 3, "b")
    params = await next_publish(s, waiting)
    assert params.version == 3
    if "outside-project" in {d.code for d in params.diagnostics}:
        return  # this keystroke came after the reuse time (a slow machine): looked afresh
    # Typing rests. Nothing else happens; the refusal must show on its own, soon.
    waiting = s.client.protocol.wait_for_notification_async(method)
    params = await asyncio.wait_for(waiting, 4 * DISK_LOOK_REUSE + 2)
    assert params.version == 3  # the same version, published again
    assert "outside-project" in {d.code for d in params.diagnostics}


async def test_a_pull_that_cannot_be_asked_again_looks_at_the_disk_afresh(
    start, workspace, tmp_path
):
    # Neovim pulls on an edit but declares no workspace/diagnostic/refresh: the rested
    # look (look_again_soon) has no way to bring it a change. A reused look in the pull
    # answering the last keystroke would stay on screen until the next edit.
    workspace.write("project", ["first note", "second note"])
    s = await start("neovim", init_options={"trusted": True})
    assert s.pull
    uri = s.open(workspace.project_store)
    typed(s, uri, 2, "a")
    assert "outside-project" not in {str(d.code) for d in await s.diagnostics(uri)}
    elsewhere = tmp_path / "elsewhere"
    shutil.move(workspace.root / ".pi", elsewhere)
    (workspace.root / ".pi").symlink_to(elsewhere)
    typed(s, uri, 3, "b")
    assert "outside-project" in {str(d.code) for d in await s.diagnostics(uri)}
