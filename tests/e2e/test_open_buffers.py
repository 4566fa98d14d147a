"""Open buffers under commands in flight (SPEC §7 "Open buffers"; issue 9, items 1 and 9).

The real server over stdio, driven by two kinds of editor: one that refuses an
edit made for another version of the buffer (as VS Code does) and one that
applies unversioned ``changes`` as they come (as Neovim does). Ten commands are
sent at once; in the end each file holds every command's change, and each
buffer holds every change plus the user's unsaved edits.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp

from memory_ls.core.text import HEADER
from tests.conftest import new_project, store_text

from .conftest import TIMEOUT, Session, edits_for, uri_of

BEHIND = (
    "this buffer lacks a change that memory.{} wrote to the file; saving it would undo "
    "that change — revert the buffer to reload it"
)

# Ten commands, sent without waiting. The first two are the two quick forgets.
IN_FLIGHT: list[tuple[str, dict[str, Any]]] = [
    ("memory.forget", {"text": "b"}),
    ("memory.forget", {"text": "c"}),
    ("memory.add", {"text": "new 1"}),
    ("memory.move", {"text": "d"}),
    ("memory.add", {"text": "new 2"}),
    ("memory.update", {"text": "e", "to": "e updated"}),
    ("memory.add", {"text": "new 3"}),
    ("memory.add", {"text": "global new", "scope": "global"}),
    ("memory.add", {"text": "new 4"}),
    ("memory.add", {"text": "new 5"}),
]
PROJECT_AFTER = ["a", "e updated", "new 1", "new 2", "new 3", "new 4", "new 5"]
GLOBAL_AFTER = ["g", "d", "global new"]


def versioned(session: Session, edit: lsp.WorkspaceEdit) -> str | None:
    """VS Code's rule: an edit made for another version of a buffer is refused whole."""
    for change in edit.document_changes or []:
        if isinstance(change, lsp.TextDocumentEdit):
            uri, version = change.text_document.uri, change.text_document.version
            if version is not None and version != session.versions.get(uri):
                return f"version {version} is not the buffer's {session.versions.get(uri)}"
    return None


def refuse_all(session: Session, edit: lsp.WorkspaceEdit) -> str | None:
    return "the user dismissed the edit"


@dataclass(frozen=True)
class Editor:
    """How a test client plays an editor."""

    name: str
    preset: str
    checks_versions: bool
    change_delay: float = 0.0
    """The editor answers the edit first and sends its didChange this much later."""

    async def start(self, start: Any) -> Session:
        s: Session = await start(self.preset)
        s.refuse = versioned if self.checks_versions else None
        s.change_delay = self.change_delay
        return s


EDITORS = [
    Editor("versioned", "visual-studio-code", True),
    Editor("versioned-late-didChange", "visual-studio-code", True, 0.05),
    Editor("unversioned", "neovim", False),
    Editor("unversioned-late-didChange", "neovim", False, 0.05),
]


def notes(text: str) -> list[str]:
    return [line[2:] for line in text.splitlines() if line.startswith("- ")]


def file_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


def with_line(text: str, line: int, inserted: str, eol: str = "\n") -> str:
    lines = text.split(eol)
    return eol.join([*lines[:line], inserted, *lines[line:]])


def insert(line: int, text: str) -> list[lsp.TextEdit]:
    at = lsp.Position(line, 0)
    return [lsp.TextEdit(range=lsp.Range(start=at, end=at), new_text=text)]


async def run_all(s: Session, commands: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    results = await asyncio.wait_for(
        asyncio.gather(*(s.command(name, arg) for name, arg in commands)), 3 * TIMEOUT
    )
    for (name, arg), r in zip(commands, results, strict=True):
        assert "error" not in r and r["changed"] is True, (name, arg, r)
    return results


async def server_notes(s: Session, uri: str) -> list[str]:
    """The notes as the server sees the buffer (one document symbol per note)."""
    symbols = await asyncio.wait_for(
        s.client.text_document_document_symbol_async(
            lsp.DocumentSymbolParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
        ),
        TIMEOUT,
    )
    return [sym.name for sym in symbols or []]


async def assert_no_behind(s: Session, *uris: str) -> None:
    for uri in uris:
        found = await s.diagnostics(uri)
        assert not [d for d in found if d.code == "buffer-behind-file"], found
    assert not [m for m in s.client.messages if "lacks a change" in m.message]


def assert_versioned(s: Session, editor: Editor) -> None:
    """The versioned editor was sent versioned edits (else it would have checked nothing)."""
    assert s.applied
    for edit in s.applied:
        if editor.checks_versions:
            assert edit.document_changes and edit.changes is None
            for change in edit.document_changes:
                assert isinstance(change, lsp.TextDocumentEdit)
                assert change.text_document.version is not None
        else:
            assert edit.changes and not edit.document_changes


@pytest.mark.parametrize("editor", EDITORS, ids=lambda e: e.name)
async def test_ten_commands_in_flight_keep_clean_buffers_equal_to_files(start, workspace, editor):
    workspace.write("project", ["a", "b", "c", "d", "e"])
    workspace.write("global", ["g"])
    s = await editor.start(start)
    project, global_ = s.open(workspace.project_store), s.open(workspace.global_store)
    await run_all(s, IN_FLIGHT)
    assert notes(file_text(workspace.project_store)) == PROJECT_AFTER
    assert notes(file_text(workspace.global_store)) == GLOBAL_AFTER
    # A buffer that matched the file ends equal to the file: saving it changes nothing.
    assert s.buffers[project] == file_text(workspace.project_store)
    assert s.buffers[global_] == file_text(workspace.global_store)
    assert await server_notes(s, project) == PROJECT_AFTER
    assert await server_notes(s, global_) == GLOBAL_AFTER
    assert_versioned(s, editor)
    await assert_no_behind(s, project, global_)


@pytest.mark.parametrize("editor", EDITORS, ids=lambda e: e.name)
async def test_ten_commands_in_flight_keep_unsaved_edits(start, workspace, editor):
    workspace.write("project", ["a", "b", "c", "d", "e"])
    workspace.write("global", ["g"])
    s = await editor.start(start)
    project, global_ = s.open(workspace.project_store), s.open(workspace.global_store)
    s.edit(project, insert(2, "- mine\n"))
    s.edit(global_, insert(2, "- global mine\n"))
    await run_all(s, IN_FLIGHT)
    assert notes(file_text(workspace.project_store)) == PROJECT_AFTER
    assert notes(file_text(workspace.global_store)) == GLOBAL_AFTER
    # Each buffer is its file plus the user's edit: nothing lost on either side.
    assert s.buffers[project] == with_line(file_text(workspace.project_store), 2, "- mine")
    assert s.buffers[global_] == with_line(file_text(workspace.global_store), 2, "- global mine")
    assert await server_notes(s, project) == ["mine", *PROJECT_AFTER]
    assert await server_notes(s, global_) == ["global mine", *GLOBAL_AFTER]
    assert_versioned(s, editor)
    await assert_no_behind(s, project, global_)


async def test_user_typing_between_edits_gets_retried(start, workspace):
    """The user types just before two edits arrive: VS Code refuses both; each retry lands."""
    workspace.write("project", ["a", "b", "c", "d", "e"])
    workspace.write("global", ["g"])
    s = await start("visual-studio-code")
    project, global_ = s.open(workspace.project_store), s.open(workspace.global_store)
    typed: list[str] = []
    refused: list[str] = []
    project_edits = 0

    def typing_then_versioned(session: Session, edit: lsp.WorkspaceEdit) -> str | None:
        nonlocal project_edits
        if edits_for(edit, project):
            project_edits += 1
            if project_edits in (2, 6):
                typed.append(f"typed {len(typed) + 1}")
                session.edit(project, insert(2, f"- {typed[-1]}\n"))
        reason = versioned(session, edit)
        if reason is not None:
            refused.append(reason)
        return reason

    s.refuse = typing_then_versioned
    await run_all(s, IN_FLIGHT)
    assert len(typed) == 2 and len(refused) == 2
    assert notes(file_text(workspace.project_store)) == PROJECT_AFTER
    expected = with_line(
        with_line(file_text(workspace.project_store), 2, "- typed 1"), 2, "- typed 2"
    )
    assert s.buffers[project] == expected
    assert s.buffers[global_] == file_text(workspace.global_store)
    assert await server_notes(s, project) == ["typed 2", "typed 1", *PROJECT_AFTER]
    await assert_no_behind(s, project, global_)


@pytest.mark.parametrize("preset", ["visual-studio-code", "neovim"])
@pytest.mark.parametrize("catch_up", ["revert", "make the change by hand", "save"])
async def test_refused_edit_marks_the_buffer_behind_the_file(start, workspace, preset, catch_up):
    workspace.write("project", ["a", "b"])
    s = await start(preset)
    s.refuse = refuse_all
    uri = s.open(workspace.project_store)
    r = await s.command("memory.forget", {"text": "b"})
    assert r["changed"] is True and notes(file_text(workspace.project_store)) == ["a"]
    assert len(s.applied) == 2, "one edit and one retry"
    assert notes(s.buffers[uri]) == ["a", "b"]
    message = BEHIND.format("forget")
    found = await s.codes(uri, "buffer-behind-file")
    behind = [d for d in found if d.code == "buffer-behind-file"]
    assert len(behind) == 1
    assert behind[0].message == message
    assert behind[0].severity == lsp.DiagnosticSeverity.Error
    warnings = [m for m in s.client.messages if m.type == lsp.MessageType.Warning]
    assert len(warnings) == 1 and message in warnings[0].message
    # Typing elsewhere does not make the buffer hold the change.
    s.edit(uri, insert(2, "- typed\n"))
    assert await server_notes(s, uri) == ["typed", "a", "b"]
    assert [d.code for d in await s.diagnostics(uri)].count("buffer-behind-file") == 1
    if catch_up == "revert":
        s.replace_all(uri, file_text(workspace.project_store))
    elif catch_up == "save":  # the user chose the buffer's text: nothing left to undo
        workspace.project_store.write_text(s.buffers[uri], encoding="utf-8", newline="")
        s.client.text_document_did_save(
            lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
        )
    else:
        lines = s.buffers[uri].split("\n")
        at = lines.index("- b")
        s.edit(uri, [lsp.TextEdit(lsp.Range(lsp.Position(at, 0), lsp.Position(at + 1, 0)), "")])
    await s.wait_for(uri, lambda ds: not [d for d in ds if d.code == "buffer-behind-file"])


async def test_behind_buffer_still_gets_later_changes(start, workspace):
    """A buffer that lacks one change keeps the diagnostic while later commands still land."""
    workspace.write("project", ["a"])
    s = await start("visual-studio-code")
    s.refuse = refuse_all
    uri = s.open(workspace.project_store)
    await s.command("memory.add", {"text": "b"})
    await s.codes(uri, "buffer-behind-file")
    s.refuse = versioned
    await s.command("memory.add", {"text": "c"})
    assert notes(s.buffers[uri]) == ["a", "c"]
    assert notes(file_text(workspace.project_store)) == ["a", "b", "c"]
    found = await s.diagnostics(uri)
    assert [d.message for d in found if d.code == "buffer-behind-file"] == [BEHIND.format("add")]
    s.replace_all(uri, file_text(workspace.project_store))
    await s.wait_for(uri, lambda ds: not [d for d in ds if d.code == "buffer-behind-file"])


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
@pytest.mark.parametrize("prose", [[], ["# Notes"]], ids=["notes only", "with prose"])
@pytest.mark.parametrize("editor", EDITORS[::2], ids=lambda e: e.name)
async def test_clear_leaves_a_clean_buffer_equal_to_the_file(start, workspace, editor, prose, eol):
    """Issue 9 item 9: the cleared text is a prefix of the old one (no extra blank line)."""
    text = eol.join([HEADER, "", *prose, "- one", "- two", ""])
    workspace.write("project", text)
    s = await editor.start(start)
    uri = s.open(workspace.project_store, text)
    r = await s.command("memory.clear", {})
    assert r["changed"] is True and r["project"] == []
    assert notes(file_text(workspace.project_store)) == []
    assert s.buffers[uri] == file_text(workspace.project_store)
    assert await server_notes(s, uri) == []
    await assert_no_behind(s, uri)


async def test_commands_on_another_project_do_not_wait(start, workspace, tmp_path):
    """Commands are ordered per store: a stalled buffer does not hold up another store."""
    other = new_project(tmp_path / "other")
    workspace.write("project", ["a"])
    s = await start("visual-studio-code", folders=[workspace.root, other])
    uri = s.open(workspace.project_store)
    gate = asyncio.Event()
    applied: list[str] = []
    # The editor applies the edit but its didChange is held back until the gate opens.
    original = s.client.text_document_did_change

    def held(params: lsp.DidChangeTextDocumentParams) -> None:
        applied.append(params.text_document.uri)
        asyncio.get_running_loop().create_task(_send_later(gate, original, params))

    s.client.text_document_did_change = held  # type: ignore[method-assign]
    slow = asyncio.ensure_future(s.command("memory.add", {"text": "slow"}))
    await asyncio.wait_for(_until(lambda: bool(applied)), TIMEOUT)
    r = await s.command("memory.add", {"text": "elsewhere", "uri": uri_of(other)})
    assert r["changed"] is True and not slow.done()
    gate.set()
    assert (await asyncio.wait_for(slow, TIMEOUT))["changed"] is True
    assert s.buffers[uri] == file_text(workspace.project_store)


async def _send_later(gate: asyncio.Event, send: Any, params: Any) -> None:
    await gate.wait()
    send(params)


async def _until(predicate: Any) -> None:
    while not predicate():
        await asyncio.sleep(0.01)


# -- one store open under two URIs ----------------------------------------------------
# A symlinked folder and its real path, both opened: editors keep one document per URI
# (VS Code does), so the file has two buffers, and each must get a command's change, or
# saving the one left out would undo it.


def open_twice(s: Session, workspace: Any, tmp_path: Path) -> tuple[str, str]:
    """The project store opened under its real path, then through a symlinked folder."""
    link = tmp_path / "linked"
    link.symlink_to(workspace.root, target_is_directory=True)
    return s.open(workspace.project_store), s.open(link / ".pi" / "memory.md")


@pytest.mark.parametrize("editor", EDITORS, ids=lambda e: e.name)
async def test_a_store_open_under_two_uris_gets_each_change_in_both(
    start, workspace, tmp_path, editor
):
    workspace.write("project", ["a", "b"])
    s = await editor.start(start)
    real, linked = open_twice(s, workspace, tmp_path)
    assert real != linked
    await s.command("memory.add", {"text": "c"})
    await s.command("memory.forget", {"text": "a"})
    assert notes(file_text(workspace.project_store)) == ["b", "c"]
    for uri in (real, linked):
        assert s.buffers[uri] == file_text(workspace.project_store), uri
        assert await server_notes(s, uri) == ["b", "c"]
    assert_versioned(s, editor)
    await assert_no_behind(s, real, linked)


@pytest.mark.parametrize("editor", EDITORS[::2], ids=lambda e: e.name)
async def test_two_uris_each_keep_their_own_unsaved_edits(start, workspace, tmp_path, editor):
    """Each buffer follows the open-buffer rule on its own: one matched the file and ends
    equal to it; the other had unsaved edits and keeps them beside the change."""
    workspace.write("project", ["a", "b"])
    s = await editor.start(start)
    real, linked = open_twice(s, workspace, tmp_path)
    s.edit(linked, insert(2, "- mine\n"))
    await run_all(s, [("memory.add", {"text": "c"}), ("memory.forget", {"text": "b"})])
    assert notes(file_text(workspace.project_store)) == ["a", "c"]
    assert s.buffers[real] == file_text(workspace.project_store)
    assert s.buffers[linked] == with_line(file_text(workspace.project_store), 2, "- mine")
    assert await server_notes(s, linked) == ["mine", "a", "c"]
    await assert_no_behind(s, real, linked)


async def test_an_edit_refused_in_one_of_two_uris_marks_only_that_buffer(
    start, workspace, tmp_path
):
    workspace.write("project", ["a"])
    s = await start("visual-studio-code")
    real, linked = open_twice(s, workspace, tmp_path)
    s.refuse = lambda session, edit: "the user dismissed it" if edits_for(edit, linked) else None
    r = await s.command("memory.add", {"text": "b"})
    assert r["changed"] is True and notes(file_text(workspace.project_store)) == ["a", "b"]
    assert s.buffers[real] == file_text(workspace.project_store)
    assert notes(s.buffers[linked]) == ["a"]
    behind = [
        d for d in await s.codes(linked, "buffer-behind-file") if d.code == "buffer-behind-file"
    ]
    assert [d.message for d in behind] == [BEHIND.format("add")]
    assert not [d for d in await s.diagnostics(real) if d.code == "buffer-behind-file"]
    warnings = [m.message for m in s.client.messages if m.type == lsp.MessageType.Warning]
    assert len(warnings) == 1 and warnings[0].startswith(str(tmp_path / "linked")), warnings
    s.replace_all(linked, file_text(workspace.project_store))  # revert: it holds the change
    await s.wait_for(linked, lambda ds: not [d for d in ds if d.code == "buffer-behind-file"])


async def test_accept_and_move_reach_both_uris_of_a_store(start, workspace, tmp_path):
    """``memory.accept`` (review.py) and ``memory.move`` (two stores) take the same way."""
    workspace.write("project", ["a", "b"])
    workspace.write("global", ["g"])
    s = await start("visual-studio-code")
    s.refuse = versioned
    real, linked = open_twice(s, workspace, tmp_path)
    proposed = workspace.cli("add", "--propose", "--by", "codex", "c")
    assert proposed.returncode == 0, proposed.stderr
    accepted = await s.command("memory.accept", {"all": True})
    assert "error" not in accepted and accepted["results"][0]["changed"] is True, accepted
    assert notes(file_text(workspace.project_store)) == ["a", "b", "c"]
    moved = await s.command("memory.move", {"text": "a"})
    assert moved["changed"] is True
    assert notes(file_text(workspace.project_store)) == ["b", "c"]
    assert notes(file_text(workspace.global_store)) == ["g", "a"]
    for uri in (real, linked):
        assert s.buffers[uri] == file_text(workspace.project_store), uri
    await assert_no_behind(s, real, linked)


async def test_saving_one_of_two_behind_uris_is_the_file_for_the_other(start, workspace, tmp_path):
    """Both buffers refused the change; the user saves one (choosing its text): the other,
    equal to the file now, holds nothing a save would undo, as after its own save."""
    workspace.write("project", ["a"])
    s = await start("visual-studio-code")
    s.refuse = refuse_all
    real, linked = open_twice(s, workspace, tmp_path)
    await s.command("memory.add", {"text": "b"})
    for uri in (real, linked):
        await s.codes(uri, "buffer-behind-file")
    workspace.project_store.write_text(s.buffers[linked], encoding="utf-8", newline="")
    s.client.text_document_did_save(
        lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=linked))
    )
    for uri in (real, linked):
        await s.wait_for(uri, lambda ds: not [d for d in ds if d.code == "buffer-behind-file"])


async def test_a_buffer_closed_while_its_edit_is_refused_is_not_marked_behind(
    start, workspace, tmp_path
):
    """The second buffer is closed while the client answers its retried edit (refused):
    nothing is left to mark. It got ``buffer-behind-file`` published after its
    ``didClose`` (a closed file's problem the editor kept showing), a warning, and a
    missing change kept under its uri for whatever opened it next."""
    workspace.write("project", ["a"])
    s = await start("visual-studio-code")
    real, linked = open_twice(s, workspace, tmp_path)
    asked: list[int] = []

    def refuse(session: Any, edit: lsp.WorkspaceEdit) -> str | None:
        if not edits_for(edit, linked):
            return None
        asked.append(1)
        if len(asked) == 2:  # the retry: the user closes the buffer as it is refused
            session.buffers.pop(linked)
            session.client.text_document_did_close(
                lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=linked))
            )
        return "the user dismissed it"

    s.refuse = refuse
    r = await s.command("memory.add", {"text": "b"})
    assert r["changed"] is True and len(asked) == 2
    assert s.buffers[real] == file_text(workspace.project_store)
    await s.diagnostics(real)  # (a round trip: anything published before is in)
    assert not s.client.diagnostics.get(linked), s.client.diagnostics.get(linked)
    warnings = [m.message for m in s.client.messages if m.type == lsp.MessageType.Warning]
    assert warnings == []
    # Opened again with the file's text: nothing is missing from it.
    again = s.open(tmp_path / "linked" / ".pi" / "memory.md")
    s.replace_all(again, s.buffers[again] + "- c\n")
    await s.wait_for(again, lambda ds: not [d for d in ds if d.code == "buffer-behind-file"])
    await s.command("memory.list")
    assert not [d for d in await s.diagnostics(again) if d.code == "buffer-behind-file"]


@pytest.mark.parametrize("mine", [False, True], ids=["same text", "with unsaved edit"])
@pytest.mark.parametrize("editor", EDITORS, ids=lambda e: e.name)
async def test_a_uri_opened_again_without_close_gets_the_change_once(
    start, workspace, tmp_path, editor, mine
):
    """``didOpen`` sent twice for one uri (no ``didClose`` between): the second replaces the
    first (its text, version 1 again); a command edits that buffer once, keeping the
    unsaved edit it was opened with, and the other uri's buffer too."""
    workspace.write("project", ["a", "b"])
    s = await editor.start(start)
    real, linked = open_twice(s, workspace, tmp_path)
    s.edit(real, insert(2, "- typed before\n"))
    text = file_text(workspace.project_store)
    again = s.open(workspace.project_store, with_line(text, 2, "- mine") if mine else text)
    assert again == real
    await run_all(s, [("memory.add", {"text": "c"}), ("memory.forget", {"text": "a"})])
    assert notes(file_text(workspace.project_store)) == ["b", "c"]
    expected = file_text(workspace.project_store)
    assert s.buffers[linked] == expected
    assert s.buffers[real] == (with_line(expected, 2, "- mine") if mine else expected)
    assert await server_notes(s, real) == (["mine", "b", "c"] if mine else ["b", "c"])
    assert await server_notes(s, linked) == ["b", "c"]
    await assert_no_behind(s, real, linked)


@pytest.mark.parametrize("when", ["the other's edit", "its own edit"])
@pytest.mark.parametrize("editor", EDITORS, ids=lambda e: e.name)
async def test_typing_in_one_uri_while_the_other_applies_loses_nothing(
    start, workspace, tmp_path, editor, when
):
    """The user types in the linked buffer while the server waits on the real one's
    ``workspace/applyEdit`` (or just as the linked one's own edit arrives, made for the
    text before: refused by version, then retried): the file gets the change, each buffer
    gets it, the typing stays."""
    workspace.write("project", ["a", "b"])
    s = await editor.start(start)
    real, linked = open_twice(s, workspace, tmp_path)
    typed: list[int] = []
    during = real if when == "the other's edit" else linked

    def type_in_linked(session: Session, edit: lsp.WorkspaceEdit) -> str | None:
        if edits_for(edit, during) and not typed:
            typed.append(1)
            session.edit(linked, insert(2, "- mine\n"))
        return versioned(session, edit) if editor.checks_versions else None

    s.refuse = type_in_linked
    await run_all(s, [("memory.add", {"text": "c"}), ("memory.forget", {"text": "b"})])
    assert typed
    assert notes(file_text(workspace.project_store)) == ["a", "c"]
    assert s.buffers[real] == file_text(workspace.project_store)
    assert s.buffers[linked] == with_line(file_text(workspace.project_store), 2, "- mine")
    assert await server_notes(s, linked) == ["mine", "a", "c"]
    await assert_no_behind(s, real, linked)


# -- a symlinked folder pointed at another project while its store is open ------------
# The buffer's path (``<link>/.pi/memory.md``) leads to the other project's store now,
# and an editor's save writes there. The document follows its path (it is that store:
# diagnostics, hover and commands agree), and a buffer whose text came from the first
# store is marked, warned about once, and never edited with either store's changes.

REPOINTED = (
    "this buffer was opened from {}; its path now leads to {}; saving it would overwrite "
    "that file — revert the buffer to reload it"
)
SAVED_OVER = (
    "this buffer was opened from {}; its path now leads to {}, and saving it wrote this "
    "buffer's text over that file"
)


def other_project(tmp_path: Path, notes_: list[str], recall_off: bool = False) -> Path:
    """A second project (a git root) with these notes in its store; its store's path."""
    other = new_project(tmp_path / "other")
    (other / ".pi").mkdir(exist_ok=True)
    if recall_off:
        (other / ".pi" / "bytefly.json").write_text('{"memory": {"inject": false}}')
    store = other / ".pi" / "memory.md"
    store.write_text(store_text(*notes_), encoding="utf-8")
    return store


def repoint(link: Path, to: Path) -> None:
    link.unlink()
    link.symlink_to(to, target_is_directory=True)


def recheck(s: Session, *paths: Path) -> None:
    """A watched-file event (the client saw a store change): the server looks again."""
    s.client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            changes=[lsp.FileEvent(uri=uri_of(p), type=lsp.FileChangeType.Changed) for p in paths]
        )
    )


def real(path: Path) -> str:
    return os.path.realpath(path)


def warnings_of(s: Session) -> list[str]:
    return [m.message for m in s.client.messages if m.type == lsp.MessageType.Warning]


async def behind_messages(s: Session, uri: str) -> list[str]:
    return [d.message for d in await s.diagnostics(uri) if d.code == "buffer-behind-file"]


async def hover_text(s: Session, uri: str, line: int) -> str:
    h = await asyncio.wait_for(
        s.client.text_document_hover_async(
            lsp.HoverParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line, 3)
            )
        ),
        TIMEOUT,
    )
    assert h is not None and isinstance(h.contents, lsp.MarkupContent)
    return h.contents.value


@pytest.mark.parametrize("preset", ["visual-studio-code", "neovim"])
async def test_a_repointed_link_marks_its_buffer_once_and_a_revert_clears_it(
    start, workspace, tmp_path, preset
):
    """A re-check finds the linked buffer's path leading to the other project's store:
    the buffer (the first store's text) gets the Error and one warning saying so; its
    diagnostics, hover and commands all take it as the other store; a second re-check
    says nothing new; a revert (the other file's text) clears the mark, and the buffer
    then gets that store's changes like any."""
    other_store = other_project(tmp_path, ["o"], recall_off=True)
    workspace.write("project", ["a", "b"])
    s = await start(preset)
    s.refuse = versioned if preset == "visual-studio-code" else None
    real_uri, linked = open_twice(s, workspace, tmp_path)
    assert "In recall" in await hover_text(s, linked, 2)
    repoint(tmp_path / "linked", other_store.parent.parent)
    recheck(s, other_store)
    message = REPOINTED.format(real(workspace.project_store), real(other_store))
    found = await s.codes(linked, "buffer-behind-file", "recall-off")
    behind = [d for d in found if d.code == "buffer-behind-file"]
    assert [d.message for d in behind] == [message]
    assert behind[0].severity == lsp.DiagnosticSeverity.Error
    assert warnings_of(s) == [f"{tmp_path / 'linked' / '.pi' / 'memory.md'}: {message}"]
    # One answer: the linked document is the other store's, for hover and commands alike.
    assert "Recall is off" in await hover_text(s, linked, 2)
    path = await s.command("memory.path", {"uri": linked})
    assert path["project"] == real(other_store)
    assert not await behind_messages(s, real_uri)
    recheck(s, other_store)
    await s.command("memory.list")  # (a round trip: the re-check is handled)
    assert await behind_messages(s, linked) == [message]
    assert len(warnings_of(s)) == 1, warnings_of(s)
    s.replace_all(linked, file_text(other_store))  # revert: the file its path leads to
    await s.wait_for(linked, lambda ds: not [d for d in ds if d.code == "buffer-behind-file"])
    r = await s.command("memory.add", {"text": "o2", "uri": linked})
    assert r["changed"] is True and notes(file_text(other_store)) == ["o", "o2"]
    assert s.buffers[linked] == file_text(other_store)
    assert notes(s.buffers[real_uri]) == ["a", "b"] == notes(file_text(workspace.project_store))
    await assert_no_behind_now(s, real_uri, linked)


async def assert_no_behind_now(s: Session, *uris: str) -> None:
    for uri in uris:
        assert not await behind_messages(s, uri), uri


async def test_commands_after_a_repoint_never_mix_two_stores_in_a_buffer(
    start, workspace, tmp_path
):
    """The link is pointed at another project with no re-check between: a command on the
    first project reaches its file and its real buffer, not the linked one (whose save
    now writes the other file); a command on the other project (by the link's uri)
    reaches that file, and leaves the linked buffer (the first store's text) unedited
    and marked. No note of either store is lost on disk."""
    other_store = other_project(tmp_path, ["o"])
    workspace.write("project", ["a", "b"])
    s = await start("visual-studio-code")
    s.refuse = versioned
    real_uri, linked = open_twice(s, workspace, tmp_path)
    assert await server_notes(s, linked) == ["a", "b"]  # (the server has both open)
    repoint(tmp_path / "linked", other_store.parent.parent)
    r = await s.command("memory.add", {"text": "c"})
    assert "error" not in r and r["changed"] is True, r
    assert notes(file_text(workspace.project_store)) == ["a", "b", "c"]
    assert notes(file_text(other_store)) == ["o"]
    assert s.buffers[real_uri] == file_text(workspace.project_store)
    assert notes(s.buffers[linked]) == ["a", "b"]  # not given the first store's change
    message = REPOINTED.format(real(workspace.project_store), real(other_store))
    assert await behind_messages(s, linked) == [message]
    r = await s.command("memory.forget", {"text": "a"})
    assert r["changed"] is True and notes(file_text(workspace.project_store)) == ["b", "c"]
    assert s.buffers[real_uri] == file_text(workspace.project_store)
    assert notes(s.buffers[linked]) == ["a", "b"]
    # A command naming the link goes where the link leads: the file gets it, the buffer
    # holding the first store's notes is not edited (it stays marked: revert to see it).
    r = await s.command("memory.add", {"text": "o2", "uri": linked})
    assert "error" not in r and r["changed"] is True, r
    assert notes(file_text(other_store)) == ["o", "o2"]
    assert notes(file_text(workspace.project_store)) == ["b", "c"]
    assert notes(s.buffers[linked]) == ["a", "b"]
    assert await behind_messages(s, linked) == [message]
    assert not await behind_messages(s, real_uri)
    assert warnings_of(s) == [f"{tmp_path / 'linked' / '.pi' / 'memory.md'}: {message}"]


async def test_a_repointed_buffer_equal_to_the_new_file_is_that_stores_buffer(
    start, workspace, tmp_path
):
    """The two stores hold the same text when the link moves: the linked buffer is the
    other store's buffer at once (nothing to mark), gets its changes, and no longer the
    first store's (saving it would write them into the other project)."""
    other_store = other_project(tmp_path, ["a", "b"])
    workspace.write("project", ["a", "b"])
    s = await start("visual-studio-code")
    s.refuse = versioned
    real_uri, linked = open_twice(s, workspace, tmp_path)
    assert await server_notes(s, linked) == ["a", "b"]  # (opened before the link moves)
    repoint(tmp_path / "linked", other_store.parent.parent)
    r = await s.command("memory.add", {"text": "c"})
    assert r["changed"] is True and notes(file_text(workspace.project_store)) == ["a", "b", "c"]
    assert s.buffers[real_uri] == file_text(workspace.project_store)
    assert s.buffers[linked] == file_text(other_store)
    r = await s.command("memory.forget", {"text": "a", "uri": linked})
    assert r["changed"] is True and notes(file_text(other_store)) == ["b"]
    assert s.buffers[linked] == file_text(other_store)
    assert notes(file_text(workspace.project_store)) == ["a", "b", "c"]
    await assert_no_behind(s, real_uri, linked)


async def test_a_workspace_folder_that_is_a_repointed_link(start, workspace, tmp_path):
    """The workspace folder itself is the link and its store is open only through it: once
    the link leads to another project, a command (default project: where the folder
    leads) writes that project's file, and the buffer (the first project's notes) is
    marked rather than edited, so neither a mixed buffer nor a silent save can drop the
    other project's notes."""
    other_store = other_project(tmp_path, ["o"])
    workspace.write("project", ["a", "b"])
    link = tmp_path / "linked"
    link.symlink_to(workspace.root, target_is_directory=True)
    s = await start("visual-studio-code", folders=[link])
    s.refuse = versioned
    uri = s.open(link / ".pi" / "memory.md")
    assert await server_notes(s, uri) == ["a", "b"]
    repoint(link, other_store.parent.parent)
    r = await s.command("memory.add", {"text": "new"})
    assert "error" not in r and r["changed"] is True, r
    assert notes(file_text(other_store)) == ["o", "new"]
    assert notes(file_text(workspace.project_store)) == ["a", "b"]
    assert notes(s.buffers[uri]) == ["a", "b"]
    message = REPOINTED.format(real(workspace.project_store), real(other_store))
    assert await behind_messages(s, uri) == [message]
    assert warnings_of(s) == [f"{link / '.pi' / 'memory.md'}: {message}"]
    s.replace_all(uri, file_text(other_store))
    await s.wait_for(uri, lambda ds: not [d for d in ds if d.code == "buffer-behind-file"])
    assert await server_notes(s, uri) == ["o", "new"]


async def test_saving_a_buffer_after_its_link_moved_says_what_it_overwrote(
    start, workspace, tmp_path
):
    """Nothing looked between the move and the save: the save has written the first
    store's text over the other file. The server says so once; the buffer is that
    file's now (no mark: it equals the file)."""
    other_store = other_project(tmp_path, ["o"])
    workspace.write("project", ["a", "b"])
    s = await start("visual-studio-code")
    real_uri, linked = open_twice(s, workspace, tmp_path)
    assert await server_notes(s, linked) == ["a", "b"]  # (opened before the link moves)
    repoint(tmp_path / "linked", other_store.parent.parent)
    (tmp_path / "linked" / ".pi" / "memory.md").write_text(s.buffers[linked], encoding="utf-8")
    s.client.text_document_did_save(
        lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=linked))
    )
    await s.command("memory.list")  # (a round trip: the save is handled)
    message = SAVED_OVER.format(real(workspace.project_store), real(other_store))
    assert warnings_of(s) == [f"{tmp_path / 'linked' / '.pi' / 'memory.md'}: {message}"]
    assert not await behind_messages(s, linked)
    r = await s.command("memory.add", {"text": "c", "uri": linked})
    assert r["changed"] is True and s.buffers[linked] == file_text(other_store)
    assert notes(s.buffers[real_uri]) == ["a", "b"]


async def test_a_link_pointed_back_clears_the_mark_and_its_store_edits_it_again(
    start, workspace, tmp_path
):
    """A → B (marked) → A again: the buffer holds A's text, its path leads to A: no mark,
    no second warning, and commands on A reach it again."""
    other_store = other_project(tmp_path, ["o"])
    workspace.write("project", ["a", "b"])
    s = await start("visual-studio-code")
    s.refuse = versioned
    real_uri, linked = open_twice(s, workspace, tmp_path)
    assert await server_notes(s, linked) == ["a", "b"]
    repoint(tmp_path / "linked", other_store.parent.parent)
    recheck(s, other_store)
    await s.codes(linked, "buffer-behind-file")
    repoint(tmp_path / "linked", workspace.root)
    recheck(s, workspace.project_store)
    await s.wait_for(linked, lambda ds: not [d for d in ds if d.code == "buffer-behind-file"])
    assert len(warnings_of(s)) == 1
    r = await s.command("memory.add", {"text": "c"})
    assert r["changed"] is True
    for uri in (real_uri, linked):
        assert s.buffers[uri] == file_text(workspace.project_store), uri
    assert notes(file_text(other_store)) == ["o"]
    await assert_no_behind_now(s, real_uri, linked)


@pytest.mark.parametrize("where", ["a folder of no project", "nowhere (dangling)"])
async def test_a_link_pointed_where_no_store_is_marks_the_buffer_and_answers_all(
    start, workspace, tmp_path, where
):
    """The link leads to a folder without `.pi` (not a repository) or to nothing at all:
    the buffer's path leads to no file. It is marked (saving would write its text
    there), every request is answered, no command edits it, and A's file and buffer
    go on as before."""
    workspace.write("project", ["a", "b"])
    target = tmp_path / "plain"
    if where.startswith("a folder"):
        target.mkdir()
    s = await start("visual-studio-code")
    s.refuse = versioned
    real_uri, linked = open_twice(s, workspace, tmp_path)
    assert await server_notes(s, linked) == ["a", "b"]
    repoint(tmp_path / "linked", target)
    recheck(s, workspace.project_store)
    found = await s.codes(linked, "buffer-behind-file")
    [behind] = [d.message for d in found if d.code == "buffer-behind-file"]
    assert behind.startswith(f"this buffer was opened from {real(workspace.project_store)};")
    assert f"leads to {real(target / '.pi' / 'memory.md')}, which does not exist" in behind
    assert await hover_text(s, linked, 2)
    assert await server_notes(s, linked) == ["a", "b"]
    r = await s.command("memory.list", {"uri": linked})
    assert isinstance(r, dict)
    r = await s.command("memory.add", {"text": "x", "uri": linked})
    # Nothing creates a project (SPEC §1): its missing store, outside every folder, names none.
    assert r["changed"] is False and r["error"].startswith("No such project directory"), r
    assert not (target / ".pi" / "memory.md").exists()
    r = await s.command("memory.add", {"text": "c"})
    assert r["changed"] is True and notes(file_text(workspace.project_store)) == ["a", "b", "c"]
    assert s.buffers[real_uri] == file_text(workspace.project_store)
    assert notes(s.buffers[linked]) == ["a", "b"]
    assert len(warnings_of(s)) == 1, warnings_of(s)


async def test_a_link_to_a_project_whose_store_is_a_symlink(start, workspace, tmp_path):
    """The link leads to a project whose `memory.md` is itself a symlink (refused): the
    buffer is that store now (the `symlink` error shows), marked, never edited; a command
    naming it is refused and answered."""
    other = new_project(tmp_path / "other")
    (other / ".pi").mkdir()
    secret = tmp_path / "secret.md"
    secret.write_text(store_text("s"), encoding="utf-8")
    (other / ".pi" / "memory.md").symlink_to(secret)
    workspace.write("project", ["a", "b"])
    s = await start("visual-studio-code")
    _, linked = open_twice(s, workspace, tmp_path)
    assert await server_notes(s, linked) == ["a", "b"]
    repoint(tmp_path / "linked", other)
    recheck(s, other / ".pi" / "memory.md")
    await s.codes(linked, "buffer-behind-file", "symlink")
    r = await s.command("memory.add", {"text": "x", "uri": linked})
    assert "error" in r and "symlinked" in r["error"], r
    assert secret.read_text(encoding="utf-8") == store_text("s")
    assert notes(s.buffers[linked]) == ["a", "b"]
    # Reverting shows the file through the link: still no file the server may read.
    s.replace_all(linked, store_text("s"))
    await s.command("memory.list")
    assert await behind_messages(s, linked)


async def test_a_link_moved_onto_a_store_open_by_its_real_path(start, workspace, tmp_path):
    """B's store is open by its real path too when the link moves onto it: B's commands
    edit that buffer and leave the linked one (A's text) marked; once reverted, the two
    are B's buffers and both get B's changes, and A's commands reach neither."""
    other_store = other_project(tmp_path, ["o"])
    workspace.write("project", ["a"])
    s = await start("visual-studio-code")
    s.refuse = versioned
    real_uri, linked = open_twice(s, workspace, tmp_path)
    other_uri = s.open(other_store)
    assert await server_notes(s, other_uri) == ["o"]
    repoint(tmp_path / "linked", other_store.parent.parent)
    r = await s.command("memory.add", {"text": "o2", "uri": other_uri})
    assert r["changed"] is True and notes(file_text(other_store)) == ["o", "o2"]
    assert s.buffers[other_uri] == file_text(other_store)
    assert notes(s.buffers[linked]) == ["a"]
    assert await behind_messages(s, linked)
    s.replace_all(linked, file_text(other_store))
    await s.wait_for(linked, lambda ds: not [d for d in ds if d.code == "buffer-behind-file"])
    await s.command("memory.forget", {"text": "o", "uri": linked})
    await s.command("memory.add", {"text": "a2"})
    assert notes(file_text(other_store)) == ["o2"]
    assert notes(file_text(workspace.project_store)) == ["a", "a2"]
    assert s.buffers[other_uri] == s.buffers[linked] == file_text(other_store)
    assert s.buffers[real_uri] == file_text(workspace.project_store)
    await assert_no_behind_now(s, real_uri, linked, other_uri)


async def test_a_global_store_opened_through_a_linked_agent_dir_that_moves(
    start, workspace, tmp_path
):
    """``agentDir`` is a link to one folder, then to another: the global store's buffer
    (opened through the link) is the new folder's store, marked while it holds the old
    one's notes; a global command writes the new file and leaves the buffer alone."""
    first, second = tmp_path / "agent-a", tmp_path / "agent-b"
    for folder, note in ((first, "g1"), (second, "g2")):
        folder.mkdir()
        (folder / "memory.md").write_text(store_text(note), encoding="utf-8")
    agent = tmp_path / "agent-link"
    agent.symlink_to(first, target_is_directory=True)
    s = await start("visual-studio-code", init_options={"agentDir": str(agent)})
    s.refuse = versioned
    uri = s.open(agent / "memory.md")
    assert await server_notes(s, uri) == ["g1"]
    repoint(agent, second)
    r = await s.command("memory.add", {"text": "g3", "scope": "global"})
    assert r["changed"] is True, r
    assert notes(file_text(second / "memory.md")) == ["g2", "g3"]
    assert notes(file_text(first / "memory.md")) == ["g1"]
    assert notes(s.buffers[uri]) == ["g1"]
    message = REPOINTED.format(real(first / "memory.md"), real(second / "memory.md"))
    assert await behind_messages(s, uri) == [message]
    s.replace_all(uri, file_text(second / "memory.md"))
    await s.wait_for(uri, lambda ds: not [d for d in ds if d.code == "buffer-behind-file"])
    await s.command("memory.forget", {"text": "g2", "scope": "global"})
    assert s.buffers[uri] == file_text(second / "memory.md")


async def test_changes_a_buffer_lacked_show_again_when_its_link_is_pointed_back(
    start, workspace, tmp_path
):
    """The linked buffer refused a command's change (marked as lacking it); the link then
    leads to another project (one mark: that one); pointed back, the change it lacks from
    its own file is what it is marked for again, until reverted."""
    other_store = other_project(tmp_path, ["o"])
    workspace.write("project", ["a"])
    s = await start("visual-studio-code")
    real_uri, linked = open_twice(s, workspace, tmp_path)
    s.refuse = lambda session, edit: "dismissed" if edits_for(edit, linked) else None
    await s.command("memory.add", {"text": "b"})
    assert await behind_messages(s, linked) == [BEHIND.format("add")]
    repoint(tmp_path / "linked", other_store.parent.parent)
    recheck(s, other_store)
    moved = REPOINTED.format(real(workspace.project_store), real(other_store))
    await s.wait_for(
        linked, lambda ds: [d.message for d in ds if d.code == "buffer-behind-file"] == [moved]
    )
    repoint(tmp_path / "linked", workspace.root)
    recheck(s, workspace.project_store)
    await s.wait_for(
        linked,
        lambda ds: (
            [d.message for d in ds if d.code == "buffer-behind-file"] == [BEHIND.format("add")]
        ),
    )
    s.replace_all(linked, file_text(workspace.project_store))
    await s.wait_for(linked, lambda ds: not [d for d in ds if d.code == "buffer-behind-file"])
    assert s.buffers[real_uri] == file_text(workspace.project_store)


async def test_ten_commands_in_flight_as_the_link_moves(start, workspace, tmp_path):
    """The link is pointed elsewhere while ten commands on the first store are in flight:
    every command is answered, the first store's file gets them all, the real buffer
    ends equal to it, and the other project's file is untouched."""
    other_store = other_project(tmp_path, ["o"])
    workspace.write("project", ["a", "b", "c", "d", "e"])
    workspace.write("global", ["g"])
    s = await start("visual-studio-code")
    s.refuse = versioned
    real_uri, linked = open_twice(s, workspace, tmp_path)
    assert await server_notes(s, linked) == ["a", "b", "c", "d", "e"]
    running = asyncio.ensure_future(run_all(s, IN_FLIGHT))
    await asyncio.sleep(0.05)
    repoint(tmp_path / "linked", other_store.parent.parent)
    await running
    assert notes(file_text(workspace.project_store)) == PROJECT_AFTER
    assert notes(file_text(other_store)) == ["o"]
    assert s.buffers[real_uri] == file_text(workspace.project_store)
    await s.command("memory.list")
    if s.buffers[linked] != file_text(other_store):
        assert await behind_messages(s, linked)


async def test_a_marked_uri_opened_again_is_the_file_it_opens(start, workspace, tmp_path):
    """``didOpen`` again (no ``didClose``) for the marked linked uri, with what its path
    leads to now: the new document is that file's buffer, with no mark left over."""
    other_store = other_project(tmp_path, ["o"])
    workspace.write("project", ["a"])
    s = await start("visual-studio-code")
    s.refuse = versioned
    _, linked = open_twice(s, workspace, tmp_path)
    assert await server_notes(s, linked) == ["a"]
    repoint(tmp_path / "linked", other_store.parent.parent)
    recheck(s, other_store)
    await s.codes(linked, "buffer-behind-file")
    assert s.open(tmp_path / "linked" / ".pi" / "memory.md") == linked
    await s.wait_for(linked, lambda ds: not [d for d in ds if d.code == "buffer-behind-file"])
    await s.command("memory.add", {"text": "o2", "uri": linked})
    assert s.buffers[linked] == file_text(other_store)
    assert notes(file_text(other_store)) == ["o", "o2"]


class _RepointOnAsk(list[Any]):
    """The client's questions, the folder link pointed elsewhere as the first one comes."""

    def __init__(self, link: Path, to: Path) -> None:
        super().__init__()
        self.link, self.to = link, to

    def append(self, item: Any) -> None:
        if not self:
            repoint(self.link, self.to)
        super().append(item)


async def test_a_clear_confirmed_after_its_folder_link_moved_clears_nothing(
    start, workspace, tmp_path
):
    """memory.clear asks about one file (its notes counted, its path named); the project's
    ``.pi`` is a symlink to a folder inside the project, pointed at another folder there
    while the question is open. The user's "Clear" was for the notes asked about: those
    of the file it leads to now are not cleared, nor anything else, and the result says
    why. (A workspace folder that is a link is resolved when its project is made: that
    link moving leaves the question's file the one cleared.)"""
    first, second = workspace.root / "mem-a", workspace.root / "mem-b"
    first.mkdir()
    second.mkdir()
    (first / "memory.md").write_text(store_text("a", "b"), encoding="utf-8")
    (second / "memory.md").write_text(store_text("o", "p", "q"), encoding="utf-8")
    (workspace.root / ".pi").symlink_to(first, target_is_directory=True)
    s = await start("visual-studio-code", init_options={"trusted": True})
    s.asked = _RepointOnAsk(workspace.root / ".pi", second)
    r = await s.command("memory.clear", {})
    assert len(s.asked) == 1 and "Clear all 2 project" in s.asked[0].message
    assert r["changed"] is False and "error" in r, r
    assert real(second / "memory.md") in r["error"]
    assert notes(file_text(second / "memory.md")) == ["o", "p", "q"]
    assert notes(file_text(first / "memory.md")) == ["a", "b"]
