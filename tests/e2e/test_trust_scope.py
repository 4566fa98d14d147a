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
from tests.conftest import new_project

from .conftest import uri_of


def outside_message(root: Path) -> str:
    real = os.path.realpath(root / ".pi")
    return f"Refusing to use {root}/.pi: it resolves outside the project ({real})."


# -- item 3: the client's trust stays in its folders ---------------------------------------


async def test_client_trust_does_not_reach_a_project_outside_the_folders(
    start, workspace, tmp_path
):
    other = new_project(tmp_path / "cloned", ".pi/mcp.json")
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


async def test_trust_json_decides_outside_the_folders(start, workspace, tmp_path):
    marked = new_project(tmp_path / "marked")
    (workspace.agent_dir / "trust.json").write_text(json.dumps({str(marked.resolve()): False}))
    s = await start(init_options={"trusted": True})
    refused = await s.command("memory.add", {"text": "x", "uri": uri_of(marked)})
    assert refused["error"] == UNTRUSTED_MESSAGE
    assert "trust.json" in (await s.command("memory.path", {"uri": uri_of(marked)}))["trustReason"]


async def test_an_untrusted_client_does_not_decide_outside_the_folders(start, workspace, tmp_path):
    plain = new_project(tmp_path / "plain")
    s = await start(init_options={"trusted": False})
    assert (await s.command("memory.add", {"text": "x"}))["error"] == UNTRUSTED_MESSAGE
    added = await s.command("memory.add", {"text": "decided by rule 3", "uri": uri_of(plain)})
    assert "error" not in added
    assert parse_notes((plain / ".pi" / "memory.md").read_text()) == ["decided by rule 3"]


async def test_client_trust_covers_what_lies_inside_a_folder(start, workspace):
    nested = new_project(workspace.root / "vendor" / "lib", ".pi/settings.json")
    workspace.write(nested / ".pi" / "memory.md", ["nested note"])
    (workspace.root / "src").mkdir()
    s = await start(init_options={"trusted": True})
    sub = await s.command(
        "memory.add", {"text": "from a subfolder", "uri": uri_of(workspace.root / "src")}
    )
    assert "error" not in sub
    # A repository inside the folder is covered too: its open store is trusted.
    uri = s.open(nested / ".pi" / "memory.md")
    ds = await s.diagnostics(uri)
    assert "untrusted" not in {d.code for d in ds}


async def test_a_file_opened_outside_the_folders_follows_its_own_project(
    start, workspace, tmp_path
):
    other = new_project(tmp_path / "cloned", ".pi/mcp.json")
    store = other / ".pi" / "memory.md"
    workspace.write(store, ["from the clone"])
    s = await start(init_options={"trusted": True})
    uri = s.open(store)
    ds = await s.codes(uri, "untrusted")
    assert ".pi/mcp.json" in next(d for d in ds if d.code == "untrusted").message
    # Its notes are not the workspace's to recall, nor the clone's.
    inject = await s.command("memory.inject", {"uri": uri_of(other)})
    assert inject["body"] is None


# -- item 5: a uri never creates a project --------------------------------------------------


async def test_a_missing_directory_outside_the_folders_is_refused(start, workspace, tmp_path):
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
    assert not (workspace.agent_dir / "memory.md").exists()
    assert s.asked == []


async def test_a_missing_path_inside_a_folder_picks_the_folder(start, workspace):
    s = await start(init_options={"trusted": True})
    added = await s.command(
        "memory.add", {"text": "x", "uri": uri_of(workspace.root / "new" / "f.md")}
    )
    assert "error" not in added
    assert workspace.project_store.exists()
    assert not (workspace.root / "new").exists()


# -- item 4: a .pi leading out of the project -------------------------------------------------


async def test_commands_refuse_a_pi_leading_to_the_agent_dir(start, workspace, tmp_path):
    workspace.write("global", ["global note"])
    before = workspace.global_store.read_bytes()
    clone = new_project(tmp_path / "clone")
    (clone / ".pi").symlink_to(workspace.agent_dir)
    (workspace.root / ".pi").symlink_to(tmp_path / "elsewhere")
    s = await start(init_options={"trusted": True})
    for uri, root in ((None, workspace.root), (uri_of(clone), clone)):
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
    assert workspace.global_store.read_bytes() == before
    assert not (tmp_path / "elsewhere").exists()
    assert s.asked == []


@pytest.mark.parametrize("preset", ["visual-studio-code", "neovim"])
async def test_an_open_store_leading_outside_gets_an_outside_project_error(
    start, workspace, tmp_path, preset
):
    elsewhere = tmp_path / "elsewhere"
    workspace.write(elsewhere / "memory.md", ["planted elsewhere"])
    (workspace.root / ".pi").symlink_to(elsewhere)
    s = await start(preset, init_options={"trusted": True})
    uri = s.open(workspace.project_store)
    ds = await s.codes(uri, "outside-project")
    found = next(d for d in ds if d.code == "outside-project")
    assert found.severity == lsp.DiagnosticSeverity.Error
    assert found.message == outside_message(workspace.root)
    assert found.source == "memory"
    assert "cross-scope-duplicate" not in {d.code for d in ds}


async def test_a_pi_leading_to_the_agent_dir_is_the_project_store_in_the_editor(start, workspace):
    workspace.write("global", ["global note"])
    (workspace.root / ".pi").symlink_to(workspace.agent_dir)
    s = await start(init_options={"trusted": True})
    uri = s.open(workspace.project_store)
    ds = await s.codes(uri, "outside-project")
    assert next(d for d in ds if d.code == "outside-project").message == outside_message(
        workspace.root
    )
    # The real global store, opened too, is the global store and nothing else.
    global_uri = s.open(workspace.global_store)
    codes = {d.code for d in await s.diagnostics(global_uri)}  # pulled: no waiting needed
    assert "outside-project" not in codes and "cross-scope-duplicate" not in codes


async def test_the_outside_project_severity_is_a_setting(start, workspace, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (workspace.root / ".pi").symlink_to(tmp_path / "elsewhere")
    workspace.write("project", ["a"])
    s = await start(
        init_options={"trusted": True, "severity": {"outside-project": "warning"}},
    )
    uri = s.open(workspace.project_store)
    ds = await s.codes(uri, "outside-project")
    assert next(d for d in ds if d.code == "outside-project").severity == 2
    logged = [m.message for m in s.client.log_messages if "outside-project" in m.message]
    assert logged == []
