"""Open buffers under commands in flight (SPEC §7 "Open buffers"; issue 9, items 1 and 9).

The real server over stdio, driven by two kinds of editor: one that refuses an
edit made for another version of the buffer (as VS Code does) and one that
applies unversioned ``changes`` as they come (as Neovim does). Ten commands are
sent at once; in the end each file holds every command's change, and each
buffer holds every change plus the user's unsaved edits.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp

from memory_ls.core.text import HEADER
from tests.conftest import new_project

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


async def test_a_symlink_repointed_after_open_does_not_edit_the_other_project(
    start, workspace, tmp_path
):
    """The linked folder is pointed at another project after its store was opened: a
    command on the first project is answered and lands in its file and both its buffers;
    the other project's store is not touched."""
    other = new_project(tmp_path / "other")
    (other / ".pi").mkdir(exist_ok=True)
    other_store = other / ".pi" / "memory.md"
    other_store.write_text(f"{HEADER}\n\n- o\n", encoding="utf-8")
    workspace.write("project", ["a", "b"])
    s = await start("visual-studio-code")
    s.refuse = versioned
    real, linked = open_twice(s, workspace, tmp_path)
    assert await server_notes(s, linked) == ["a", "b"]  # (the server has both open)
    link = tmp_path / "linked"
    link.unlink()
    link.symlink_to(other, target_is_directory=True)
    r = await s.command("memory.add", {"text": "c"})
    assert "error" not in r and r["changed"] is True, r
    assert notes(file_text(workspace.project_store)) == ["a", "b", "c"]
    assert notes(file_text(other_store)) == ["o"]
    assert s.buffers[real] == file_text(workspace.project_store)
    assert await server_notes(s, real) == ["a", "b", "c"]
    r = await s.command("memory.forget", {"text": "a"})
    assert r["changed"] is True and notes(file_text(workspace.project_store)) == ["b", "c"]
    # The linked buffer is the document of the file it was opened as (the server keeps the
    # file a uri named at didOpen): it holds that file's text and gets its changes.
    for uri in (real, linked):
        assert s.buffers[uri] == file_text(workspace.project_store), uri
    await assert_no_behind(s, real, linked)
    # A command naming the link now goes where the link leads, and leaves both alone.
    r = await s.command("memory.add", {"text": "o2", "uri": linked})
    assert "error" not in r and r["changed"] is True, r
    assert notes(file_text(other_store)) == ["o", "o2"]
    assert notes(file_text(workspace.project_store)) == ["b", "c"]
    for uri in (real, linked):
        assert s.buffers[uri] == file_text(workspace.project_store), uri
