"""Commands racing with typing on the open store: the diagnostics left afterwards are those
a fresh open of the same buffer text gets."""

from __future__ import annotations

import asyncio

from lsprotocol import types as lsp

from .conftest import Session
from .test_open_buffers import IN_FLIGHT, insert, run_all, versioned


def _keys(found: list[lsp.Diagnostic]) -> list[tuple[object, ...]]:
    return sorted(
        (r.start.line, r.start.character, r.end.line, r.end.character, str(d.code), d.message)
        for d in found
        for r in [d.range]
    )


async def test_diagnostics_after_commands_race_typing_match_a_fresh_open(start, workspace):
    workspace.write("project", ["a", "b", "c", "d", "e", "a"])
    workspace.write("global", ["g"])
    s = await start("visual-studio-code")
    project = s.open(workspace.project_store)
    s.open(workspace.global_store)
    edits = 0

    def typing_then_versioned(session: Session, edit: lsp.WorkspaceEdit) -> str | None:
        nonlocal edits
        edits += 1
        if edits in (2, 5, 7):  # the user types a duplicate just before an edit arrives
            session.edit(project, insert(2, "- new 1\n"))
        return versioned(session, edit)

    s.refuse = typing_then_versioned
    await run_all(s, IN_FLIGHT)
    await asyncio.sleep(1.0)
    after = _keys(await s.diagnostics(project))
    assert [k for k in after if k[4] == "duplicate"], after
    assert not [k for k in after if k[4] == "buffer-behind-file"], after

    fresh = await start("visual-studio-code")
    again = fresh.open(workspace.project_store, s.buffers[project])
    fresh.open(workspace.global_store)
    await asyncio.sleep(1.0)
    assert after == _keys(await fresh.diagnostics(again))
