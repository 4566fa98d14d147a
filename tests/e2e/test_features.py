"""Code actions (each edit applied and checked), symbols, hover, lens, formatting,
watchers and robustness; documents that are not memory get none of them."""

from __future__ import annotations

import ast
import asyncio
import json

import pytest
from lsprotocol import types as lsp

from memory_ls.core.text import HEADER
from tests.conftest import store_text

from .conftest import PRESETS, TIMEOUT, apply_text_edits, code_actions, edits_for, uri_of


def notes_of(text: str) -> list[str]:
    return [x[2:] for x in text.split("\n") if x.startswith("- ") and x[2:].strip()]


async def actions_for(s, uri, diag=None, line=None, only=None, end_line=None):
    line = diag.range.start.line if diag else line
    rng = (
        diag.range
        if diag
        else lsp.Range(
            start=lsp.Position(line, 0),
            end=lsp.Position(end_line if end_line is not None else line, 1),
        )
    )
    return await asyncio.wait_for(
        s.client.text_document_code_action_async(
            lsp.CodeActionParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri),
                range=rng,
                context=lsp.CodeActionContext(diagnostics=[diag] if diag else [], only=only),
            )
        ),
        TIMEOUT,
    )


def applied(s, uri, action) -> str:
    assert action.edit is not None
    return apply_text_edits(s.buffers[uri], edits_for(action.edit, uri), s.encoding)


@pytest.mark.parametrize("preset", PRESETS)
async def test_quick_fixes(start, workspace, preset):
    workspace.write("global", ["shared fact"])
    notes = ["use pnpm", "use pnpm", "Use PNPM!", "tab\there", "zero\u200bwidth 😀", "shared fact"]
    workspace.write("project", store_text(*notes) + "-   \n")
    s = await start(preset)
    uri = s.open(workspace.project_store)
    ds = await s.codes(
        uri,
        "duplicate",
        "control-characters",
        "hidden-unicode",
        "blank-note",
        "cross-scope-duplicate",
    )
    by = {}
    for d in ds:
        by.setdefault(str(d.code), []).append(d)
    exact = next(d for d in by["duplicate"] if d.range.start.line == 3)
    acts = await actions_for(s, uri, exact, only=[lsp.CodeActionKind.QuickFix])
    assert all(a.kind == lsp.CodeActionKind.QuickFix for a in acts)
    assert notes_of(applied(s, uri, acts[0])) == [
        "use pnpm",
        "Use PNPM!",
        "tab\there",
        "zero\u200bwidth 😀",
        "shared fact",
    ]
    near = next(d for d in by["duplicate"] if d.range.start.line == 4)
    acts = await actions_for(s, uri, near, only=[lsp.CodeActionKind.QuickFix])
    results = [notes_of(applied(s, uri, a))[:3] for a in acts]
    assert ["use pnpm", "use pnpm", "tab\there"] in results  # keep the first wording
    assert ["Use PNPM!", "use pnpm", "tab\there"] in results  # keep the later wording
    assert ["use pnpm; Use PNPM!", "use pnpm", "tab\there"] in results  # merge
    acts = await actions_for(s, uri, by["control-characters"][0], only=["quickfix"])
    assert "tab here" in notes_of(applied(s, uri, acts[0]))
    acts = await actions_for(s, uri, by["hidden-unicode"][0], only=["quickfix"])
    assert "zerowidth 😀" in notes_of(applied(s, uri, acts[0]))
    acts = await actions_for(s, uri, by["blank-note"][0], only=["quickfix"])
    assert "-   " not in applied(s, uri, acts[0])
    acts = await actions_for(s, uri, by["cross-scope-duplicate"][0], only=["quickfix"])
    assert "shared fact" not in notes_of(applied(s, uri, acts[0]))
    # fixAll: later exact duplicates, blank bullets, controls, hidden characters
    acts = await actions_for(s, uri, line=0, only=["source.fixAll"])
    assert [a.kind for a in acts] == ["source.fixAll.memory"]
    assert notes_of(applied(s, uri, acts[0])) == [
        "use pnpm",
        "Use PNPM!",
        "tab here",
        "zerowidth 😀",
        "shared fact",
    ]


async def test_note_actions(start, workspace):
    workspace.write("project", ["alpha", "beta", "gamma"])
    s = await start("visual-studio-code")
    uri = s.open(workspace.project_store)
    await asyncio.sleep(0.1)
    acts = await actions_for(s, uri, line=3)
    titles = [a.title for a in acts]
    forget = next(a for a in acts if a.title.startswith("Forget"))
    assert notes_of(applied(s, uri, forget)) == ["alpha", "gamma"]
    move = next(a for a in acts if a.title == "Move to global memory")
    # lsprotocol's client-side hook reads any CodeAction holding a `command` as a
    # Command (stringifying the nested one); the server sends a proper CodeAction.
    if isinstance(move, lsp.CodeAction):
        cmd = {"command": move.command.command, "arguments": move.command.arguments}
    else:
        cmd = ast.literal_eval(move.command)
    assert cmd["command"] == "memory.move"
    r = await s.command(cmd["command"], cmd["arguments"][0])
    assert r["global"] == ["beta"] and r["project"] == ["alpha", "gamma"]
    assert notes_of(s.buffers[uri]) == ["alpha", "gamma"]  # the buffer followed
    acts = await actions_for(s, uri, line=2, end_line=3)
    merge = next(a for a in acts if a.title.startswith("Merge the 2"))
    assert notes_of(applied(s, uri, merge)) == ["alpha; gamma"]
    assert not await actions_for(s, uri, line=2, only=["source.fixAll"])
    assert "Forget “alpha”" in titles or titles


@pytest.mark.parametrize("preset", PRESETS)
async def test_symbols_hover_lens_formatting(start, workspace, preset):
    workspace.write("global", ["global 日本 note"])
    workspace.write(
        workspace.project_store, HEADER + "\n\n*   spaced   note  \n- 😀 emoji\nprose stays\n"
    )
    s = await start(preset)
    uri = s.open(workspace.project_store)
    await asyncio.sleep(0.1)
    symbols = await s.client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    )
    assert [x.name for x in symbols] == ["spaced note", "😀 emoji"]
    found = await s.client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="日本"))
    assert [x.name for x in found] == ["global 日本 note"]
    assert found[0].location.uri == uri_of(workspace.global_store)
    h = await s.client.text_document_hover_async(
        lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(3, 3)
        )
    )
    assert "project memory" in h.contents.value and "In recall" in h.contents.value
    lenses = await s.client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    )
    assert lenses[0].range.start.line == 0
    assert (
        lenses[0].command.title.startswith("2 notes · ") and "0 left out" in lenses[0].command.title
    )
    assert lenses[0].command.command == "memory.doctor"
    edits = await s.client.text_document_formatting_async(
        lsp.DocumentFormattingParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            options=lsp.FormattingOptions(tab_size=2, insert_spaces=True),
        )
    )
    formatted = apply_text_edits(s.buffers[uri], edits, s.encoding)
    assert formatted == HEADER + "\n\n- spaced note\n- 😀 emoji\nprose stays\n"


async def test_watchers_registered_and_cross_scope_refresh(start, workspace):
    workspace.write("project", ["shared"])
    s = await start("visual-studio-code")
    assert s.registrations and s.registrations[0].method == "workspace/didChangeWatchedFiles"
    uri = s.open(workspace.project_store)
    await asyncio.sleep(0.2)
    assert not [d for d in await s.diagnostics(uri) if d.code == "cross-scope-duplicate"]
    # an open global buffer refreshes the project's cross-scope diagnostics as it is typed
    g = s.open(workspace.global_store, "- other\n")
    s.replace_all(g, "- Shared\n")
    await s.codes(uri, "cross-scope-duplicate")
    await s.codes(g, "cross-scope-duplicate")


async def test_malformed_burst_then_still_answers(start, workspace):
    workspace.write("project", ["one"])
    s = await start("neovim")
    uri = s.open(workspace.project_store)
    proto = s.client.protocol
    bad = [
        {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"nonsense": 1}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": None},
        {"jsonrpc": "2.0", "id": 9001, "method": "textDocument/hover", "params": {"x": []}},
        {"jsonrpc": "2.0", "id": 9002, "method": "no/such/method", "params": {}},
        {
            "jsonrpc": "2.0",
            "method": "textDocument/didChange",
            "params": {
                "textDocument": {"uri": "file:///nowhere/.pi/memory.md", "version": 3},
                "contentChanges": [{"text": "x"}],
            },
        },
        {
            "jsonrpc": "2.0",
            "method": "textDocument/didChange",
            "params": {
                "textDocument": {"uri": uri, "version": 2},
                "contentChanges": [
                    {
                        "range": {
                            "start": {"line": 999, "character": 999},
                            "end": {"line": 1999, "character": 5},
                        },
                        "text": "- Z\n",
                    }
                ],
            },
        },
        {
            "jsonrpc": "2.0",
            "id": 9003,
            "method": "workspace/executeCommand",
            "params": {"command": "memory.add", "arguments": [[1, 2]]},
        },
        {
            "jsonrpc": "2.0",
            "id": 9004,
            "method": "textDocument/codeAction",
            "params": {
                "textDocument": {"uri": "file:///elsewhere.md"},
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                "context": {"diagnostics": []},
            },
        },
    ]
    for _ in range(5):
        for message in bad:
            proto._send_data(message)
    await asyncio.sleep(0.3)
    r = await s.command("memory.list")
    assert r["project"] == ["one"]
    h = await s.client.text_document_hover_async(
        lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(500, 40)
        )
    )
    assert h is None
    ds = await s.diagnostics(uri)
    assert isinstance(ds, list)
    assert json.dumps(r)


async def test_store_deleted_then_made_a_symlink_under_the_server(start, workspace, tmp_path):
    workspace.write("project", ["keep me"])
    s = await start("visual-studio-code")
    uri = s.open(workspace.project_store)
    await asyncio.sleep(0.2)

    def changed(kind: lsp.FileChangeType) -> None:
        s.client.workspace_did_change_watched_files(
            lsp.DidChangeWatchedFilesParams(changes=[lsp.FileEvent(uri=uri, type=kind)])
        )

    workspace.project_store.unlink()
    changed(lsp.FileChangeType.Deleted)
    listed = await s.command("memory.list")
    assert listed["project"] == [] and "error" not in listed

    target = tmp_path / "elsewhere.md"
    target.write_text("- planted\n")
    workspace.project_store.symlink_to(target)
    changed(lsp.FileChangeType.Created)
    await s.codes(uri, "symlink")
    refused = await s.command("memory.add", {"text": "x"})
    assert (
        refused["error"] == f"Refusing to use the symlinked memory file: {workspace.project_store}"
    )
    assert target.read_text() == "- planted\n"
    # still alive and answering
    assert (await s.command("memory.path"))["project"] == str(workspace.project_store)


async def test_similar_pass_reports_work_done_progress(start, workspace):
    notes = [f"note number {i} about the {i % 7} deploy pipeline" for i in range(600)]
    workspace.write("project", notes)
    s = await start("visual-studio-code")  # declares window.workDoneProgress
    s.open(workspace.project_store)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while loop.time() < deadline:
        reports = list(s.client.progress_reports.values())
        if reports and any(isinstance(r, lsp.WorkDoneProgressEnd) for r in reports[0]):
            break
        await asyncio.sleep(0.05)
    (report,) = s.client.progress_reports.values()
    assert isinstance(report[0], lsp.WorkDoneProgressBegin)
    assert report[0].message == "Looking for similar notes among 600"
    assert isinstance(report[-1], lsp.WorkDoneProgressEnd)


async def test_no_progress_for_a_small_store(start, workspace):
    workspace.write("project", [f"note {i} with words" for i in range(100)])
    s = await start("visual-studio-code")
    uri = s.open(workspace.project_store)
    await s.diagnostics(uri)
    await asyncio.sleep(1.0)
    assert s.client.progress_reports == {}


@pytest.mark.parametrize("preset", PRESETS)
async def test_other_documents_get_nothing(start, workspace, preset):
    other = workspace.root / "notes.md"
    other.write_text("- use pnpm\n- use pnpm\n-   \n- tab\there\n")
    also = workspace.root / "pi" / "memory.md"
    also.parent.mkdir()
    also.write_text("- use pnpm\n- use pnpm\n")
    s = await start(preset)
    for path in (other, also):
        uri = s.open(path)
        await asyncio.sleep(0.3)
        assert await s.diagnostics(uri) == []
        if not s.pull:
            assert uri not in s.client.diagnostics
        assert not await code_actions(s, uri, 1)
        assert not await code_actions(s, uri, 1, only=["source.fixAll.memory"])
        syms = await asyncio.wait_for(
            s.client.text_document_document_symbol_async(
                lsp.DocumentSymbolParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
            ),
            TIMEOUT,
        )
        assert not syms
        hov = await asyncio.wait_for(
            s.client.text_document_hover_async(
                lsp.HoverParams(
                    text_document=lsp.TextDocumentIdentifier(uri=uri),
                    position=lsp.Position(0, 3),
                )
            ),
            TIMEOUT,
        )
        assert hov is None
        lenses = await asyncio.wait_for(
            s.client.text_document_code_lens_async(
                lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
            ),
            TIMEOUT,
        )
        assert not lenses
        fmt = await asyncio.wait_for(
            s.client.text_document_formatting_async(
                lsp.DocumentFormattingParams(
                    text_document=lsp.TextDocumentIdentifier(uri=uri),
                    options=lsp.FormattingOptions(tab_size=2, insert_spaces=True),
                )
            ),
            TIMEOUT,
        )
        assert not fmt


@pytest.mark.parametrize("preset", PRESETS)
async def test_quick_fix_without_data_from_the_client(start, workspace, preset):
    # Emacs does not declare publishDiagnostics.dataSupport: a client may send the
    # diagnostic back without `data`; the fix is still offered.
    workspace.write("project", ["use pnpm", "use pnpm"])
    s = await start(preset)
    uri = s.open(workspace.project_store)
    found = await s.codes(uri, "duplicate")
    d = next(d for d in found if d.code == "duplicate")
    bare = lsp.Diagnostic(
        range=d.range, message=d.message, severity=d.severity, code=d.code, source=d.source
    )
    acts = await code_actions(s, uri, d.range.start.line, only=["quickfix"], diagnostics=[bare])
    titles = [a.title for a in acts]
    assert "Remove the duplicate note" in titles, titles


async def test_lens_hover_symbols_formatting(start, workspace):
    workspace.write("global", ["global fact"])
    workspace.write(
        workspace.project_store, "* use   pnpm\nprose stays\n-   indented\n- global fact\n"
    )
    s = await start("visual-studio-code")
    uri = s.open(workspace.project_store)
    await s.codes(uri, "cross-scope-duplicate")
    lenses = await asyncio.wait_for(
        s.client.text_document_code_lens_async(
            lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
        ),
        TIMEOUT,
    )
    assert len(lenses) == 1 and lenses[0].range.start.line == 0
    inject = await s.command("memory.inject")
    title = lenses[0].command.title
    assert title == f"3 notes · {inject['bytes']}/8192 bytes in recall · 0 left out", title
    assert lenses[0].command.command == "memory.doctor"
    syms = await asyncio.wait_for(
        s.client.text_document_document_symbol_async(
            lsp.DocumentSymbolParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
        ),
        TIMEOUT,
    )
    assert [x.name for x in syms] == ["use pnpm", "indented", "global fact"]
    found = await asyncio.wait_for(
        s.client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="fact")), TIMEOUT
    )
    assert sorted(x.location.uri for x in found) == sorted(
        [uri_of(workspace.global_store), uri_of(workspace.project_store)]
    )
    hov = await asyncio.wait_for(
        s.client.text_document_hover_async(
            lsp.HoverParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(3, 4)
            )
        ),
        TIMEOUT,
    )
    assert "project" in hov.contents.value and "global" in hov.contents.value
    edits = await asyncio.wait_for(
        s.client.text_document_formatting_async(
            lsp.DocumentFormattingParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri),
                options=lsp.FormattingOptions(tab_size=2, insert_spaces=True),
            )
        ),
        TIMEOUT,
    )
    out = apply_text_edits(s.buffers[uri], edits, s.encoding)
    assert out == "- use pnpm\nprose stays\n-   indented\n- global fact\n" or out.startswith(
        "- use pnpm\nprose stays\n"
    ), out


async def test_workspace_symbols_leave_out_an_open_untrusted_store(start, workspace):
    # SPEC §4: only the open file's diagnostics (and its own outline) show untrusted notes.
    workspace.write("project", ["repo fact"])
    s = await start("visual-studio-code", init_options={"trusted": False})
    found = await asyncio.wait_for(
        s.client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="repo")), TIMEOUT
    )
    assert found == []
    uri = s.open(workspace.project_store)
    await s.codes(uri, "untrusted")
    found = await asyncio.wait_for(
        s.client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="repo")), TIMEOUT
    )
    assert found == []
    outline = await asyncio.wait_for(
        s.client.text_document_document_symbol_async(
            lsp.DocumentSymbolParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
        ),
        TIMEOUT,
    )
    assert outline is not None and [x.name for x in outline] == ["repo fact"]
