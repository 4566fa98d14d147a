"""The review inbox in the editor (SPEC §12): lenses, the ``proposal`` diagnostic, commands.

A proposal is made by another process (``memory-ls add --propose``), as an agent's
MCP server would; the open editor shows it without a reload, and the person
accepts or rejects it from a lens. Accepting into the open store follows the
open-buffer rule: unsaved edits survive.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from lsprotocol import types as lsp

from memory_ls.core.inbox import parse_inbox
from memory_ls.store.files import locked_message
from tests.conftest import store_text
from tests.unit.test_schemas import validate

from .conftest import TIMEOUT, Session

PRESETS = ["visual-studio-code", "neovim"]


async def lenses(session: Session, uri: str) -> list[lsp.CodeLens]:
    found = await asyncio.wait_for(
        session.client.text_document_code_lens_async(
            lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
        ),
        TIMEOUT,
    )
    return list(found or [])


def titled(found: list[lsp.CodeLens]) -> list[tuple[int, str]]:
    return [(lens.range.start.line, lens.command.title) for lens in found if lens.command]


async def until(predicate: Any, timeout: float = TIMEOUT) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await predicate():
        assert loop.time() < deadline, "never happened"
        await asyncio.sleep(0.05)


async def _open_counting_inbox(
    start: Any, preset: str, store: Any
) -> tuple[Session, list[Any], str]:
    """A session with ``store`` open and its first diagnostics in, and the list the
    ``memory/inbox`` notifications it gets are added to."""
    session: Session = await start(preset)
    counts: list[Any] = []

    @session.client.feature("memory/inbox")
    def inbox_counts(params: Any) -> None:
        counts.append(params)

    uri = session.open(store)
    await session.wait_for(uri, lambda ds: True)
    return session, counts, uri


@pytest.mark.parametrize("preset", PRESETS)
async def test_a_proposal_from_outside_is_reviewed_in_the_editor(
    start: Any, workspace: Any, preset: str
) -> None:
    store = workspace.write("project", ["use pnpm", "tests need DATABASE_URL"])
    session, counts, uri = await _open_counting_inbox(start, preset, store)

    # Another process proposes, as an agent would: the editor shows it without a reload.
    added = workspace.cli("add", "--propose", "--by", "claude-code", "run make lint first")
    assert added.returncode == 0, added.stderr
    forget = workspace.cli("forget", "--propose", "--by", "codex", "use pnpm")
    assert forget.returncode == 0, forget.stderr
    found = await session.codes(uri, "proposal")
    [diag] = [d for d in found if d.code == "proposal"]
    assert diag.range.start.line == 2
    assert diag.severity == lsp.DiagnosticSeverity.Information
    assert diag.message.startswith("codex proposes to forget this note")

    async def both_counted() -> bool:
        return any(
            getattr(c, "project", None) == 2 or (isinstance(c, dict) and c.get("project") == 2)
            for c in counts
        )

    await until(both_counted)

    shown = titled(await lenses(session, uri))
    assert (0, "2 proposals waiting") in shown
    assert (3, "✓ Accept add: run make lint first (claude-code)") in shown
    assert (2, "✓ Accept forget (codex)") in shown
    assert [line for line, title in shown if title == "✗ Reject"] == [3, 2]

    # Unsaved edits in the buffer survive accepting into it.
    session.edit(
        uri,
        [
            lsp.TextEdit(
                range=lsp.Range(start=lsp.Position(4, 0), end=lsp.Position(4, 0)),
                new_text="- unsaved note\n",
            )
        ],
    )
    accept = next(
        lens
        for lens in await lenses(session, uri)
        if lens.command and "Accept add" in lens.command.title
    )
    assert accept.command is not None
    result = await session.command(accept.command.command, accept.command.arguments[0])
    assert "error" not in result, result
    assert result["results"][0]["changed"] is True
    assert "- run make lint first" in session.buffers[uri]
    assert "- unsaved note" in session.buffers[uri]
    assert workspace.text("project") == store_text(
        "use pnpm", "tests need DATABASE_URL", "run make lint first"
    )

    reject = next(
        lens
        for lens in await lenses(session, uri)
        if lens.command and lens.command.title == "✗ Reject"
    )
    assert reject.command is not None
    result = await session.command(reject.command.command, reject.command.arguments[0])
    assert "error" not in result and result["waiting"] == {"project": 0, "global": 0}
    assert not (workspace.root / ".pi" / "memory.inbox.jsonl").exists()
    await session.wait_for(uri, lambda ds: all(d.code != "proposal" for d in ds))
    assert [t for _, t in titled(await lenses(session, uri)) if "waiting" in t] == []


@pytest.mark.parametrize("preset", PRESETS)
async def test_review_commands(start: Any, workspace: Any, preset: str) -> None:
    workspace.write("global", ["g"])
    session: Session = await start(preset)
    proposed = await session.command(
        "memory.propose", {"action": "update", "text": "g", "to": "g2", "scope": "global"}
    )
    validate("memory-result", proposed)
    assert proposed["waiting"] == 1 and proposed["changed"] is False
    pid = proposed["proposal"]["id"]
    assert proposed["proposal"]["by"] == "lsp"  # the test client gives no clientInfo
    named = await session.command(
        "memory.propose", {"action": "add", "text": "x", "scope": "global", "by": "me"}
    )
    assert named["proposal"]["by"] == "me"
    listing = await session.command("memory.inbox", {})
    validate("inbox-result", listing)
    assert [p["id"] for p in listing["global"]] == [pid, named["proposal"]["id"]]
    bad = await session.command("memory.accept", {"id": 3})
    assert bad["error"] == "Give id (a string), ids (a list of strings) or all (true)."
    unknown = await session.command("memory.reject", {"id": "deadbeef", "scope": "global"})
    assert unknown["error"] == "No proposal deadbeef in global inbox."
    edited = await session.command("memory.accept", {"id": pid, "to": "g3"})
    validate("review-result", edited)
    validate("review-result", bad)
    assert edited["results"][0]["global"] == ["g3"]
    everything = await session.command("memory.accept", {"all": True})
    assert everything["results"][0]["global"] == ["g3", "x"]
    inbox = workspace.agent_dir / "memory.inbox.jsonl"
    assert not inbox.exists() or parse_inbox(inbox.read_text()).proposals == []


async def test_an_untrusted_projects_proposals_are_counted_not_shown(
    start: Any, workspace: Any
) -> None:
    store = workspace.write("project", ["use pnpm"])
    proposed = workspace.cli("forget", "--propose", "--trusted", "use pnpm")
    assert proposed.returncode == 0, proposed.stderr
    workspace.cli("add", "--propose", "--trusted", "a secret plan")
    session: Session = await start("visual-studio-code", init_options={"trusted": False})
    uri = session.open(store)
    found = await session.codes(uri, "untrusted")
    assert all(d.code != "proposal" for d in found)
    shown = titled(await lenses(session, uri))
    assert (0, "2 proposals waiting") in shown
    assert not any("Accept" in title or "Reject" in title for _, title in shown)
    listing = await session.command("memory.inbox", {})
    assert "secret" not in str(listing) and len(listing["project"]) == 2
    refused = await session.command("memory.accept", {"all": True})
    assert "untrusted project" in refused["error"] and "secret" not in str(refused)


@pytest.mark.parametrize("command", ["memory.propose", "memory.accept", "memory.reject"])
async def test_hover_is_answered_while_a_review_command_waits_for_the_lock(
    start: Any, workspace: Any, monkeypatch: Any, command: str
) -> None:
    # Waiting for another process's lock must not stop the server answering
    # (as for memory.add: tests/e2e/test_write_path.py).
    store = workspace.write("project", ["a"])
    assert workspace.cli("add", "--propose", "b").returncode == 0
    [pid] = [
        p["id"]
        for p in parse_inbox((workspace.root / ".pi" / "memory.inbox.jsonl").read_text()).proposals
    ]
    monkeypatch.setenv("MEMORY_LS_LOCK_TIMEOUT", "3")
    s: Session = await start("neovim")
    uri = s.open(store)
    await asyncio.sleep(0.1)
    arg = {"action": "add", "text": "c"} if command == "memory.propose" else {"id": pid}
    result, hover = await s.command_while_locked(store, workspace.env(), command, arg, uri)
    assert hover is not None and "project memory" in hover.contents.value
    assert locked_message(store, 3) in result["error"]
    assert store.read_text() == store_text("a")
    assert [
        p["id"]
        for p in parse_inbox((workspace.root / ".pi" / "memory.inbox.jsonl").read_text()).proposals
    ] == [pid]


async def test_an_inbox_dated_tomorrow_is_not_reported_at_every_poll(
    start: Any, workspace: Any
) -> None:
    """An inbox whose mtime is in the future (``touch -d tomorrow``, a mount with a clock
    ahead) has a racy stamp until the clock passes it. The inbox poll (each second) then
    compares its bytes: unchanged, it is no change, so no ``memory/inbox``, no refresh of
    every open document and no lens refresh at every poll; a proposal that comes is still
    reported."""
    store = workspace.write("project", ["use pnpm"])
    added = workspace.cli("add", "--propose", "--by", "codex", "run make lint first")
    assert added.returncode == 0, added.stderr
    inbox = store.with_name("memory.inbox.jsonl")
    st = os.stat(inbox)
    os.utime(inbox, ns=(st.st_atime_ns, st.st_mtime_ns + 86400 * 10**9))
    _, counts, _ = await _open_counting_inbox(start, "neovim", store)
    await asyncio.sleep(0.5)
    counts.clear()
    await asyncio.sleep(3.2)  # three polls
    assert counts == []
    again = workspace.cli("add", "--propose", "--by", "codex", "tests need DATABASE_URL")
    assert again.returncode == 0, again.stderr

    async def counted() -> bool:
        return bool(counts)

    await until(counted)
