"""The editor reports a store's problems where ``check`` does (SPEC §9; issue 9 item 11)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.one_report_file import BAD_BYTE, CONTENT, DUPLICATE, check_rows

from .conftest import PRESETS


@pytest.mark.parametrize("preset", PRESETS)
async def test_editor_and_check_give_the_same_positions(start, ws, preset):
    ws.project_store.parent.mkdir(parents=True)
    ws.project_store.write_bytes(CONTENT)
    checked = subprocess.run(
        [sys.executable, "-m", "memory_ls", "check", str(ws.project_store)],
        cwd=ws.root,
        env={**os.environ, "PI_CODING_AGENT_DIR": str(ws.agent)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    rows = check_rows(checked.stdout)
    s = await start(preset)
    # What an editor shows: the BOM set aside, the bad byte as U+FFFD.
    text = CONTENT.decode("utf-8", "replace").removeprefix("\ufeff")
    uri = s.open(ws.project_store, text)
    ds = {str(d.code): d for d in await s.codes(uri, "invalid-utf8", "duplicate")}
    bad = ds["invalid-utf8"].range.start
    # ASCII before the bad byte: UTF-8, UTF-16 and code point columns agree.
    assert (bad.line + 1, bad.character + 1) == rows["invalid-utf8"][:2] == BAD_BYTE
    dup = ds["duplicate"]
    assert (dup.range.start.line + 1, dup.message) == rows["duplicate"][::2] == DUPLICATE
