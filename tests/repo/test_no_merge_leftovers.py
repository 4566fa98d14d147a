"""The checkout holds no half-resolved merge: conflict markers once reached CHANGELOG.md
and docs/conflicts.md unnoticed, because nothing reads prose files."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(rb"^(<{7} |>{7} |={7}$)", re.M)


def test_no_tracked_file_holds_a_conflict_marker() -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False, timeout=60
    )
    if listed.returncode != 0:  # not a git checkout (an sdist): walk the tree instead
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()]
    else:
        names = [n.decode() for n in listed.stdout.split(b"\0") if n]
    skipped = ("node_modules/", ".venv/", "bench/.peers/")
    found = []
    for name in names:
        if name.startswith(skipped) or "/node_modules/" in name:
            continue
        path = ROOT / name
        if not path.is_file() or path.is_symlink():
            continue
        data = path.read_bytes()
        if b"\0" in data[:4096]:
            continue  # binary (a screenshot)
        newline = b"\n"
        found.extend(
            f"{name}:{data.count(newline, 0, m.start()) + 1}" for m in MARKER.finditer(data)
        )
    assert not found, f"conflict markers left by a merge: {found}"
