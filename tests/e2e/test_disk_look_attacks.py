"""Attacks on the editor's reused look at the disk (``diagnostics.DISK_LOOK_REUSE``)
through a real ``memory-ls serve``."""

from __future__ import annotations

import asyncio

from lsprotocol import types as lsp

from .conftest import TIMEOUT
from .test_disk_look import typed


async def test_notes_arriving_with_a_trust_requiring_resource_never_show_on_a_stale_look(
    start, workspace
):
    # A `git pull` brings, at once, an `.agents/skills` folder (the project is now
    # untrusted, SPEC §4 rule 3) and a project note. A keystroke just after must not
    # take the last look's "trusted" while reading the new store: the global document
    # would show a cross-scope finding built on an untrusted project's note.
    workspace.write("project", ["first project note"])
    workspace.write("global", ["planted secret rule", "another global note"])
    s = await start("visual-studio-code")
    method = lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
    waiting = s.client.protocol.wait_for_notification_async(method)
    uri = s.open(workspace.global_store)
    await asyncio.wait_for(waiting, TIMEOUT)
    waiting = s.client.protocol.wait_for_notification_async(method)
    typed(s, uri, 3, "a")
    await asyncio.wait_for(waiting, TIMEOUT)
    (workspace.root / ".agents" / "skills").mkdir(parents=True)
    workspace.write("project", ["first project note", "planted secret rule"])
    for _ in range(5):  # the reuse time (0.25 s) is not over before these
        waiting = s.client.protocol.wait_for_notification_async(method)
        typed(s, uri, 3, "b")
        params = await asyncio.wait_for(waiting, TIMEOUT)
        assert "cross-scope-duplicate" not in {d.code for d in params.diagnostics}
