"""SPEC §13 in the editor: ``stale-path``, ``stale-script`` and ``instruction-duplicate`` on
open, their quick fixes and severities, the watch-and-refresh path (a file renamed on disk,
a script removed: the diagnostic follows without the store being touched), and a hostile
project tree that must neither hang the server nor hold up a hover."""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from lsprotocol.converters import get_converter

from memory_ls.server.project_watch import WATCH_ID
from tests import stale_project
from tests.conftest import store_text
from tests.unit.test_schemas import validate

from .conftest import PRESETS, TIMEOUT, Session, code_actions, command_of, edits_for, uri_of

CONVERTER = get_converter()
STALE = ("stale-path", "stale-script", "instruction-duplicate")


def by_code(ds: list[lsp.Diagnostic], code: str) -> list[lsp.Diagnostic]:
    return [d for d in ds if d.code == code]


def _glob_re(pattern: str) -> re.Pattern[str]:
    """An LSP glob (``**``, ``*``, ``{a,b}``) as a regular expression."""
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "{":
            end = pattern.index("}", i)
            out += "(?:" + "|".join(map(re.escape, pattern[i + 1 : end].split(","))) + ")"
            i = end + 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out + "$")


def watched(s: Session, path: Path, kind: lsp.WatchKind) -> bool:
    """Whether the server asked the client to watch ``path`` for ``kind`` (as a client
    matches its registered watchers)."""
    for reg in s.registrations:
        if reg.id != WATCH_ID:
            continue
        options: Any = reg.register_options
        if not isinstance(options, dict):
            options = CONVERTER.unstructure(options)
        for w in options["watchers"]:
            if not (w.get("kind", 7) & kind):
                continue
            pattern = w["globPattern"]
            if isinstance(pattern, dict):
                base = Path(pattern["baseUri"].removeprefix("file://"))
                target = os.path.relpath(path, base)
                if not target.startswith("..") and _glob_re(pattern["pattern"]).match(target):
                    return True
            elif _glob_re(pattern).match(str(path)):
                return True
    return False


def send_events(s: Session, *events: tuple[Path, lsp.FileChangeType]) -> None:
    """What a watching client sends after the changes on disk (checked to be watched)."""
    kinds = {
        lsp.FileChangeType.Created: lsp.WatchKind.Create,
        lsp.FileChangeType.Changed: lsp.WatchKind.Change,
        lsp.FileChangeType.Deleted: lsp.WatchKind.Delete,
    }
    for path, kind in events:
        assert watched(s, path, kinds[kind]), f"no watcher for {path} ({kind.name})"
    s.client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            changes=[lsp.FileEvent(uri=uri_of(p), type=kind) for p, kind in events]
        )
    )


@pytest.mark.parametrize("preset", PRESETS)
async def test_each_code_on_open_with_its_range_and_severity(start, workspace, preset):
    stale_project.project(workspace)
    s = await start(preset)
    uri = s.open(workspace.project_store)
    ds = await s.codes(uri, *STALE)
    lines = workspace.text("project").split("\n")
    path = by_code(ds, "stale-path")
    assert len(path) == 1 and path[0].range.start.line == 2
    col = lines[2].index("src/old_name.py")
    assert (path[0].range.start.character, path[0].range.end.character) == (
        col,
        col + len("src/old_name.py"),
    )
    assert path[0].message == "`src/old_name.py` does not exist in the project."
    assert path[0].data["mention"] == "src/old_name.py"
    script = by_code(ds, "stale-script")
    assert len(script) == 1 and script[0].range.start.line == 3
    col = lines[3].index("gone")
    assert (script[0].range.start.character, script[0].range.end.character) == (col, col + 4)
    dup = by_code(ds, "instruction-duplicate")
    assert len(dup) == 1 and dup[0].range.start.line == 4
    assert dup[0].range.start.character == 2 and dup[0].range.end.character == len(lines[4])
    assert dup[0].data["file"] == str(workspace.root / "AGENTS.md")
    if dup[0].related_information:
        where = dup[0].related_information[0].location
        assert where.uri == uri_of(workspace.root / "AGENTS.md")
        assert where.range.start.line == 2
    for d in (*path, *script, *dup):
        assert d.severity == lsp.DiagnosticSeverity.Information
    # The clean note (an existing path, a defined script) has none.
    assert not [d for d in ds if d.code in STALE and d.range.start.line == 8]


async def test_the_global_store_against_the_users_instruction_files(start, workspace):
    (workspace.home / ".codex").mkdir()
    (workspace.home / ".codex" / "AGENTS.md").write_text("# Mine\n\n- Reply in British English.\n")
    workspace.write("global", ["Reply in British English.", "src/gone.py is the entry point"])
    s = await start()
    g = s.open(workspace.global_store)
    ds = await s.codes(g, "instruction-duplicate")
    assert [d.range.start.line for d in by_code(ds, "instruction-duplicate")] == [2]
    assert not by_code(ds, "stale-path")  # project store only


async def test_quick_fixes_forget_and_edit_the_note(start, workspace):
    stale_project.project(workspace)
    s = await start("visual-studio-code")
    shown = s.client.shown_documents  # pytest-lsp's client answers and keeps them
    uri = s.open(workspace.project_store)
    ds = await s.codes(uri, *STALE)
    path = by_code(ds, "stale-path")[0]
    actions = await code_actions(s, uri, 2, only=["quickfix"], diagnostics=[path])
    titles = [a.title for a in actions]
    assert titles == ["Forget this note", "Edit the note"]
    command = command_of(actions[1])  # a command, no edit
    assert command["command"] == "memory.reveal"
    result = await s.command("memory.reveal", command["arguments"][0])
    assert result == {"shown": True}
    validate("reveal-result", result)  # the type the VS Code client is generated from
    assert shown[-1].uri == uri and shown[-1].selection == path.range
    assert shown[-1].take_focus is True

    dup = by_code(ds, "instruction-duplicate")[0]
    actions = await code_actions(s, uri, 4, only=["quickfix"], diagnostics=[dup])
    assert [a.title for a in actions] == ["Forget this note"]
    s.edit(uri, edits_for(actions[0].edit, uri))
    ds = await s.wait_for(uri, lambda ds: not by_code(ds, "instruction-duplicate"))
    assert "Keep commits small" not in s.buffers[uri]
    # The other findings moved up a line with their notes.
    assert [d.range.start.line for d in by_code(ds, "stale-script")] == [3]


async def test_severity_off_hides_and_a_level_relevels(start, workspace):
    stale_project.project(workspace)
    s = await start(
        configuration={"severity": {"stale-path": "off", "instruction-duplicate": "hint"}}
    )
    uri = s.open(workspace.project_store)
    ds = await s.codes(uri, "stale-script", "instruction-duplicate")
    assert not by_code(ds, "stale-path")
    assert by_code(ds, "instruction-duplicate")[0].severity == lsp.DiagnosticSeverity.Hint


async def test_a_renamed_file_and_a_removed_script_are_seen_without_touching_the_store(
    start, workspace
):
    root = workspace.root
    (root / "src").mkdir()
    app = root / "src" / "app.py"
    app.write_text("print('app')\n")
    package = root / "package.json"
    package.write_text(json.dumps({"scripts": {"build": "vite build", "lint": "eslint ."}}))
    workspace.write("project", ["The entry point is `src/app.py`.", "Run `npm run lint` first."])
    stored = workspace.read("project")
    s = await start("visual-studio-code")
    uri = s.open(workspace.project_store)
    await asyncio.sleep(0.3)  # the project is looked at in the background
    assert not [d for d in await s.diagnostics(uri) if d.code in STALE]
    version = s.versions[uri]

    moved = root / "src" / "main.py"
    os.rename(app, moved)
    send_events(s, (app, lsp.FileChangeType.Deleted), (moved, lsp.FileChangeType.Created))
    ds = await s.codes(uri, "stale-path")
    assert by_code(ds, "stale-path")[0].data["mention"] == "src/app.py"

    os.rename(moved, app)
    send_events(s, (moved, lsp.FileChangeType.Deleted), (app, lsp.FileChangeType.Created))
    await s.wait_for(uri, lambda ds: not by_code(ds, "stale-path"))

    package.write_text(json.dumps({"scripts": {"build": "vite build"}}))
    send_events(s, (package, lsp.FileChangeType.Changed))
    ds = await s.codes(uri, "stale-script")
    assert by_code(ds, "stale-script")[0].data["script"] == "lint"

    assert workspace.read("project") == stored and s.versions[uri] == version


async def test_a_hostile_tree_neither_hangs_nor_holds_up_a_hover(start, workspace):
    root = workspace.root
    (root / "loop").symlink_to(root)  # a symlink back to the root
    (root / "a").symlink_to(root / "b")
    (root / "b").symlink_to(root / "a")  # a symlink loop
    os.mkfifo(root / "package.json")  # reading it would block forever
    many = root / "many"
    for i in range(200):
        folder = many / f"d{i}"
        folder.mkdir(parents=True)
        for j in range(100):
            (folder / f"f{j}.txt").touch()
    (root / "src").mkdir()
    workspace.write(
        "project",
        store_text("The entry point is `src/gone.py`.", "Run `npm run nothing` to build."),
    )
    s = await start("visual-studio-code")
    uri = s.open(workspace.project_store)
    hover = await asyncio.wait_for(
        s.client.text_document_hover_async(
            lsp.HoverParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(2, 3)
            )
        ),
        2.0,
    )
    assert hover is not None
    ds = await s.codes(uri, "stale-path")  # the walk ended
    assert not by_code(ds, "stale-script")  # an unreadable package.json judges no script
    send_events(s, (many / "d0" / "f0.txt", lsp.FileChangeType.Deleted))
    r = await asyncio.wait_for(s.command("memory.list"), TIMEOUT)
    assert len(r["project"]) == 2


async def test_without_file_watchers_a_save_of_the_store_looks_again(start, workspace):
    # Neovim's preset declares no dynamic registration of file watchers.
    (workspace.root / "src").mkdir()
    app = workspace.root / "src" / "app.py"
    app.write_text("")
    workspace.write("project", ["The entry point is `src/app.py`."])
    s = await start("neovim")
    assert not [r for r in s.registrations if r.id == WATCH_ID]
    uri = s.open(workspace.project_store)
    await asyncio.sleep(0.3)
    assert not by_code(await s.diagnostics(uri), "stale-path")
    os.rename(app, workspace.root / "src" / "main.py")
    s.client.text_document_did_save(
        lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    )
    await s.codes(uri, "stale-path")
