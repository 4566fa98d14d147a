"""``check``'s reports: linting a file and rendering the reports (``store/lint.py``, SPEC §8)."""

from __future__ import annotations

import json
from pathlib import Path

from memory_ls.store.lint import lint_path, render_reports


def test_sarif_uri_is_a_file_uri_for_an_absolute_path(tmp_path: Path) -> None:
    lone = tmp_path / "a b.md"
    lone.write_text("- x\n- x\n")
    out, failing = render_reports([lint_path(lone, str(tmp_path / "agent"), True)], "sarif")
    uri = json.loads(out)["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert uri["artifactLocation"]["uri"] == lone.as_uri()
    assert failing
