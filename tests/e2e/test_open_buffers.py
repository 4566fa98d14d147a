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

from .conftest import TIMEOUT, Session


def versioned(session: Session, edit: lsp.WorkspaceEdit) -> str | None:
    """VS Code's rule: an edit made for another version of a buffer is refused whole."""
    for change in edit.document_changes or []:
        if isinstance(change, lsp.TextDocumentEdit):
            uri, version = change.text_document.uri, change.text_document.version
            if version is not None and version != session.versions.get(uri):
                return f"version {version} is not the buffer's {session.versions.get(uri)}"
    return None


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


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
@pytest.mark.parametrize("prose", [[], ["# Notes"]], ids=["notes only", "with prose"])
@pytest.mark.parametrize("editor", EDITORS[::2], ids=lambda e: e.name)
async def test_clear_leaves_a_clean_buffer_equal_to_the_file(start, ws, editor, prose, eol):
    """Issue 9 item 9: the cleared text is a prefix of the old one (no extra blank line)."""
    text = ws.write(ws.project_store, eol.join([HEADER, "", *prose, "- one", "- two", ""]))
    s = await editor.start(start)
    uri = s.open(ws.project_store, text)
    r = await s.command("memory.clear", {})
    assert r["changed"] is True and r["project"] == []
    assert notes(file_text(ws.project_store)) == []
    assert s.buffers[uri] == file_text(ws.project_store)
    assert await server_notes(s, uri) == []
    await assert_no_behind(s, uri)
