"""Opening a store that is a FIFO never hangs the server (SPEC §8; issue 9 item 7)."""

from __future__ import annotations

import contextlib
import os

import pytest

from .conftest import uri_of

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")


async def test_a_fifo_store_opened_in_the_editor_does_not_block_the_server(start, ws):
    ws.project_store.parent.mkdir(parents=True)
    os.mkfifo(ws.project_store)
    s = await start()
    try:
        uri = s.open(ws.project_store, "- a\n- a\n")
        await s.codes(uri, "duplicate")  # the buffer is still checked
        listed = await s.command("memory.list", {"uri": uri_of(ws.root)})
        assert listed["error"] == f"Memory file is not a regular file: {ws.project_store}"
    finally:
        # Release a reader blocked on the FIFO, if any, so the session can end.
        with contextlib.suppress(OSError):
            os.close(os.open(ws.project_store, os.O_WRONLY | os.O_NONBLOCK))
