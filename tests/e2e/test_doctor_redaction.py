"""``memory.doctor`` never quotes an untrusted project's notes (SPEC §4, §9; issue 9 item 2)."""

from __future__ import annotations

import json

import pytest

from tests.untrusted_notes import (
    WITHHELD,
    assert_nothing_leaks,
    global_store_text,
    project_store_text,
)

from .conftest import uri_of


@pytest.mark.parametrize("how", ["client says untrusted", "project holds .pi/settings.json"])
async def test_doctor_command_withholds_untrusted_notes(start, workspace, how):
    workspace.write("project", project_store_text())
    workspace.write("global", global_store_text())
    if how == "client says untrusted":
        s = await start(init_options={"trusted": False})
    else:
        (workspace.root / ".pi" / "settings.json").write_text("{}")
        s = await start()
    report = await s.command("memory.doctor", {"uri": uri_of(workspace.root)})
    assert report["trust"]["trusted"] is False
    assert_nothing_leaks(json.dumps(report))
    assert_nothing_leaks(json.dumps(report, ensure_ascii=False))
    assert WITHHELD in report["text"]
    assert report["project"]["notes"] == 8
    assert [(p["firstLine"], p["secondLine"]) for p in report["project"]["duplicates"]] == [
        (3, 4),
        (3, 5),
    ]
