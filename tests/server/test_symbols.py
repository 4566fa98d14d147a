"""``memory_ls/server/symbols.py``: the outline and the note search (SPEC §7 Also)."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from tests.hidden_notes import EVIL, SHOWN
from tests.server.conftest import CONVERTER, InProcess


@pytest.mark.parametrize("preset", ["visual-studio-code", "neovim", "emacs"])
async def test_symbols_show_a_notes_hidden_characters_escaped(
    server: InProcess, preset: str
) -> None:
    # The outline and a picker are where a person reads the notes: a bidi override must
    # not reorder what a symbol says (its range still spans the note as it is).
    store = server.workspace.write("project", [EVIL, "plain note"])
    await server.initialize(preset, init_options={"trusted": True})
    uri = server.open(store)
    answer = await server.client.request(
        lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL,
        lsp.DocumentSymbolParams(text_document=lsp.TextDocumentIdentifier(uri=uri)),
    )
    names = [symbol["name"] for symbol in answer["result"]]
    assert names == [SHOWN, "plain note"]
    found = await server.client.request(
        lsp.WORKSPACE_SYMBOL, lsp.WorkspaceSymbolParams(query="staging")
    )
    symbols = [CONVERTER.structure(s, lsp.SymbolInformation) for s in found["result"]]
    assert [s.name for s in symbols] == [SHOWN]
    assert store.read_text(encoding="utf-8").count(EVIL) == 1  # the file is as it was
