"""The TextMate injection grammar (syntaxes/memory.tmLanguage.json), tested with
vscode-tmgrammar-test against VS Code's Markdown grammar (npm test in syntaxes/)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from .conftest import REPO, require

SYNTAXES = REPO / "syntaxes"


@pytest.mark.timeout(180)
def test_grammar_with_vscode_tmgrammar_test() -> None:
    npm = shutil.which("npm")
    require(npm is not None, "npm is not installed")
    assert npm is not None
    tool = SYNTAXES / "node_modules" / ".bin" / "vscode-tmgrammar-test"
    require(
        tool.exists(),
        "vscode-tmgrammar-test is not installed in syntaxes/ (run .ci/install-editors.sh)",
    )
    proc = subprocess.run(
        [npm, "test", "--silent"],
        cwd=SYNTAXES,
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    output = "\n".join(
        line for line in (proc.stdout + proc.stderr).splitlines() if "grammar not found" not in line
    )
    assert proc.returncode == 0, output
    assert "memory.test.md run successfuly" in output, output
    assert "ERROR" not in output, output


def test_grammar_is_shipped_in_the_extension() -> None:
    manifest = json.loads((REPO / "vscode-client" / "package.json").read_text(encoding="utf-8"))
    (grammar,) = manifest["contributes"]["grammars"]
    assert grammar["injectTo"] == ["text.html.markdown"]
    source = json.loads((SYNTAXES / "memory.tmLanguage.json").read_text(encoding="utf-8"))
    assert grammar["scopeName"] == source["scopeName"]
