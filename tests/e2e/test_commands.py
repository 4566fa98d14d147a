"""Every memory.* command: results and their shapes, files on disk, clear confirmation,
open buffers, arguments that are not an object."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams

from memory_ls.core.text import HEADER

from .conftest import PRESETS, TIMEOUT, code_actions, command_of, uri_of


def notes_on_disk(path) -> list[str]:
    return [line[2:] for line in path.read_text().splitlines() if line.startswith("- ")]


async def test_every_command(start, workspace):
    workspace.write("global", ["global fact"])
    s = await start("visual-studio-code")
    r = await s.command("memory.add", {"text": "  use   pnpm  "})
    assert r["changed"] is True and r["project"] == ["use pnpm"] and r["scope"] == "project"
    assert notes_on_disk(workspace.project_store) == ["use pnpm"]
    r = await s.command("memory.add", {"text": "Use pnpm."})
    assert r["changed"] is False and r["existing"] == "use pnpm"
    r = await s.command("memory.add", {"text": "second", "scope": "global"})
    assert notes_on_disk(workspace.global_store) == ["global fact", "second"]
    r = await s.command("memory.update", {"text": "use pnpm", "to": "use pnpm 9"})
    assert r["project"] == ["use pnpm 9"]
    r = await s.command("memory.add", {"text": "third"})
    r = await s.command("memory.merge", {"text": "use pnpm 9", "other": "third", "to": "a; b"})
    assert r["project"] == ["a; b"] and notes_on_disk(workspace.project_store) == ["a; b"]
    r = await s.command("memory.move", {"text": "a; b"})
    assert r["changed"] and r["project"] == [] and "a; b" in r["global"]
    assert notes_on_disk(workspace.global_store) == ["global fact", "second", "a; b"]
    r = await s.command("memory.forget", {"text": "second", "scope": "global"})
    assert notes_on_disk(workspace.global_store) == ["global fact", "a; b"]
    r = await s.command("memory.list")
    assert r["action"] == "list"
    path = await s.command("memory.path", {"uri": uri_of(workspace.root)})
    assert path["project"] == str(workspace.project_store) and path["trusted"] is True
    inject = await s.command("memory.inject")
    assert (
        inject["body"].startswith("[MEMORY]")
        and inject["included"] == 2
        and inject["inject"] is True
    )
    doctor = await s.command("memory.doctor")
    assert isinstance(doctor["text"], str) and doctor["text"]
    workspace.global_store.write_text("- changed outside\n")
    reload = await s.command("memory.reload")
    assert reload["changed"] is True
    assert reload["action"] == "reload" and reload["global"] == ["changed outside"]
    assert reload["reloaded"]["global"]["added"] == ["changed outside"]


async def test_bad_arguments(start, workspace):
    s = await start("neovim")
    r = await s.command("memory.add", {"text": 5})
    assert r.get("error") == "text is required." and r["changed"] is False
    r = await s.command("memory.add", {"text": "x", "scope": "nope"})
    assert r.get("error") == "scope must be one of project, global."
    r = await s.command("memory.add", {"text": "y" * 501})
    assert r.get("error") == "text is longer than 500 characters."
    r = await s.command("memory.forget", {"text": "absent"})
    assert r.get("error") == "No project memory note matches: absent"
    r = await s.command("memory.merge", {"text": "a", "other": "a", "to": "b"})
    assert r.get("error") == "text and other must be different notes."
    with pytest.raises(JsonRpcInvalidParams):
        await s.command("memory.add", ["not", "an", "object"])
    with pytest.raises(JsonRpcInvalidParams):
        await s.command("memory.list", "text")
    assert not workspace.project_store.exists()
    # An optional field of the wrong type is refused too, never ignored: a forget whose
    # uri is a number must not forget the note from the first workspace folder's store.
    await s.command("memory.add", {"text": "keep me"})
    r = await s.command("memory.forget", {"text": "keep me", "uri": 42})
    assert r.get("error", "").startswith("uri must be a string") and r["changed"] is False
    r = await s.command("memory.propose", {"action": "forget", "text": "keep me", "by": 7})
    assert r.get("error") == "by must be a string: who proposes."
    assert notes_on_disk(workspace.project_store) == ["keep me"]


async def test_read_only_and_untrusted(start, workspace):
    s = await start("visual-studio-code", init_options={"readOnly": True})
    r = await s.command("memory.add", {"text": "x", "scope": "global"})
    assert r.get("error") == "memory-ls is read-only: changes are refused."
    assert "error" not in await s.command("memory.list")
    s2 = await start("emacs", init_options={"trusted": False})
    r = await s2.command("memory.add", {"text": "x"})
    assert (
        r.get("error")
        == 'Project memory is unavailable for an untrusted project; use scope "global".'
    )
    assert not workspace.project_store.exists()


@pytest.mark.parametrize("answer", ["Clear", None])
async def test_clear_asks_first(start, workspace, answer):
    workspace.write("project", ["one", "two"])
    s = await start("visual-studio-code")
    s.confirm = answer
    r = await s.command("memory.clear", {})
    assert len(s.asked) == 1 and "Clear all 2 project" in s.asked[0].message
    if answer:
        assert r["changed"] is True and r["project"] == []
        assert workspace.project_store.read_text() == HEADER + "\n"
    else:
        assert r["changed"] is False and "not confirmed" in r["error"]
        assert notes_on_disk(workspace.project_store) == ["one", "two"]


async def test_clear_refused_without_show_message(start, workspace):
    workspace.write("project", ["one"])
    s = await start("emacs")  # declares no window.showMessage
    r = await s.command("memory.clear", {"scope": "project"})
    assert r["changed"] is False and "window/showMessageRequest" in r["error"]
    assert s.asked == [] and notes_on_disk(workspace.project_store) == ["one"]


@pytest.mark.parametrize("preset", PRESETS)
async def test_open_buffer_follows_commands(start, workspace, preset):
    workspace.write("project", ["one"])
    s = await start(preset)
    uri = s.open(workspace.project_store)
    await asyncio.sleep(0.1)
    # a clean buffer takes the file's new text
    await s.command("memory.add", {"text": "two"})
    assert s.buffers[uri] == workspace.project_store.read_text()
    # unsaved edits: the command's change is applied to the buffer, keeping them
    s.edit(
        uri,
        [
            lsp.TextEdit(
                range=lsp.Range(start=lsp.Position(2, 0), end=lsp.Position(2, 0)),
                new_text="- unsaved note\n",
            )
        ],
    )
    await asyncio.sleep(0.1)
    await s.command("memory.add", {"text": "three"})
    assert notes_on_disk(workspace.project_store) == ["one", "two", "three"]
    buffer_notes = [x[2:] for x in s.buffers[uri].splitlines() if x.startswith("- ")]
    assert buffer_notes == ["unsaved note", "one", "two", "three"]
    await s.command("memory.forget", {"text": "one"})
    buffer_notes = [x[2:] for x in s.buffers[uri].splitlines() if x.startswith("- ")]
    assert buffer_notes == ["unsaved note", "two", "three"]
    assert notes_on_disk(workspace.project_store) == ["two", "three"]
    # the server's view of the buffer matches the client's
    await s.wait_for(uri, lambda ds: not [d for d in ds if d.code == "duplicate"])


async def test_move_from_the_global_store_goes_to_the_workspace_project(start, workspace):
    workspace.write("global", ["global fact"])
    s = await start("visual-studio-code")
    uri = s.open(workspace.global_store)
    await s.wait_for(uri, lambda ds: True)
    actions = await code_actions(s, uri, 2, only=["refactor.move"])
    move = next(a for a in actions if a.title == "Move to project memory")
    cmd = command_of(move)
    assert cmd["command"] == "memory.move"
    r = await s.command(cmd["command"], cmd["arguments"][0])
    assert "error" not in r, r
    assert r["project"] == ["global fact"] and r["global"] == []
    assert notes_on_disk(workspace.project_store) == ["global fact"]
    # The global store's uri picks the default project as well.
    r = await s.command("memory.path", {"uri": uri_of(workspace.global_store)})
    assert r["project"] == str(workspace.project_store)


async def test_path_shape(start, workspace):
    s = await start("visual-studio-code")
    r = await s.command("memory.path")
    assert {"project", "global", "trusted", "trustReason"} <= set(r)
    assert r["project"] == str(workspace.project_store) and r["global"] == str(
        workspace.global_store
    )
    assert r["trusted"] is True and isinstance(r["trustReason"], str) and r["trustReason"]


async def test_inject_shape_and_off(start, workspace):
    workspace.write("global", ["g1"])
    workspace.write("project", ["p1"])
    s = await start("neovim")
    r = await s.command("memory.inject", {})
    assert set(r) == {"body", "bytes", "maxInjectBytes", "included", "omitted", "inject"}
    assert r["bytes"] == len(r["body"].encode()) and r["included"] == 2 and r["omitted"] == []
    (workspace.agent_dir / "bytefly.json").write_text('{"memory": {"inject": false}}')
    r = await s.command("memory.inject", {})
    assert r["body"] is None and r["inject"] is False and r["bytes"] == 0


@pytest.mark.parametrize("arg", [None, 5, "x", [1], True])
async def test_non_object_argument_is_invalid_params(start, workspace, arg):
    from pygls.exceptions import JsonRpcInvalidParams

    s = await start("visual-studio-code")
    with pytest.raises(JsonRpcInvalidParams):
        await asyncio.wait_for(
            s.client.workspace_execute_command_async(
                lsp.ExecuteCommandParams(command="memory.add", arguments=[arg])
            ),
            TIMEOUT,
        )
    r = await s.command("memory.list")
    assert r["action"] == "list"
