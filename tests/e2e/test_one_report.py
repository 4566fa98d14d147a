"""The editor reports a store's problems where ``check`` does (SPEC §9; issue 9 item 11)."""

from __future__ import annotations

import pytest

from tests.one_report_file import BAD_BYTE, CONTENT, DUPLICATE, check_rows

from .conftest import PRESETS


@pytest.mark.parametrize("preset", PRESETS)
async def test_editor_and_check_give_the_same_positions(start, workspace, preset):
    workspace.write("project", CONTENT)
    checked = workspace.cli("check", str(workspace.project_store))
    rows = check_rows(checked.stdout)
    s = await start(preset)
    # What an editor shows: the BOM set aside, the bad byte as U+FFFD.
    text = CONTENT.decode("utf-8", "replace").removeprefix("\ufeff")
    uri = s.open(workspace.project_store, text)
    ds = {str(d.code): d for d in await s.codes(uri, "invalid-utf8", "duplicate")}
    bad = ds["invalid-utf8"].range.start
    # ASCII before the bad byte: UTF-8, UTF-16 and code point columns agree.
    assert (bad.line + 1, bad.character + 1) == rows["invalid-utf8"][:2] == BAD_BYTE
    dup = ds["duplicate"]
    assert (dup.range.start.line + 1, dup.message) == rows["duplicate"][::2] == DUPLICATE
