"""Review probes: SPEC §7 behaviours checked end to end (documents by path, command
shapes, settings, code actions on the global store)."""

from __future__ import annotations

import ast
import asyncio

import pytest
from lsprotocol import types as lsp

from .conftest import PRESETS, TIMEOUT, uri_of


def notes_on_disk(path) -> list[str]:
    return [line[2:] for line in path.read_text().splitlines() if line.startswith("- ")]


def command_of(action) -> dict:
    """The command of a code action (lsprotocol's client reads one holding a command as
    a Command whose ``command`` is the nested object's repr)."""
    if isinstance(action, lsp.CodeAction):
        assert action.command is not None
        return {"command": action.command.command, "arguments": action.command.arguments}
    return ast.literal_eval(action.command)


async def code_actions(s, uri, line, only=None, diagnostics=()):
    return await asyncio.wait_for(
        s.client.text_document_code_action_async(
            lsp.CodeActionParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri),
                range=lsp.Range(start=lsp.Position(line, 0), end=lsp.Position(line, 1)),
                context=lsp.CodeActionContext(diagnostics=list(diagnostics), only=only),
            )
        ),
        TIMEOUT,
    )


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("language", ["markdown", "plaintext", "memory"])
async def test_memory_document_by_path_whatever_language(start, ws, preset, language):
    ws.write(ws.project_store, ["use pnpm", "use pnpm"])
    ws.write(ws.global_store, ["g", "g"])
    s = await start(preset)
    for path in (ws.project_store, ws.global_store):
        uri = s.open(path, language=language)
        found = await s.codes(uri, "duplicate")
        d = next(d for d in found if d.code == "duplicate")
        assert d.source == "memory" and d.data is not None
        assert d.severity == lsp.DiagnosticSeverity.Warning


@pytest.mark.parametrize("preset", PRESETS)
async def test_other_documents_get_nothing(start, ws, preset):
    other = ws.root / "notes.md"
    other.write_text("- use pnpm\n- use pnpm\n-   \n- tab\there\n")
    also = ws.root / "pi" / "memory.md"
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


async def test_move_from_the_global_store_goes_to_the_workspace_project(start, ws):
    ws.write(ws.global_store, ["global fact"])
    s = await start("visual-studio-code")
    uri = s.open(ws.global_store)
    await s.wait_for(uri, lambda ds: True)
    actions = await code_actions(s, uri, 2, only=["refactor.move"])
    move = next(a for a in actions if a.title == "Move to project memory")
    cmd = command_of(move)
    assert cmd["command"] == "memory.move"
    r = await s.command(cmd["command"], cmd["arguments"][0])
    assert "error" not in r, r
    assert r["project"] == ["global fact"] and r["global"] == []
    assert notes_on_disk(ws.project_store) == ["global fact"]
    # The global store's uri picks the default project as well.
    r = await s.command("memory.path", {"uri": uri_of(ws.global_store)})
    assert r["project"] == str(ws.project_store)


async def test_path_shape(start, ws):
    s = await start("visual-studio-code")
    r = await s.command("memory.path")
    assert {"project", "global", "trusted", "trustReason"} <= set(r)
    assert r["project"] == str(ws.project_store) and r["global"] == str(ws.global_store)
    assert r["trusted"] is True and isinstance(r["trustReason"], str) and r["trustReason"]


async def test_inject_shape_and_off(start, ws):
    ws.write(ws.global_store, ["g1"])
    ws.write(ws.project_store, ["p1"])
    s = await start("neovim")
    r = await s.command("memory.inject", {})
    assert set(r) == {"body", "bytes", "maxInjectBytes", "included", "omitted", "inject"}
    assert r["bytes"] == len(r["body"].encode()) and r["included"] == 2 and r["omitted"] == []
    (ws.agent / "bytefly.json").write_text('{"memory": {"inject": false}}')
    r = await s.command("memory.inject", {})
    assert r["body"] is None and r["inject"] is False and r["bytes"] == 0


@pytest.mark.parametrize("arg", [None, 5, "x", [1], True])
async def test_non_object_argument_is_invalid_params(start, ws, arg):
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


async def test_null_settings_from_configuration_keep_the_layer_below(start, ws):
    s = await start(
        "visual-studio-code",
        init_options={"trusted": False},
        configuration={
            "agentDir": None,
            "trusted": None,
            "readOnly": None,
            "severity": None,
            "similarThreshold": None,
        },
    )
    r = await s.command("memory.path")
    assert r["trusted"] is False
    logs = [m.message for m in s.client.log_messages]
    assert not any("settings" in m for m in logs), logs


async def test_read_only_from_configuration(start, ws):
    s = await start("neovim", configuration={"readOnly": True})
    for cmd, arg in [
        ("memory.add", {"text": "x"}),
        ("memory.update", {"text": "x", "to": "y"}),
        ("memory.forget", {"text": "x"}),
        ("memory.merge", {"text": "x", "other": "z", "to": "y"}),
        ("memory.move", {"text": "x"}),
        ("memory.clear", {}),
    ]:
        r = await s.command(cmd, arg)
        assert r["error"] == "memory-ls is read-only: changes are refused.", (cmd, r)
    assert s.asked == []


async def test_invalid_setting_reported_once_and_replaced(start, ws):
    ws.write(ws.project_store, ["a", "a"])
    s = await start(
        "visual-studio-code",
        configuration={"readOnly": "yes", "severity": {"duplicate": "loud"}},
    )
    uri = s.open(ws.project_store)
    found = await s.codes(uri, "duplicate")
    assert next(d for d in found if d.code == "duplicate").severity == 2
    s.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    await asyncio.sleep(0.3)
    r = await s.command("memory.add", {"text": "ok"})
    assert "error" not in r
    logs = [m.message for m in s.client.log_messages if "readOnly" in m.message]
    assert len(logs) == 1, logs


async def test_severity_off_and_override(start, ws):
    ws.write(ws.project_store, ["a", "a", "tab\there"])
    s = await start(
        "visual-studio-code",
        init_options={"severity": {"duplicate": "off", "control-characters": "error"}},
    )
    uri = s.open(ws.project_store)
    found = await s.codes(uri, "control-characters")
    assert "duplicate" not in {d.code for d in found}
    assert next(d for d in found if d.code == "control-characters").severity == 1


@pytest.mark.parametrize("preset", PRESETS)
async def test_quick_fix_without_data_from_the_client(start, ws, preset):
    # Emacs does not declare publishDiagnostics.dataSupport: a client may send the
    # diagnostic back without `data`; the fix is still offered.
    ws.write(ws.project_store, ["use pnpm", "use pnpm"])
    s = await start(preset)
    uri = s.open(ws.project_store)
    found = await s.codes(uri, "duplicate")
    d = next(d for d in found if d.code == "duplicate")
    bare = lsp.Diagnostic(
        range=d.range, message=d.message, severity=d.severity, code=d.code, source=d.source
    )
    acts = await code_actions(s, uri, d.range.start.line, only=["quickfix"], diagnostics=[bare])
    titles = [a.title for a in acts]
    assert "Remove the duplicate note" in titles, titles


async def test_lens_hover_symbols_formatting(start, ws):
    ws.write(ws.global_store, ["global fact"])
    ws.write(ws.project_store, "* use   pnpm\nprose stays\n-   indented\n- global fact\n")
    s = await start("visual-studio-code")
    uri = s.open(ws.project_store)
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
        [uri_of(ws.global_store), uri_of(ws.project_store)]
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
    from .conftest import apply_text_edits

    out = apply_text_edits(s.buffers[uri], edits, s.encoding)
    assert out == "- use pnpm\nprose stays\n-   indented\n- global fact\n" or out.startswith(
        "- use pnpm\nprose stays\n"
    ), out


async def test_clean_file_gets_an_empty_push_whatever_its_language(start, ws):
    ws.write(ws.global_store, ["fine"])
    s = await start("emacs")
    method = lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
    waiting = s.client.protocol.wait_for_notification_async(method)
    uri = s.open(ws.global_store, language="text")
    first = await asyncio.wait_for(waiting, TIMEOUT)
    assert first.uri == uri and first.version == 1 and list(first.diagnostics) == []


async def test_neovim_pull_keeps_related_information(start, ws):
    ws.write(ws.project_store, ["use pnpm", "Use pnpm."])
    s = await start("neovim")
    assert s.pull
    uri = s.open(ws.project_store)
    found = await s.codes(uri, "duplicate")
    d = next(d for d in found if d.code == "duplicate")
    assert d.related_information and d.related_information[0].location.range.start.line == 2


async def test_workspace_symbols_leave_out_an_open_untrusted_store(start, ws):
    # SPEC §4: only the open file's diagnostics (and its own outline) show untrusted notes.
    ws.write(ws.project_store, ["repo fact"])
    s = await start("visual-studio-code", init_options={"trusted": False})
    found = await asyncio.wait_for(
        s.client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="repo")), TIMEOUT
    )
    assert found == []
    uri = s.open(ws.project_store)
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


async def test_not_the_store_points_at_the_real_store(start, ws, tmp_path):
    ws.write(ws.project_store, ["real"])
    # A linked worktree: its .git file points into the main repository's .git.
    tree = tmp_path / "tree"
    (ws.root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # as git writes it
    gitdir = ws.root / ".git" / "worktrees" / "tree"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    (gitdir / "gitdir").write_text(str(tree / ".git") + "\n")
    tree.mkdir()
    (tree / ".git").write_text(f"gitdir: {gitdir}\n")
    stray = tree / ".pi" / "memory.md"
    ws.write(stray, ["stray"])
    s = await start("visual-studio-code")
    uri = s.open(stray)
    found = await s.codes(uri, "not-the-store")
    d = next(d for d in found if d.code == "not-the-store")
    assert str(ws.project_store) in d.message and d.severity == lsp.DiagnosticSeverity.Warning
    assert d.related_information
    assert d.related_information[0].location.uri == uri_of(ws.project_store)


async def test_severity_merges_per_code_and_client_keys_are_quiet(start, ws):
    ws.write(ws.project_store, ["a", "a", "tab\there"])
    s = await start(
        "visual-studio-code",
        init_options={"severity": {"duplicate": "error"}},
        configuration={
            "severity": {"control-characters": "hint"},
            "serverCommand": ["memory-ls", "serve"],
            "pythonPath": "",
            "agentDir": "",
            "statusBar": True,
            "trace": {"server": "off"},
        },
    )
    uri = s.open(ws.project_store)
    found = await s.wait_for(
        uri,
        lambda ds: any(
            d.code == "control-characters" and d.severity == lsp.DiagnosticSeverity.Hint for d in ds
        ),
    )
    assert next(d for d in found if d.code == "duplicate").severity == 1
    r = await s.command("memory.path")
    assert r["global"] == str(ws.global_store)  # an empty agentDir is "not set"
    assert not [m.message for m in s.client.log_messages if "settings" in m.message]
