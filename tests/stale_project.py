"""A project where each of SPEC §13's four codes has one reason to fire, shared by the
CLI and MCP tests of ``check`` and the doctor."""

from __future__ import annotations

from tests.conftest import Workspace, store_text

NOTES = [
    "The entry point is `src/old_name.py`.",  # line 3: renamed to src/new_name.py
    "Build the site with `pnpm run gone`.",  # line 4: no such script
    "Keep commits small and focused.",  # line 5: AGENTS.md line 3 says it
    "Use pnpm for installs.",  # line 6: conflicts with line 7
    "Never use pnpm for installs.",  # line 7
    "Never use tabs for indentation.",  # line 8: conflicts with the global note
    "The tests live in `src/new_name.py` and `pnpm run build` builds.",  # line 9: clean
]
"""The project store's notes; ``store_text`` puts them from line 3 on (header, blank)."""


def project(ws: Workspace) -> None:
    """A project where each of the four codes has one reason to fire."""
    (ws.root / "src").mkdir()
    (ws.root / "src" / "new_name.py").write_text("print('hi')\n")
    (ws.root / "package.json").write_text('{"scripts": {"build": "vite build"}}\n')
    (ws.root / "AGENTS.md").write_text("# Agents\n\n- Keep commits small and focused.\n")
    ws.write("project", store_text(*NOTES))
    ws.write("global", store_text("Always use tabs for indentation."))
