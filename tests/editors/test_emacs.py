"""memory-ls in real Emacs (Debian emacs-nox + elpa-eglot), batch mode: eglot attaches
with the documented configuration (editors/emacs/memory-ls-eglot.el) and flymake shows
the duplicate diagnostic."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Workspace

from .conftest import EDITORS, require, require_server, run_headless

DRIVER = Path(__file__).with_name("emacs_driver.el")
SNIPPET = EDITORS / "emacs" / "memory-ls-eglot.el"


def eglot_installed(emacs: str) -> bool:
    probe = subprocess.run(
        [emacs, "--batch", "--eval", '(progn (require \'eglot) (princ "ok"))'],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return probe.returncode == 0 and "ok" in probe.stdout


@pytest.mark.timeout(240)
def test_emacs_eglot_flymake(
    workspace: Workspace, editor_env: dict[str, str], tmp_path: Path
) -> None:
    emacs = shutil.which("emacs")
    require(
        emacs is not None,
        "Emacs is not installed (apt-get install emacs-nox elpa-eglot); run .ci/install-editors.sh",
    )
    assert emacs is not None
    require(eglot_installed(emacs), "eglot is not available to Emacs (apt-get install elpa-eglot)")
    require_server()
    result = tmp_path / "emacs.json"
    env = dict(editor_env, MEMORY_FILE=str(workspace.project_store), RESULT_FILE=str(result))
    command = [emacs, "--batch", "-l", str(SNIPPET), "-l", str(DRIVER)]
    proc = run_headless(command, workspace.root, env)
    assert result.exists(), (
        f"exit {proc.returncode}\nstdout: {proc.stdout[-3000:]}\nstderr: {proc.stderr[-3000:]}"
    )
    report = json.loads(result.read_text(encoding="utf-8"))
    assert "error" not in report, f"{report['error']}\nstderr: {proc.stderr[-3000:]}"
    assert proc.returncode == 0
    assert report["major_mode"] == "pi-memory-mode"
    assert report["managed"] is True
    duplicates = [d for d in report["diagnostics"] if "[duplicate]" in d["text"]]
    assert duplicates, report["diagnostics"]
    assert duplicates[0]["text"].startswith("memory [duplicate]")
    assert duplicates[0]["type"] == "eglot-warning"
    assert duplicates[0]["line"] == 6  # 1-based: the later "🎉 Ship on Fridays is fine."
    assert duplicates[0]["column"] == 2
    assert any("[too-long]" in d["text"] for d in report["diagnostics"])
    assert "use pnpm, not npm" in report["list_project"]
    assert "prefer ripgrep over grep" in report["list_global"]


def test_emacs_docs_match_snippet() -> None:
    readme = (EDITORS / "emacs" / "README.md").read_text(encoding="utf-8")
    assert SNIPPET.read_text(encoding="utf-8").strip() in readme
