"""Multi-root workspaces: each folder is its own project; `uri` picks it."""

from __future__ import annotations

from pathlib import Path

from memory_ls.core.notes import parse_notes
from tests.conftest import new_project

from .conftest import uri_of


async def test_each_folder_is_its_own_project(start, workspace, tmp_path: Path):
    second = new_project(tmp_path / "second")
    s = await start("visual-studio-code", folders=[workspace.root, second])

    default = await s.command("memory.add", {"text": "goes to the first folder"})
    assert "error" not in default
    picked = await s.command(
        "memory.add", {"text": "goes to the second folder", "uri": uri_of(second / "src")}
    )
    assert picked["project"] == ["goes to the second folder"]
    assert parse_notes(workspace.project_store.read_text()) == ["goes to the first folder"]
    assert parse_notes((second / ".pi" / "memory.md").read_text()) == ["goes to the second folder"]

    path = await s.command("memory.path", {"uri": uri_of(second)})
    assert path["project"] == str(second / ".pi" / "memory.md")
    listed = await s.command("memory.list", {"uri": uri_of(second / ".pi" / "memory.md")})
    assert listed["project"] == ["goes to the second folder"]

    # The second folder's store, opened, is checked against its own notes.
    store = second / ".pi" / "memory.md"
    store.write_text(store.read_text() + "- Goes to the second folder.\n")
    uri = s.open(store)
    ds = await s.codes(uri, "duplicate")
    assert [d.range.start.line for d in ds if d.code == "duplicate"] == [3]


async def test_workspace_folder_changes_move_the_default_project(start, workspace, tmp_path: Path):
    from lsprotocol import types as lsp

    other = new_project(tmp_path / "other")
    s = await start("visual-studio-code")
    caps = s.server_capabilities
    assert caps and caps.workspace and caps.workspace.workspace_folders
    assert caps.workspace.workspace_folders.change_notifications
    s.client.workspace_did_change_workspace_folders(
        lsp.DidChangeWorkspaceFoldersParams(
            event=lsp.WorkspaceFoldersChangeEvent(
                added=[lsp.WorkspaceFolder(uri=uri_of(other), name="other")],
                removed=[lsp.WorkspaceFolder(uri=uri_of(workspace.root), name=workspace.root.name)],
            )
        )
    )
    result = await s.command("memory.add", {"text": "after the switch"})
    assert result["project"] == ["after the switch"]
    assert parse_notes((other / ".pi" / "memory.md").read_text()) == ["after the switch"]
    assert not workspace.project_store.exists()
