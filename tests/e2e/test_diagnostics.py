"""Which documents are memory, every diagnostic code, positions in each encoding, push vs
pull, incremental edits."""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from lsprotocol import types as lsp
from lsprotocol.converters import get_converter

from memory_ls.core.text import HEADER
from tests import hidden_notes
from tests.conftest import store_text

from .conftest import PRESETS, TIMEOUT, uri_of

CONVERTER = get_converter()


def by_code(ds: list[lsp.Diagnostic], code: str) -> list[lsp.Diagnostic]:
    return [d for d in ds if d.code == code]


@pytest.mark.parametrize("preset", PRESETS)
async def test_note_level_codes(start, workspace, preset):
    workspace.write("global", ["deploys go through the staging cluster first"])
    notes = [
        "use pnpm, not npm",
        "Use pnpm, not npm.",
        "x" * 501,
        "tab\there",
        "zero\u200bwidth",
        "deploys go through the staging cluster first",
        "the integration tests need DATABASE_URL set",
        "the integration tests need DATABASE_URL to be set",
    ]
    workspace.write("project", store_text(*notes) + "-   \n")
    s = await start(preset)
    uri = s.open(workspace.project_store)
    ds = await s.codes(
        uri,
        "duplicate",
        "too-long",
        "blank-note",
        "control-characters",
        "hidden-unicode",
        "cross-scope-duplicate",
        "similar",
    )
    dup = by_code(ds, "duplicate")[0]
    assert dup.range.start.line == 3 and dup.severity == lsp.DiagnosticSeverity.Warning
    assert dup.source == "memory"
    assert dup.data["firstLine"] == 2 and "use pnpm, not npm" in dup.message
    assert "first" not in dup.data  # the other note's text stays on the server
    td = s.client.capabilities.text_document
    related = (td.diagnostic if s.pull else td.publish_diagnostics).related_information
    if related:  # only for clients that declare relatedInformation
        assert dup.related_information and dup.related_information[0].location.range.start.line == 2
    assert by_code(ds, "cross-scope-duplicate")[0].severity == lsp.DiagnosticSeverity.Information
    assert by_code(ds, "blank-note")[0].range.start.line == 10
    assert by_code(ds, "similar")[0].severity == lsp.DiagnosticSeverity.Hint
    assert by_code(ds, "similar")[0].range.start.line == 9
    if not s.pull:
        assert s.client.diagnostics[uri] is not None


async def test_not_injected_one_per_run_and_recall_off(start, workspace):
    (workspace.agent_dir / "bytefly.json").write_text(
        json.dumps({"memory": {"maxInjectBytes": 512}})
    )
    notes = [f"note number {i} " + "y" * 40 for i in range(40)]
    workspace.write("project", notes)
    s = await start()
    uri = s.open(workspace.project_store)
    ds = await s.codes(uri, "not-injected")
    runs = by_code(ds, "not-injected")
    assert len(runs) == 1
    assert runs[0].range.end.line == 2 + 39
    assert runs[0].data["cap"] == 512
    (workspace.agent_dir / "bytefly.json").write_text(json.dumps({"memory": {"inject": False}}))
    s.client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            changes=[
                lsp.FileEvent(
                    uri=uri_of(workspace.agent_dir / "bytefly.json"),
                    type=lsp.FileChangeType.Changed,
                )
            ]
        )
    )
    ds = await s.wait_for(uri, lambda ds: bool(by_code(ds, "recall-off")))
    assert not by_code(ds, "not-injected")
    assert by_code(ds, "recall-off")[0].severity == lsp.DiagnosticSeverity.Hint


async def test_untrusted_and_file_level_codes(start, workspace):
    workspace.write("project", ["a note"])
    s = await start("emacs", init_options={"trusted": False})
    uri = s.open(workspace.project_store)
    ds = await s.codes(uri, "untrusted")
    assert "explicit" in by_code(ds, "untrusted")[0].message
    # too large (the buffer), and the global store as a symlink
    big = HEADER + "\n\n" + "".join(f"- big note {i} {'z' * 60}\n" for i in range(4000))
    big_uri = s.open(workspace.root / "sub" / ".pi" / "memory.md", big)
    await s.codes(big_uri, "file-too-large")
    real = workspace.home / "real.md"
    real.write_text("- linked\n")
    os.symlink(real, workspace.global_store)
    g = s.open(workspace.global_store)
    await s.codes(g, "symlink")


async def test_invalid_utf8_and_not_the_store(start, workspace):
    workspace.project_store.parent.mkdir(parents=True)
    workspace.project_store.write_bytes(b"- ok\n- bad \xff byte\n")
    wt = workspace.home / "wt"
    (wt / ".pi").mkdir(parents=True)
    (workspace.root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # as git writes it
    gitdir = workspace.root / ".git" / "worktrees" / "wt"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    (wt / ".git").write_text(f"gitdir: {gitdir}\n")
    (wt / ".pi" / "memory.md").write_text("- worktree note\n")
    s = await start("neovim")
    uri = s.open(workspace.project_store, "- ok\n- bad \ufffd byte\n")
    ds = await s.codes(uri, "invalid-utf8")
    bad = by_code(ds, "invalid-utf8")[0]
    assert bad.range.start.line == 1 and bad.data["offset"] == 11
    other = s.open(wt / ".pi" / "memory.md")
    ds = await s.codes(other, "not-the-store")
    assert str(workspace.project_store) in by_code(ds, "not-the-store")[0].message


@pytest.mark.parametrize("preset", PRESETS)
async def test_columns_on_emoji_and_cjk(start, workspace, preset):
    line = "- 😀 日本語 \u200b hidden"
    workspace.write("project", HEADER + "\n\n" + line + "\n")
    s = await start(preset)
    uri = s.open(workspace.project_store)
    ds = await s.codes(uri, "hidden-unicode")
    d = by_code(ds, "hidden-unicode")[0]
    text = line[2:]
    units = {
        "utf-8": len(text.encode("utf-8")),
        "utf-16": len(text.encode("utf-16-le")) // 2,
        "utf-32": len(text),
    }[s.encoding]
    assert (d.range.start.line, d.range.start.character) == (2, 2)
    assert d.range.end.character == 2 + units
    # the encoding negotiated is the client's first choice
    assert (
        s.encoding == {"visual-studio-code": "utf-16", "neovim": "utf-8", "emacs": "utf-32"}[preset]
    )


async def test_push_client_gets_pushes_only(start, workspace):
    workspace.write("project", ["one", "One."])
    s = await start("visual-studio-code")
    assert not s.pull
    uri = s.open(workspace.project_store)
    await s.codes(uri, "duplicate")
    # clean file: an empty list is pushed
    s.replace_all(uri, HEADER + "\n\n- one\n")
    await s.wait_for(uri, lambda ds: ds == [])


async def test_pull_client_gets_no_pushes(start, workspace):
    workspace.write("project", ["one", "One."])
    s = await start("neovim")
    assert s.pull
    uri = s.open(workspace.project_store)
    ds = await s.codes(uri, "duplicate")
    await asyncio.sleep(0.3)
    assert uri not in s.client.diagnostics
    report = await s.client.text_document_diagnostic_async(
        lsp.DocumentDiagnosticParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    )
    assert isinstance(report, lsp.RelatedFullDocumentDiagnosticReport)
    again = await s.client.text_document_diagnostic_async(
        lsp.DocumentDiagnosticParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), previous_result_id=report.result_id
        )
    )
    assert isinstance(again, lsp.RelatedUnchangedDocumentDiagnosticReport)
    assert len(ds) == len(report.items)


@pytest.mark.parametrize("preset", ["visual-studio-code", "neovim"])
async def test_incremental_edits_match_a_fresh_open(start, workspace, preset):
    notes = [f"note {i} about 日本 😀 things" for i in range(30)] + ["note 3 about 日本 😀 things"]
    workspace.write("project", notes)
    s = await start(preset)
    uri = s.open(workspace.project_store)
    await s.codes(uri, "duplicate")

    def pos(line: int, char: int) -> lsp.Position:
        return lsp.Position(line=line, character=char)

    # type a duplicate, split a line, join lines, delete a block, insert lines
    s.edit(uri, [lsp.TextEdit(range=lsp.Range(start=pos(5, 2), end=pos(5, 8)), new_text="note 9")])
    s.edit(
        uri,
        [lsp.TextEdit(range=lsp.Range(start=pos(7, 0), end=pos(7, 0)), new_text="- new\n-  \n")],
    )
    s.edit(uri, [lsp.TextEdit(range=lsp.Range(start=pos(12, 0), end=pos(15, 0)), new_text="")])
    s.edit(
        uri,
        [lsp.TextEdit(range=lsp.Range(start=pos(2, 0), end=pos(2, 0)), new_text="- tab\there\n")],
    )
    s.edit(uri, [lsp.TextEdit(range=lsp.Range(start=pos(20, 3), end=pos(20, 3)), new_text="x")])
    has_similar = lambda ds: any(d.code == "similar" for d in ds)  # noqa: E731

    def shape(ds: list[lsp.Diagnostic]) -> list[tuple[str, int, int, int]]:
        return sorted(
            (str(d.code), d.range.start.line, d.range.start.character, d.range.end.character)
            for d in ds
        )

    final = s.buffers[uri]
    fresh_path = workspace.home / "fresh" / ".pi" / "memory.md"
    fresh_path.parent.mkdir(parents=True)
    workspace.global_store.write_text("")
    fresh = s.open(fresh_path, final)
    fresh_ds = shape(await s.wait_for(fresh, has_similar))
    # The edited document settles once the server has read every edit and its similar
    # pass has run: wait for that (a slow machine takes longer), then compare.
    try:
        settled = await s.wait_for(uri, lambda ds: shape(ds) == fresh_ds)
    except AssertionError:
        settled = await s.diagnostics(uri)
    edited = shape(settled)
    assert edited == fresh_ds
    assert any(c == "blank-note" for c, *_ in edited)
    assert any(c == "control-characters" for c, *_ in edited)


async def test_every_change_publishes_with_its_version(start, workspace):
    """SPEC §7: a push on every open and change, even when nothing changed."""
    workspace.write("project", ["a clean note"])
    s = await start("visual-studio-code")
    assert not s.pull
    method = lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
    waiting = s.client.protocol.wait_for_notification_async(method)
    uri = s.open(workspace.project_store)
    first = await asyncio.wait_for(waiting, 10)
    assert first.version == 1 and list(first.diagnostics) == []
    for version in (2, 3, 4):  # prose edits: the (empty) diagnostics do not change
        waiting = s.client.protocol.wait_for_notification_async(method)
        start_of_line_1 = lsp.Position(line=1, character=0)
        s.edit(
            uri,
            [
                lsp.TextEdit(
                    range=lsp.Range(start=start_of_line_1, end=start_of_line_1), new_text="x"
                )
            ],
        )
        params = await asyncio.wait_for(waiting, 10)
        assert params.uri == uri and params.version == version
        assert list(params.diagnostics) == []


async def test_cached_diagnostics_follow_a_same_length_edit(start, workspace):
    """A run's range end moves in UTF-16 when a character becomes an emoji (same str length)."""
    (workspace.agent_dir / "bytefly.json").write_text(
        json.dumps({"memory": {"maxInjectBytes": 512}})
    )
    notes = [f"note number {i} " + "y" * 40 for i in range(20)]
    workspace.write("project", notes)
    s = await start("visual-studio-code")
    uri = s.open(workspace.project_store)
    (run,) = by_code(await s.codes(uri, "not-injected"), "not-injected")
    last_line = 2 + 19
    assert run.range.end.line == last_line
    before = run.range.end.character
    at = lsp.Position(line=last_line, character=before - 1)
    end = lsp.Position(line=last_line, character=before)
    s.edit(uri, [lsp.TextEdit(range=lsp.Range(start=at, end=end), new_text="😀")])
    # Poll rather than take the next publish: the open's similar hints may come first.
    found = await s.wait_for(
        uri,
        lambda ds: any(d.code == "not-injected" and d.range.end.character != before for d in ds),
    )
    (moved,) = [d for d in found if d.code == "not-injected"]
    assert moved.range.end.character == before + 1  # 😀 is two UTF-16 units


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("language", ["markdown", "plaintext", "memory"])
async def test_memory_document_by_path_whatever_language(start, workspace, preset, language):
    workspace.write("project", ["use pnpm", "use pnpm"])
    workspace.write("global", ["g", "g"])
    s = await start(preset)
    for path in (workspace.project_store, workspace.global_store):
        uri = s.open(path, language=language)
        found = await s.codes(uri, "duplicate")
        d = next(d for d in found if d.code == "duplicate")
        assert d.source == "memory" and d.data is not None
        assert d.severity == lsp.DiagnosticSeverity.Warning


async def test_clean_file_gets_an_empty_push_whatever_its_language(start, workspace):
    workspace.write("global", ["fine"])
    s = await start("emacs")
    method = lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
    waiting = s.client.protocol.wait_for_notification_async(method)
    uri = s.open(workspace.global_store, language="text")
    first = await asyncio.wait_for(waiting, TIMEOUT)
    assert first.uri == uri and first.version == 1 and list(first.diagnostics) == []


async def test_neovim_pull_keeps_related_information(start, workspace):
    workspace.write("project", ["use pnpm", "Use pnpm."])
    s = await start("neovim")
    assert s.pull
    uri = s.open(workspace.project_store)
    found = await s.codes(uri, "duplicate")
    d = next(d for d in found if d.code == "duplicate")
    assert d.related_information and d.related_information[0].location.range.start.line == 2


async def test_not_the_store_points_at_the_real_store(start, workspace, tmp_path):
    workspace.write("project", ["real"])
    # A linked worktree: its .git file points into the main repository's .git.
    tree = tmp_path / "tree"
    (workspace.root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # as git writes it
    gitdir = workspace.root / ".git" / "worktrees" / "tree"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    (gitdir / "gitdir").write_text(str(tree / ".git") + "\n")
    tree.mkdir()
    (tree / ".git").write_text(f"gitdir: {gitdir}\n")
    stray = tree / ".pi" / "memory.md"
    workspace.write(stray, ["stray"])
    s = await start("visual-studio-code")
    uri = s.open(stray)
    found = await s.codes(uri, "not-the-store")
    d = next(d for d in found if d.code == "not-the-store")
    assert (
        str(workspace.project_store) in d.message and d.severity == lsp.DiagnosticSeverity.Warning
    )
    assert d.related_information
    assert d.related_information[0].location.uri == uri_of(workspace.project_store)


async def test_messages_quote_notes_with_hidden_characters_escaped(start, workspace):
    """A note holding U+202E (here in the global store, which the reader of the project
    store may never open) must not reorder the message of a ``duplicate``, ``similar``
    or ``cross-scope-duplicate`` diagnostic, nor the hover: it is quoted escaped."""
    hidden_notes.write(workspace)
    s = await start("visual-studio-code")
    uri = s.open(workspace.project_store)
    ds = await s.codes(uri, "duplicate", "similar", "cross-scope-duplicate")
    shown = hidden_notes.SHOWN
    messages = {str(d.code): d.message for d in ds if d.code != "hidden-unicode"}
    assert messages == {
        "duplicate": f"Duplicate of the note on line 3: {shown}",
        "similar": messages["similar"],
        "cross-scope-duplicate": f"Also in global memory: {shown}",
    }
    assert messages["similar"].endswith(f"alike): {shown}"), messages["similar"]
    hover = await s.client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri=uri), lsp.Position(2, 3))
    )
    assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
    assert "\u202e" not in hover.contents.value and shown in hover.contents.value


@pytest.mark.parametrize("preset", PRESETS)
async def test_moved_lines_publish_what_a_reopen_publishes(start, workspace, preset):
    """Lines added and removed above and between pairs whose notes hold emoji and CJK (each
    encoding counts their columns differently), the numbers crossing 9 → 10 → 9: every
    diagnostic, its related ranges, ``data.firstLine`` and "on line N" included, is what
    the server publishes for the same text opened afresh (the cached encodings are
    spliced, not rebuilt)."""
    notes = [f"filler {word}" for word in ("apples", "bazel", "zebra", "quartz", "kettle")]
    notes += ["😀 日本語 run the tests", "😀 日本語 run the tests!", "use pnpm", "never use pnpm"]
    workspace.write("project", notes)
    s = await start(preset)
    uri = s.open(workspace.project_store)
    await s.codes(uri, "duplicate", "conflict")

    def at(line: int) -> lsp.Range:
        return lsp.Range(lsp.Position(line, 0), lsp.Position(line, 0))

    s.edit(uri, [lsp.TextEdit(at(2), "\n- one\n")])  # the pairs move down two lines
    s.edit(uri, [lsp.TextEdit(at(8), "- 😀 first\n")])  # between the filler and the pairs
    s.edit(uri, [lsp.TextEdit(at(11), "\n")])  # between the notes of a pair
    s.edit(uri, [lsp.TextEdit(lsp.Range(lsp.Position(3, 0), lsp.Position(5, 0)), "")])
    text = s.buffers[uri]

    def wire(ds: list[lsp.Diagnostic]) -> list[str]:
        return sorted(json.dumps(CONVERTER.unstructure(d), sort_keys=True) for d in ds)

    def settled(ds: list[lsp.Diagnostic]) -> bool:
        lines = {(str(d.code), d.range.start.line) for d in ds}
        return {("duplicate", 10), ("conflict", 11), ("conflict", 12)} <= lines

    edited = await s.wait_for(uri, settled)
    s.client.text_document_did_close(
        lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    )
    if not s.pull:
        await s.wait_for(uri, lambda ds: not ds)  # cleared: what comes next is the reopen's
    reopened = s.open(workspace.project_store, text)
    assert reopened == uri
    fresh = await s.wait_for(uri, settled)
    assert wire(edited) == wire(fresh)
    (duplicate,) = by_code(edited, "duplicate")
    assert duplicate.message.startswith("Duplicate of the note on line 9:")
