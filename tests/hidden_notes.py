"""A store whose notes hold a bidirectional override, for the tests that every report
quoting a note shows it escaped (``tests/cli``, ``tests/mcp``)."""

from __future__ import annotations

from tests.conftest import Workspace

EVIL = "deploys go through staging \u202eeteled\u202c first"
"""U+202E reverses, on screen, whatever follows it (up to U+202C)."""
SHOWN = "deploys go through staging \\u202eeteled\\u202c first"
""":data:`EVIL` as every message quotes it."""


def write(workspace: Workspace) -> None:
    """Both stores: in the project a duplicate (line 4), a paraphrase (line 5) and a note
    the global store also holds (lines 3 and 4)."""
    workspace.write("global", [EVIL])
    workspace.write("project", [EVIL, EVIL.upper(), f"{EVIL} always"])
