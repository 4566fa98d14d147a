"""``memory-ls doctor`` never quotes an untrusted project's notes (SPEC §4, §9; issue 9 item 2)."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import Workspace
from tests.untrusted_notes import (
    WITHHELD,
    assert_nothing_leaks,
    global_store_text,
    project_store_text,
)


@pytest.mark.parametrize("how", ["--untrusted", "project holds .pi/settings.json"])
def test_doctor_withholds_untrusted_notes(workspace: Workspace, how: str) -> None:
    workspace.write("project", project_store_text())
    workspace.write("global", global_store_text())
    flags = ["--untrusted"] if how == "--untrusted" else []
    if not flags:
        (workspace.root / ".pi" / "settings.json").write_text("{}")

    def doctor(*extra: str) -> subprocess.CompletedProcess[str]:
        return workspace.cli("doctor", *flags, *extra)

    text = doctor()
    assert text.returncode == 0, text.stderr
    assert_nothing_leaks(text.stdout + text.stderr)
    assert WITHHELD in text.stdout
    assert "line 4: Duplicate of the note on line 3: " + WITHHELD in text.stdout
    as_json = doctor("--json")
    assert as_json.returncode == 0, as_json.stderr
    assert_nothing_leaks(as_json.stdout + as_json.stderr)
    report = json.loads(as_json.stdout)
    assert report["project"]["notes"] == 8 and report["project"]["blankBullets"] == 1
    assert report["project"]["tooLong"] == [WITHHELD]
