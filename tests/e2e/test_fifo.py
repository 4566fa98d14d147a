"""Opening a store that is a FIFO never hangs the server (SPEC §8; issue 9 item 7)."""

from __future__ import annotations

import contextlib
import os

import pytest

from .conftest import uri_of

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")


async def test_a_fifo_store_opened_in_the_editor_does_not_block_the_server(start, workspace):
    workspace.project_store.parent.mkdir(parents=True)
    os.mkfifo(workspace.project_store)
    s = await start()
    try:
        uri = s.open(workspace.project_store, "- a\n- a\n")
        await s.codes(uri, "duplicate")  # the buffer is still checked
        listed = await s.command("memory.list", {"uri": uri_of(workspace.root)})
        assert listed["error"] == f"Memory file is not a regular file: {workspace.project_store}"
    finally:
        # Release a reader blocked on the FIFO, if any, so the session can end.
        with contextlib.suppress(OSError):
            os.close(os.open(workspace.project_store, os.O_WRONLY | os.O_NONBLOCK))
