"""`make demo` shows what the README says it shows (issue 9 item 13)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import isolated_env, run_cli

ROOT = Path(__file__).resolve().parents[2]

CLAIMS = {
    "an exact duplicate": "duplicate",
    "a near-duplicate": "duplicate",
    "a paraphrase": "similar",
    "an over-long note": "too-long",
    "a zero-width character": "hidden-unicode",
    "a blank bullet": "blank-note",
    "a note that is also in the global store": "cross-scope-duplicate",
    "more notes than the 8 KiB recall budget holds": "not-injected",
    "a file that was renamed": "stale-path",
    "a script no package.json defines": "stale-script",
    "a note AGENTS.md already says": "instruction-duplicate",
    "two notes that contradict each other": "conflict",
}
"""What the README's `make demo` paragraph promises, and the code that shows each."""


def _demo_paragraph() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("`make demo` builds")
    return " ".join(readme[start : readme.index("\n\n", start)].split())


def _build_demo(root: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """``examples/make_demo.py ROOT``, and the environment of a CLI run on the demo."""
    built = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "make_demo.py"), str(root)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    home = root / "home"
    home.mkdir(exist_ok=True)
    return built, isolated_env(root / "agent", home)


def test_the_demo_shows_every_code_the_readme_claims(tmp_path: Path) -> None:
    paragraph = _demo_paragraph()
    for claim in CLAIMS:
        assert claim in paragraph, f"the README no longer promises {claim!r}: update CLAIMS"
    built, env = _build_demo(tmp_path)
    assert built.returncode == 0, built.stderr
    project = tmp_path / "project"
    checked = run_cli("check", "--format", "json", cwd=project, env=env)
    assert checked.returncode == 1, checked.stderr  # the demo has warnings
    rows = json.loads(checked.stdout)
    codes = {row["code"] for row in rows}
    for claim, code in CLAIMS.items():
        assert code in codes, f"the demo has no {code} for {claim!r}"
    store = (project / ".pi" / "memory.md").read_text(encoding="utf-8").split("\n")
    exact = near = 0
    for row in rows:
        if row["code"] == "duplicate":
            first = re.sub(r"^Duplicate of the note on line \d+: ", "", row["message"])
            later = store[row["line"] - 1].removeprefix("- ")
            exact += later == first
            near += later != first
    assert exact and near, "the demo needs an exact and a near duplicate"


def test_the_demo_doctor_and_path_say_the_trust_verdict_once(tmp_path: Path) -> None:
    _, env = _build_demo(tmp_path)
    for verb in ("doctor", "path"):
        out = run_cli(verb, cwd=tmp_path / "project", env=env).stdout
        trust = [line for line in out.splitlines() if line.startswith("trust:")]
        assert len(trust) == 1 and trust[0].count("trusted") == 1, trust
