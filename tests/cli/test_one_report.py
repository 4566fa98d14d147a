"""``check`` and the doctor report the same problems the same way (SPEC §9; issue 9 item 11)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.one_report_file import BAD_BYTE, CONTENT, DUPLICATE, check_rows


def _run(project: Path, agent: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memory_ls", *args],
        cwd=project,
        env={**os.environ, "PI_CODING_AGENT_DIR": str(agent)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_check_and_doctor_agree_on_the_bad_byte_and_the_duplicate(tmp_path: Path) -> None:
    project, agent = tmp_path / "project", tmp_path / "agent"
    (project / ".git").mkdir(parents=True)
    (project / ".pi").mkdir()
    agent.mkdir()
    store = project / ".pi" / "memory.md"
    store.write_bytes(CONTENT)
    for args in (["check"], ["check", str(store)]):
        rows = check_rows(_run(project, agent, *args).stdout)
        assert rows["invalid-utf8"][:2] == BAD_BYTE, args
        line, _, message = rows["duplicate"]
        assert (line, message) == DUPLICATE, args
    doctor = _run(project, agent, "doctor")
    line, message = DUPLICATE
    assert f"line {line}: {message}" in doctor.stdout
    report = json.loads(_run(project, agent, "doctor", "--json").stdout)
    pair = report["project"]["duplicates"][0]
    assert (pair["firstLine"], pair["secondLine"], pair["first"]) == (3, 5, "use pnpm, not npm")
