"""Whose decision counts where, through a real ``memory-ls serve`` (SPEC §1, §4, §7).

The client's ``trusted`` covers its workspace folders and what lies inside them,
nothing else; a command's ``uri`` never creates a project; a project whose
``.pi`` resolves outside it is refused, with an ``outside-project`` diagnostic.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from memory_ls.core.actions import UNTRUSTED_MESSAGE
from memory_ls.core.notes import parse_notes

from .conftest import uri_of


def repo(path: Path, *resources: str) -> Path:
    """A repository root (an empty ``.git/``) holding the given trust-requiring files."""
    (path / ".git").mkdir(parents=True)
    for name in resources:
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text("{}")
    return path


def outside_message(root: Path) -> str:
    real = os.path.realpath(root / ".pi")
    return f"Refusing to use {root}/.pi: it resolves outside the project ({real})."


# -- item 3: the client's trust stays in its folders ---------------------------------------


async def test_client_trust_does_not_reach_a_project_outside_the_folders(start, ws, tmp_path):
    other = repo(tmp_path / "cloned", ".pi/mcp.json")
    s = await start(init_options={"trusted": True})

    inside = await s.command("memory.add", {"text": "in the workspace"})
    assert "error" not in inside
    refused = await s.command("memory.add", {"text": "planted", "uri": uri_of(other)})
    assert refused["error"] == UNTRUSTED_MESSAGE
    assert refused["project"] == []
    assert not (other / ".pi" / "memory.md").exists()

    (other / "src").mkdir()
    (other / "src" / "x.py").write_text("")
    path = await s.command("memory.path", {"uri": uri_of(other / "src" / "x.py")})
    assert path["trusted"] is False
    assert ".pi/mcp.json" in path["trustReason"]
    mine = await s.command("memory.path", {})
    assert mine["trusted"] is True


async def test_trust_json_decides_outside_the_folders(start, ws, tmp_path):
    marked = repo(tmp_path / "marked")
    (ws.agent / "trust.json").write_text(json.dumps({str(marked.resolve()): False}))
    s = await start(init_options={"trusted": True})
    refused = await s.command("memory.add", {"text": "x", "uri": uri_of(marked)})
    assert refused["error"] == UNTRUSTED_MESSAGE
    assert "trust.json" in (await s.command("memory.path", {"uri": uri_of(marked)}))["trustReason"]


async def test_an_untrusted_client_does_not_decide_outside_the_folders(start, ws, tmp_path):
    plain = repo(tmp_path / "plain")
    s = await start(init_options={"trusted": False})
    assert (await s.command("memory.add", {"text": "x"}))["error"] == UNTRUSTED_MESSAGE
    added = await s.command("memory.add", {"text": "decided by rule 3", "uri": uri_of(plain)})
    assert "error" not in added
    assert parse_notes((plain / ".pi" / "memory.md").read_text()) == ["decided by rule 3"]


async def test_client_trust_covers_what_lies_inside_a_folder(start, ws):
    nested = repo(ws.root / "vendor" / "lib", ".pi/settings.json")
    ws.write(nested / ".pi" / "memory.md", ["nested note"])
    (ws.root / "src").mkdir()
    s = await start(init_options={"trusted": True})
    sub = await s.command(
        "memory.add", {"text": "from a subfolder", "uri": uri_of(ws.root / "src")}
    )
    assert "error" not in sub
    # A repository inside the folder is covered too: its open store is trusted.
    uri = s.open(nested / ".pi" / "memory.md")
    ds = await s.diagnostics(uri)
    assert "untrusted" not in {d.code for d in ds}


async def test_a_file_opened_outside_the_folders_follows_its_own_project(start, ws, tmp_path):
    other = repo(tmp_path / "cloned", ".pi/mcp.json")
    store = other / ".pi" / "memory.md"
    ws.write(store, ["from the clone"])
    s = await start(init_options={"trusted": True})
    uri = s.open(store)
    ds = await s.codes(uri, "untrusted")
    assert ".pi/mcp.json" in next(d for d in ds if d.code == "untrusted").message
    # Its notes are not the workspace's to recall, nor the clone's.
    inject = await s.command("memory.inject", {"uri": uri_of(other)})
    assert inject["body"] is None


# -- item 5: a uri never creates a project --------------------------------------------------


async def test_a_missing_directory_outside_the_folders_is_refused(start, ws, tmp_path):
    missing = tmp_path / "typo" / "deep" / "dir"
    s = await start(init_options={"trusted": True})
    for command, argument in (
        ("memory.add", {"text": "x"}),
        ("memory.add", {"text": "x", "scope": "global"}),
        ("memory.clear", {}),
        ("memory.list", {}),
        ("memory.path", {}),
    ):
        result = await s.command(command, {**argument, "uri": uri_of(missing)})
        assert result["error"] == f"No such project directory: {missing}", command
        assert result["changed"] is False
        assert result["project"] == []
    assert not (tmp_path / "typo").exists()
    assert not (ws.agent / "memory.md").exists()
    assert s.asked == []


async def test_a_missing_path_inside_a_folder_picks_the_folder(start, ws):
    s = await start(init_options={"trusted": True})
    added = await s.command("memory.add", {"text": "x", "uri": uri_of(ws.root / "new" / "f.md")})
    assert "error" not in added
    assert ws.project_store.exists()
    assert not (ws.root / "new").exists()


# -- item 4: a .pi leading out of the project -------------------------------------------------


async def test_commands_refuse_a_pi_leading_to_the_agent_dir(start, ws, tmp_path):
    ws.write(ws.global_store, ["global note"])
    before = ws.global_store.read_bytes()
    clone = repo(tmp_path / "clone")
    (clone / ".pi").symlink_to(ws.agent)
    (ws.root / ".pi").symlink_to(tmp_path / "elsewhere")
    s = await start(init_options={"trusted": True})
    for uri, root in ((None, ws.root), (uri_of(clone), clone)):
        where = {} if uri is None else {"uri": uri}
        for command, argument in (
            ("memory.add", {"text": "planted"}),
            ("memory.forget", {"text": "global note"}),
            ("memory.clear", {}),
        ):
            result = await s.command(command, {**argument, **where})
            assert result["error"] == outside_message(root), (command, root)
            assert (result["project"], result["global"]) == ([], ["global note"])
        listed = await s.command("memory.list", where)
        assert listed["error"] == outside_message(root)
    assert ws.global_store.read_bytes() == before
    assert not (tmp_path / "elsewhere").exists()
    assert s.asked == []


@pytest.mark.parametrize("preset", ["visual-studio-code", "neovim"])
async def test_an_open_store_leading_outside_gets_an_outside_project_error(
    start, ws, tmp_path, preset
):
    elsewhere = tmp_path / "elsewhere"
    ws.write(elsewhere / "memory.md", ["planted elsewhere"])
    (ws.root / ".pi").symlink_to(elsewhere)
    s = await start(preset, init_options={"trusted": True})
    uri = s.open(ws.project_store)
    ds = await s.codes(uri, "outside-project")
    found = next(d for d in ds if d.code == "outside-project")
    assert found.severity == lsp.DiagnosticSeverity.Error
    assert found.message == outside_message(ws.root)
    assert found.source == "memory"
    assert "cross-scope-duplicate" not in {d.code for d in ds}


async def test_a_pi_leading_to_the_agent_dir_is_the_project_store_in_the_editor(start, ws):
    ws.write(ws.global_store, ["global note"])
    (ws.root / ".pi").symlink_to(ws.agent)
    s = await start(init_options={"trusted": True})
    uri = s.open(ws.project_store)
    ds = await s.codes(uri, "outside-project")
    assert next(d for d in ds if d.code == "outside-project").message == outside_message(ws.root)
    # The real global store, opened too, is the global store and nothing else.
    global_uri = s.open(ws.global_store)
    codes = {d.code for d in await s.diagnostics(global_uri)}  # pulled: no waiting needed
    assert "outside-project" not in codes and "cross-scope-duplicate" not in codes


async def test_the_outside_project_severity_is_a_setting(start, ws, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (ws.root / ".pi").symlink_to(tmp_path / "elsewhere")
    ws.write(ws.project_store, ["a"])
    s = await start(
        init_options={"trusted": True, "severity": {"outside-project": "warning"}},
    )
    uri = s.open(ws.project_store)
    ds = await s.codes(uri, "outside-project")
    assert next(d for d in ds if d.code == "outside-project").severity == 2
    logged = [m.message for m in s.client.log_messages if "outside-project" in m.message]
    assert logged == []
