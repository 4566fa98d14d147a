"""The server's wiring and its open-document accessor, in-process (no transport).

``create_server`` composes the feature modules, each registering itself; the
accessor (``ls.document``, ``ls.open_documents``, ``ls.is_open``, ``ls.track``,
``ls.untrack``) is the one way handlers reach an open document and its state.
"""

from __future__ import annotations

from lsprotocol import types as lsp
from pygls.uris import from_fs_path

from memory_ls.core.text import HEADER
from memory_ls.server.commands import COMMANDS
from memory_ls.server.diagnostics import DocState
from memory_ls.server.documents import MemoryDocument
from memory_ls.server.server import MemoryServer, create_server
from memory_ls.server.settings import Settings
from tests.conftest import Workspace


def test_every_feature_and_command_is_registered() -> None:
    ls = create_server()
    assert set(ls.protocol.fm.features) == {
        lsp.INITIALIZE,
        lsp.INITIALIZED,
        lsp.TEXT_DOCUMENT_DID_OPEN,
        lsp.TEXT_DOCUMENT_DID_CHANGE,
        lsp.TEXT_DOCUMENT_DID_CLOSE,
        lsp.TEXT_DOCUMENT_DID_SAVE,
        lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        lsp.WORKSPACE_DID_CHANGE_CONFIGURATION,
        lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS,
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.TEXT_DOCUMENT_CODE_LENS,
        lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL,
        lsp.WORKSPACE_SYMBOL,
        lsp.TEXT_DOCUMENT_HOVER,
        lsp.TEXT_DOCUMENT_FORMATTING,
    }
    # Pull diagnostics are registered at initialize, only for a client that declares them.
    assert lsp.TEXT_DOCUMENT_DIAGNOSTIC not in ls.protocol.fm.features
    assert set(ls.protocol.fm.commands) == set(COMMANDS)
    assert ls.protocol.fm.feature_options[lsp.TEXT_DOCUMENT_DID_SAVE] == lsp.SaveOptions(
        include_text=False
    )


def _open(ls: MemoryServer, workspace: Workspace, text: str) -> tuple[MemoryDocument, DocState]:
    path = workspace.write("project", text)
    info = ls.projects.describe(path)
    assert info is not None and info.scope == "project"
    doc = MemoryDocument(from_fs_path(str(path)) or str(path), path, text, 1)
    state = DocState(info)
    ls.track(doc, state)
    return doc, state


def test_the_accessor_pairs_each_open_document_with_its_state(workspace: Workspace) -> None:
    ls = create_server()
    ls.projects.configure(Settings(agent_dir=str(workspace.agent_dir)), [workspace.root])
    doc, state = _open(ls, workspace, HEADER + "\n\n- use pnpm\n")

    found = ls.document(doc.uri)
    assert found is not None and found.doc is doc and found.state is state
    assert ls.open_documents() == [found]
    assert ls.is_open(doc)
    assert ls.document("file:///elsewhere/.pi/memory.md") is None

    assert ls.untrack(doc.uri) is doc
    assert ls.document(doc.uri) is None and ls.open_documents() == []
    assert not ls.is_open(doc)
    assert ls.untrack(doc.uri) is None

    # Opened again: the old document object is no longer the open one.
    again, _ = _open(ls, workspace, HEADER + "\n\n- use pnpm\n- run make test\n")
    assert ls.is_open(again) and not ls.is_open(doc)
    reopened = ls.document(doc.uri)
    assert reopened is not None and reopened.doc is again
