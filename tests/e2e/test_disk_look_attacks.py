"""Attacks on the editor's reused look at the disk (``diagnostics.DISK_LOOK_REUSE``)
through a real ``memory-ls serve``."""

from __future__ import annotations

import asyncio
import json
import os
import shutil

import pytest
from lsprotocol import types as lsp

from tests.conftest import new_project, store_text

from .conftest import TIMEOUT
from .test_disk_look import typed


async def test_notes_arriving_with_a_trust_requiring_resource_never_show_on_a_stale_look(
    start, workspace
):
    # A `git pull` brings, at once, an `.agents/skills` folder (the project is now
    # untrusted, SPEC §4 rule 3) and a project note. A keystroke just after must not
    # take the last look's "trusted" while reading the new store: the global document
    # would show a cross-scope finding built on an untrusted project's note.
    workspace.write("project", ["first project note"])
    workspace.write("global", ["planted secret rule", "another global note"])
    s = await start("visual-studio-code")
    method = lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
    waiting = s.client.protocol.wait_for_notification_async(method)
    uri = s.open(workspace.global_store)
    await asyncio.wait_for(waiting, TIMEOUT)
    waiting = s.client.protocol.wait_for_notification_async(method)
    typed(s, uri, 3, "a")
    await asyncio.wait_for(waiting, TIMEOUT)
    (workspace.root / ".agents" / "skills").mkdir(parents=True)
    workspace.write("project", ["first project note", "planted secret rule"])
    for _ in range(5):  # the reuse time (0.25 s) is not over before these
        waiting = s.client.protocol.wait_for_notification_async(method)
        typed(s, uri, 3, "b")
        params = await asyncio.wait_for(waiting, TIMEOUT)
        assert "cross-scope-duplicate" not in {d.code for d in params.diagnostics}


async def test_two_projects_rested_looks_do_not_cancel_each_other(start, workspace, tmp_path):
    # Typing in the second project right after the first project's .pi was swapped:
    # the second project's rested look must not stand in for the first's.
    second = new_project(tmp_path / "second")
    workspace.write("project", ["first note", "second note"])
    other = second / ".pi" / "memory.md"
    other.parent.mkdir(exist_ok=True)
    other.write_text(store_text("one note", "two note"))
    s = await start(folders=[workspace.root, second], init_options={"trusted": True})
    first = s.open(workspace.project_store)
    mine = s.open(other)
    typed(s, first, 2, "a")
    await s.wait_for(first, lambda ds: True)
    await asyncio.sleep(0.1)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(workspace.root / ".pi", elsewhere)
    (workspace.root / ".pi").symlink_to(elsewhere)
    typed(s, first, 3, "b")
    for _ in range(6):  # keep the second project busy past the first's rested look
        typed(s, mine, 2, "c")
        await asyncio.sleep(0.1)
    await s.codes(first, "outside-project")
    assert "outside-project" not in {str(d.code) for d in await s.diagnostics(mine)}


async def test_the_rested_look_after_close_and_shutdown_is_quiet(start, workspace, tmp_path):
    workspace.write("project", ["first note", "second note"])
    s = await start(init_options={"trusted": True})
    uri = s.open(workspace.project_store)
    typed(s, uri, 2, "a")
    typed(s, uri, 2, "b")
    s.client.text_document_did_close(
        lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    )
    await asyncio.sleep(0.1)
    assert not s.client.diagnostics.get(uri)  # cleared at close
    elsewhere = tmp_path / "elsewhere"
    shutil.move(workspace.root / ".pi", elsewhere)
    (workspace.root / ".pi").symlink_to(elsewhere)
    await asyncio.sleep(1.0)  # the rested look: nothing published for the closed document
    assert not s.client.diagnostics.get(uri)
    s.open(workspace.project_store)
    await asyncio.wait_for(s.client.shutdown_session(), TIMEOUT)
    await asyncio.sleep(1.0)
    failed = [m.message for m in s.client.log_messages if "failed" in m.message]
    assert failed == []


def _pi_to_file(ws, tmp_path):
    shutil.rmtree(ws.root / ".pi")
    (ws.root / ".pi").write_text("not a folder\n")


def _pi_to_fifo(ws, tmp_path):
    shutil.rmtree(ws.root / ".pi")
    os.mkfifo(ws.root / ".pi")


def _pi_to_agent_dir(ws, tmp_path):
    shutil.rmtree(ws.root / ".pi")
    (ws.root / ".pi").symlink_to(ws.agent_dir)


def _trust_revoked(ws, tmp_path):
    (ws.agent_dir / "trust.json").write_text(json.dumps({os.path.realpath(ws.root): False}))


def _settings_json(ws, tmp_path):
    (ws.root / ".pi" / "settings.json").write_text("{}")


def _recall_off(ws, tmp_path):
    (ws.root / ".pi" / "bytefly.json").write_text(json.dumps({"memory": {"inject": False}}))


@pytest.mark.parametrize(
    ("change", "scope"),
    [
        *((change, "project") for change in (_pi_to_file, _pi_to_fifo, _pi_to_agent_dir)),
        *((change, "project") for change in (_trust_revoked, _settings_json, _recall_off)),
        (_trust_revoked, "global"),
    ],
)
async def test_a_hostile_change_between_keystrokes_converges(
    start, workspace, tmp_path, change, scope
):
    # With no watcher event, what is shown once typing rests must be what a fresh look
    # shows (the next keystroke, well after the reuse time).
    workspace.write("project", ["shared note", "project note"])
    workspace.write("global", ["shared note", "global note"])
    (workspace.agent_dir / "trust.json").write_text(
        json.dumps({os.path.realpath(workspace.root): True})
    )
    s = await start()
    uri = s.open(workspace.store(scope))
    typed(s, uri, 3, "a")
    await s.wait_for(uri, lambda ds: True)
    await asyncio.sleep(0.05)
    change(workspace, tmp_path)
    typed(s, uri, 3, "b")
    await asyncio.sleep(1.2)

    def shown() -> set[tuple[str, str]]:
        return {(str(d.code), d.message) for d in s.client.diagnostics.get(uri, [])}

    rested = shown()
    version = s.versions[uri]
    typed(s, uri, 3, "c")
    await s.wait_for(uri, lambda ds: True)
    await asyncio.sleep(0.3)
    assert s.versions[uri] == version + 1
    assert shown() == rested


@pytest.mark.parametrize("verb", ["memory.add", "memory.list", "memory.inject"])
async def test_a_command_while_typing_decides_trust_afresh(start, workspace, verb):
    # A command sent right behind a keystroke whose analysis reused a look from before
    # trust was revoked must not act on (or return the notes of) the old decision.
    workspace.write("project", ["SECRET project note", "another note"])
    root = os.path.realpath(workspace.root)
    (workspace.agent_dir / "trust.json").write_text(json.dumps({root: True}))
    s = await start()
    uri = s.open(workspace.project_store)
    typed(s, uri, 2, "a")
    await s.wait_for(uri, lambda ds: True)
    (workspace.agent_dir / "trust.json").write_text(json.dumps({root: False}))
    typed(s, uri, 2, "b")
    argument = {"text": "planted"} if verb == "memory.add" else None
    result = await s.command(verb, argument)
    assert "SECRET" not in json.dumps(result)
    assert "planted" not in workspace.project_store.read_text()


async def test_a_pull_client_that_can_be_refreshed_is_asked_to_pull_again(
    start, workspace, tmp_path, monkeypatch
):
    from pytest_lsp import client_capabilities

    from . import conftest

    def refreshable(preset: str) -> lsp.ClientCapabilities:
        caps = client_capabilities("neovim")
        assert caps.workspace is not None
        caps.workspace.diagnostics = lsp.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
        return caps

    monkeypatch.setattr(conftest, "client_capabilities", refreshable)
    workspace.write("project", ["first note", "second note"])
    root = os.path.realpath(workspace.root)
    (workspace.agent_dir / "trust.json").write_text(json.dumps({root: True}))
    s = await start()
    assert s.pull
    uri = s.open(workspace.project_store)
    typed(s, uri, 2, "a")
    assert "untrusted" not in {str(d.code) for d in await s.diagnostics(uri)}
    before = s.client.diagnostic_refresh_count
    (workspace.agent_dir / "trust.json").write_text(json.dumps({root: False}))
    typed(s, uri, 2, "b")
    if "untrusted" in {str(d.code) for d in await s.diagnostics(uri)}:
        return  # a slow machine: this pull came after the reuse time
    # The client pulls when asked to, and only then, until it shows the truth.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 3
    seen = before
    while loop.time() < deadline:
        await asyncio.sleep(0.05)
        if s.client.diagnostic_refresh_count == seen:
            continue
        seen = s.client.diagnostic_refresh_count
        if "untrusted" in {str(d.code) for d in await s.diagnostics(uri)}:
            return
    raise AssertionError(f"no refresh brought the untrusted project ({seen - before} refreshes)")


async def test_a_malformed_burst_of_changes_ends_on_the_last_version(start, workspace):
    workspace.write("project", ["first note", "second note"])
    s = await start(init_options={"trusted": True})
    uri = s.open(workspace.project_store)

    def raw(version: int, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
        s.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[
                    lsp.TextDocumentContentChangePartial(
                        range=lsp.Range(start=lsp.Position(*start), end=lsp.Position(*end)),
                        text=text,
                    )
                ],
            )
        )

    raw(2, (99, 0), (99, 5), "- beyond the end\n")  # a range past the end
    raw(3, (2, 50), (1, 0), "x")  # end before start
    raw(2, (0, 0), (0, 0), "")  # a version going back
    s.client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri + "x", version=9),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text="- a")],
        )
    )
    for _ in range(100):
        typed(s, uri, 2, "z")
    s.versions[uri] = 200
    s.replace_all(uri, "# Project memory\n\n- one note\n- One note.\n")
    # The last push is read, not each push awaited in turn: a burst of publishes read in
    # one go resolves one waiter and the rest pass unseen (the test then timed out under
    # load). Only version 201's text has a duplicate.
    found = await s.wait_for(uri, lambda ds: [str(d.code) for d in ds] == ["duplicate"])
    assert [str(d.code) for d in found] == ["duplicate"]
    # and the server still answers
    assert (await s.command("memory.path"))["trusted"] is True
