"""``memory-ls doctor`` never quotes an untrusted project's notes (SPEC §4, §9; issue 9 item 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.untrusted_notes import (
    WITHHELD,
    assert_nothing_leaks,
    global_store_text,
    project_store_text,
)


@pytest.mark.parametrize("how", ["--untrusted", "project holds .pi/settings.json"])
def test_doctor_withholds_untrusted_notes(tmp_path: Path, how: str) -> None:
    project, agent = tmp_path / "project", tmp_path / "agent"
    (project / ".git").mkdir(parents=True)
    (project / ".pi").mkdir()
    agent.mkdir()
    (project / ".pi" / "memory.md").write_text(project_store_text(), encoding="utf-8")
    (agent / "memory.md").write_text(global_store_text(), encoding="utf-8")
    flags = ["--untrusted"] if how == "--untrusted" else []
    if not flags:
        (project / ".pi" / "settings.json").write_text("{}")
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent)}

    def doctor(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "memory_ls", "doctor", *flags, *extra],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

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
