"""``server/project_watch.py`` in process: the editor's ``stale-path``, ``stale-script`` and
``instruction-duplicate`` are ``check``'s, a keystroke never reads the project, and the
watched-file events that matter (and only those) look at the project again."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pytest_lsp import client_capabilities

from memory_ls.core.models import Scope
from memory_ls.core.notes import parse_lines
from memory_ls.core.text import split_text
from memory_ls.server import project_watch
from memory_ls.server.document_sync import did_change_watched_files
from memory_ls.server.documents import MemoryDocument
from memory_ls.server.project_watch import STALE_CODES
from memory_ls.store.project_files import stale_and_conflict_findings
from tests import stale_project

from .conftest import TIMEOUT, InProcess, eventually, uri_of


async def judged(server: InProcess, uri: str) -> None:
    """Wait until the store's first judge is installed (built in a thread)."""
    ls = server.ls
    found = ls.document(uri)
    assert found is not None
    await eventually(
        lambda: ls.analysis.files.judge_for(uri, found.state.info) is not None,
        "the project's files were never looked at",
    )


async def opened(
    server: InProcess,
    capabilities: str | lsp.ClientCapabilities = "visual-studio-code",
    *,
    judge: bool = True,
) -> tuple[str, MemoryDocument]:
    """The stale project (``tests/stale_project.py``) served, its store open and (unless
    ``judge`` is false) judged."""
    stale_project.project(server.workspace)
    await server.initialize(capabilities)
    uri = server.open(server.workspace.project_store)
    if judge:
        await judged(server, uri)
    found = server.ls.document(uri)
    assert found is not None
    return uri, found.doc


async def stale_on(server: InProcess, doc: MemoryDocument, line: int, never: str) -> None:
    """Wait until the note on ``line`` is reported ``stale-path``."""
    await eventually(
        lambda: any(
            f.code == "stale-path" and f.line == line for f in server.ls.analysis.findings(doc)
        ),
        never,
    )


def watch_registrations(server: InProcess) -> list[dict[str, Any]]:
    """The registrations of the project watch the server asked the client for."""
    return [
        r
        for p in server.client.requests(lsp.CLIENT_REGISTER_CAPABILITY)
        for r in p["registrations"]
        if r["id"] == project_watch.WATCH_ID
    ]


def relative_patterns() -> lsp.ClientCapabilities:
    """VS Code's capabilities with ``relativePatternSupport`` (which the preset lacks)."""
    caps = client_capabilities("visual-studio-code")
    assert caps.workspace is not None and caps.workspace.did_change_watched_files is not None
    caps.workspace.did_change_watched_files.relative_pattern_support = True
    return caps


def editor_findings(server: InProcess, uri: str) -> list[tuple[object, ...]]:
    found = server.ls.document(uri)
    assert found is not None
    return sorted(
        (f.code, f.line, f.start, f.end_line, f.end, f.message, dict(f.data), f.related)
        for f in server.ls.analysis.findings(found.doc)
        if f.code in STALE_CODES
    )


def check_findings(server: InProcess, path: Path, scope: Scope) -> list[tuple[object, ...]]:
    ws = server.workspace
    runtime = ws.runtime()
    lines = split_text(path.read_text(encoding="utf-8")).lines
    found = stale_and_conflict_findings(
        runtime.project_root, runtime.agent_dir, scope, parse_lines(lines)
    )
    return sorted(
        (f.code, f.line, f.start, f.end_line, f.end, f.message, dict(f.data), f.related)
        for f in found
        if f.code in STALE_CODES
    )


async def test_the_editor_reports_what_check_reports(server: InProcess) -> None:
    ws = server.workspace
    stale_project.project(ws)
    (ws.agent_dir / "AGENTS.md").write_text("# Me\n\nAlways use tabs for indentation.\n")
    await server.initialize("neovim")
    uri = server.open(ws.project_store)
    g = server.open(ws.global_store)
    await judged(server, uri)
    await judged(server, g)
    mine = editor_findings(server, uri)
    assert {m[0] for m in mine} == set(STALE_CODES)
    assert mine == check_findings(server, ws.project_store, "project")
    theirs = editor_findings(server, g)
    assert [m[0] for m in theirs] == ["instruction-duplicate"]
    assert theirs == check_findings(server, ws.global_store, "global")


@pytest.mark.parametrize("threshold", [50, 99])
async def test_instruction_duplicate_ignores_the_similar_threshold(
    server: InProcess, threshold: float
) -> None:
    """``memoryLs.similarThreshold`` tunes ``similar`` hints only: ``instruction-duplicate``
    scores against the default (85) in the editor as in ``check`` and the doctor, which
    have no such setting, so all three name the same notes (docs/lsp.md)."""
    ws = server.workspace
    (ws.root / "AGENTS.md").write_text("- Run the integration tests before pushing to main.\n")
    ws.write(
        "project",
        [
            "Run the integration tests before you push to main",  # line 2: scores 93
            "Run the linters after pulling from main",  # line 3: scores 69
        ],
    )
    await server.initialize("neovim", init_options={"similarThreshold": threshold})
    assert server.ls.projects.settings.similar_threshold == threshold
    uri = server.open(ws.project_store)
    await judged(server, uri)
    mine = editor_findings(server, uri)
    assert [(m[0], m[1]) for m in mine] == [("instruction-duplicate", 2)]
    assert mine == check_findings(server, ws.project_store, "project")
    doctor = ws.runtime().doctor_report()["project"]["staleAndConflicts"]
    assert [(f["code"], f["line"], f["message"]) for f in doctor] == [
        ("instruction-duplicate", 3, mine[0][5])
    ]


async def test_typing_reads_nothing_and_rejudges_the_edited_note(
    server: InProcess, monkeypatch
) -> None:
    uri, doc = await opened(server)

    def no_io(*args: object, **kwargs: object) -> None:
        raise AssertionError("a keystroke looked at the project's files")

    for name in ("project_snapshot", "project_instruction_texts", "global_instruction_texts"):
        monkeypatch.setattr(project_watch, name, no_io)
    monkeypatch.setattr(os, "scandir", no_io)
    # Line 8 names `src/new_name.py`, which exists: type it into a name that does not.
    line = doc.lines[8]
    col = line.index("new_name")
    server.edit(uri, 2, (8, col), (8, col + len("new")), "gone")
    stale = [f for f in server.ls.analysis.findings(doc) if f.code == "stale-path"]
    assert [(f.line, f.data["mention"]) for f in stale] == [  # type: ignore[typeddict-item]
        (2, "src/old_name.py"),
        (8, "src/gone_name.py"),
    ]


async def test_only_events_that_matter_look_again(server: InProcess) -> None:
    ws = server.workspace
    uri, doc = await opened(server)
    found = server.ls.document(uri)
    assert found is not None
    files = server.ls.analysis.files
    judge = files.judge_for(uri, found.state.info)

    def event(path: Path, kind: lsp.FileChangeType) -> None:
        did_change_watched_files(
            server.ls,
            lsp.DidChangeWatchedFilesParams(changes=[lsp.FileEvent(uri=uri_of(path), type=kind)]),
        )

    # Noise: a change of a plain file, anything under .git or node_modules.
    event(ws.root / "src" / "new_name.py", lsp.FileChangeType.Changed)
    event(ws.root / ".git" / "index", lsp.FileChangeType.Created)
    event(ws.root / "node_modules" / "x" / "y.js", lsp.FileChangeType.Deleted)
    await asyncio.sleep(project_watch.REBUILD_DELAY * 3)
    assert files.judge_for(uri, found.state.info) is judge
    # A file renamed away: looked at again, and the note's path is stale.
    os.rename(ws.root / "src" / "new_name.py", ws.root / "src" / "renamed.py")
    event(ws.root / "src" / "new_name.py", lsp.FileChangeType.Deleted)
    event(ws.root / "src" / "renamed.py", lsp.FileChangeType.Created)
    await stale_on(server, doc, 8, "the rename was never seen")


async def test_watchers_registered_for_the_tree_and_the_instruction_files(
    server: InProcess,
) -> None:
    ws = server.workspace
    await server.initialize(relative_patterns())
    registrations = watch_registrations(server)
    assert len(registrations) == 1
    watchers = registrations[0]["registerOptions"]["watchers"]
    patterns = [w["globPattern"] for w in watchers]
    tree = [p for p in patterns if isinstance(p, dict) and p["pattern"] == "**/*"]
    assert tree and tree[0]["baseUri"] == uri_of(ws.root)
    assert watchers[patterns.index(tree[0])]["kind"] == 5  # create | delete
    assert any(isinstance(p, dict) and "package.json" in p["pattern"] for p in patterns)
    assert any(isinstance(p, dict) and p["pattern"] == "AGENTS.md" for p in patterns)


async def test_plain_globs_without_relative_patterns(server: InProcess) -> None:
    await server.initialize("visual-studio-code")  # it declares no relativePatternSupport
    watchers = watch_registrations(server)[0]["registerOptions"]["watchers"]
    assert {"globPattern": "**/*", "kind": 5} in watchers
    agents = str(server.workspace.agent_dir / "AGENTS.md")
    assert {"globPattern": agents, "kind": 7} in watchers


async def test_no_dynamic_registration_no_watchers_and_open_looks_again(
    server: InProcess,
) -> None:
    caps = lsp.ClientCapabilities(
        workspace=lsp.WorkspaceClientCapabilities(
            did_change_watched_files=lsp.DidChangeWatchedFilesClientCapabilities(
                dynamic_registration=False
            )
        )
    )
    _, doc = await opened(server, caps)
    assert not server.client.requests(lsp.CLIENT_REGISTER_CAPABILITY)
    codes = {f.code for f in server.ls.analysis.findings(doc)}
    assert {"stale-path", "stale-script", "instruction-duplicate"} <= codes


def test_which_events_can_change_a_judgement(tmp_path: Path) -> None:
    root = str(tmp_path / "p")
    key = ("project", root)
    created, changed = lsp.FileChangeType.Created, lsp.FileChangeType.Changed
    deleted = lsp.FileChangeType.Deleted
    cases = [
        (f"{root}/src/app.py", created, True),  # a path mention may name any file
        (f"{root}/src/app.py", deleted, True),
        (f"{root}/src/app.py", changed, False),  # its content changes nothing
        (f"{root}/package.json", changed, True),
        (f"{root}/packages/web/package.json", changed, True),  # a workspace package's
        (f"{root}/Makefile", changed, True),
        (f"{root}/sub/Makefile", changed, False),  # only the root's is read
        (f"{root}/AGENTS.md", changed, True),
        (f"{root}/.github/copilot-instructions.md", changed, True),
        (f"{root}/.claude/CLAUDE.md", changed, True),
        (f"{root}/.git/index", created, False),  # never searched
        (f"{root}/node_modules/x/y.js", deleted, False),
        (f"{root}/node_modules/.bin/vite", created, True),  # a binary a shorthand may run
        (f"{root}/dist", deleted, True),  # at the root: it decides how a mention is read
        (f"{root}x/src/app.py", created, False),  # another folder with the same prefix
        ("/elsewhere/src/app.py", created, False),
    ]
    for path, kind, expected in cases:
        assert project_watch._relevant(key, path, kind) is expected, (path, kind)
    agent = tmp_path / "agent"
    assert project_watch._relevant(("global", str(agent)), str(agent / "AGENTS.md"), changed)
    assert not project_watch._relevant(("global", str(agent)), str(agent / "x.md"), changed)


def test_memory_files_go_the_full_recheck() -> None:
    assert project_watch.is_memory_file("file:///p/.pi/memory.md")
    assert project_watch.is_memory_file("file:///agent/trust.json")
    assert project_watch.is_memory_file("file:///p/.pi")
    assert not project_watch.is_memory_file("file:///p/src/app.py")
    assert not project_watch.is_memory_file("file:///p/package.json")


def test_a_judge_answers_from_its_cache(monkeypatch) -> None:
    from memory_ls.core.instruction_duplicates import instruction_index
    from memory_ls.core.notes import parse_bullet
    from memory_ls.core.stale import ProjectSnapshot

    calls: list[str] = []
    real = project_watch.note_mentions

    def counted(text: str):  # type: ignore[no-untyped-def]
        calls.append(text)
        return real(text)

    monkeypatch.setattr(project_watch, "note_mentions", counted)
    snapshot = ProjectSnapshot(frozenset({"src"}), frozenset({"src", "src/a.py"}))
    index = instruction_index({"/p/AGENTS.md": "- Keep commits small.\n"})
    judge = project_watch.Judge(snapshot, index)
    line = "- See `src/b.py` and keep commits small."
    judge.warm([line[2:]], [], None)
    assert calls == [line[2:]]
    b = parse_bullet(line, 4)
    assert b is not None
    found = judge.findings(b, line)
    assert [(f.code, f.line, f.start, f.end) for f in found] == [("stale-path", 4, 7, 15)]
    judge.findings(b, line)
    assert calls == [line[2:]]  # warmed: asked once
    other = parse_bullet("- Keep commits small.", 5)
    assert other is not None
    assert [f.code for f in judge.findings(other, "- Keep commits small.")] == [
        "instruction-duplicate"
    ]
    # A new snapshot reuses the old judge's mentions: no note is read twice.
    fresh = project_watch.Judge(ProjectSnapshot(frozenset({"src"}), frozenset({"src"})), None)
    fresh.warm([line[2:]], [], judge)
    assert calls == [line[2:], "Keep commits small."]


async def test_a_store_without_a_judge_gets_one_without_being_opened_again(
    server: InProcess,
) -> None:
    from memory_ls.server.document_sync import redescribe

    uri, _ = await opened(server)
    server.ls.analysis.files.entries.clear()  # as after a change of settings or folders
    redescribe(server.ls)
    await judged(server, uri)


async def test_new_folders_are_watched_instead(server: InProcess) -> None:
    from memory_ls.server.document_sync import did_change_folders

    ws = server.workspace
    await server.initialize(relative_patterns())
    other = ws.root.parent / "other"
    other.mkdir()
    did_change_folders(
        server.ls,
        lsp.DidChangeWorkspaceFoldersParams(
            event=lsp.WorkspaceFoldersChangeEvent(
                added=[lsp.WorkspaceFolder(uri=uri_of(other), name="other")], removed=[]
            )
        ),
    )
    await eventually(
        lambda: len(server.client.requests(lsp.CLIENT_REGISTER_CAPABILITY)) >= 3,
        "the new folder was never watched",
    )
    gone = server.client.requests(lsp.CLIENT_UNREGISTER_CAPABILITY)
    assert gone[-1]["unregisterations"][0]["id"] == project_watch.WATCH_ID
    last = server.client.requests(lsp.CLIENT_REGISTER_CAPABILITY)[-1]["registrations"][0]
    assert last["id"] == project_watch.WATCH_ID
    bases = {w["globPattern"]["baseUri"] for w in last["registerOptions"]["watchers"]}
    assert uri_of(other) in bases and uri_of(ws.root) in bases


async def test_an_event_through_a_symlinked_folder_counts(server: InProcess) -> None:
    ws = server.workspace
    link = ws.root.parent / "link"
    link.symlink_to(ws.root)
    _, doc = await opened(server)
    os.rename(ws.root / "src" / "new_name.py", ws.root / "src" / "renamed.py")
    gone = link / "src" / "new_name.py"  # how a client with the link as its folder says it
    did_change_watched_files(
        server.ls,
        lsp.DidChangeWatchedFilesParams(
            changes=[lsp.FileEvent(uri=uri_of(gone), type=lsp.FileChangeType.Deleted)]
        ),
    )
    await stale_on(server, doc, 8, "the event through the link was never seen")


def _pull_without_refresh() -> lsp.ClientCapabilities:
    caps = client_capabilities("neovim")  # pull, and no workspace.diagnostics.refreshSupport
    assert caps.text_document is not None and caps.text_document.diagnostic is not None
    assert caps.workspace is not None and caps.workspace.diagnostics is None
    return caps


async def test_a_pull_that_cannot_be_repeated_waits_for_the_first_look(
    server: InProcess,
) -> None:
    from memory_ls.server import publishing

    uri, _ = await opened(server, _pull_without_refresh(), judge=False)
    params = lsp.DocumentDiagnosticParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    report = await publishing.pull_after_first_look(server.ls, params)
    codes = {d["code"] for d in report["items"]}
    assert {"stale-path", "stale-script", "instruction-duplicate"} <= codes


async def test_a_failed_look_does_not_hold_pulls(server: InProcess, monkeypatch) -> None:
    from memory_ls.server import publishing

    def broken(*args: object) -> project_watch.Judge:
        raise OSError("the tree is gone")

    monkeypatch.setattr(project_watch, "build_judge", broken)
    uri, _ = await opened(server, _pull_without_refresh(), judge=False)
    params = lsp.DocumentDiagnosticParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    await publishing.pull_after_first_look(server.ls, params)  # waits for the look to fail
    loop = asyncio.get_running_loop()
    began = loop.time()
    report = await publishing.pull_after_first_look(server.ls, params)
    assert loop.time() - began < project_watch.FIRST_LOOK_WAIT / 2
    assert not {d["code"] for d in report["items"]} & set(STALE_CODES)


async def test_lines_added_and_removed_keep_each_finding_on_its_note(server: InProcess) -> None:
    uri, doc = await opened(server)

    def change(line: int, end_line: int, text: str, version: int) -> None:
        server.edit(uri, version, (line, 0), (end_line, 0), text)

    def where() -> list[tuple[str, int]]:
        return sorted(
            (f.code, f.line) for f in server.ls.analysis.findings(doc) if f.code in STALE_CODES
        )

    before = where()
    assert before == [("instruction-duplicate", 4), ("stale-path", 2), ("stale-script", 3)]
    change(0, 0, "- A new first note about `lib/nowhere.py`.\n", 2)  # a line in, itself stale
    assert where() == [
        ("instruction-duplicate", 5),
        ("stale-path", 0),
        ("stale-path", 3),
        ("stale-script", 4),
    ]
    change(0, 1, "", 3)  # and out again
    assert where() == before
    # What was published matches what the analysis holds.
    published = {(d["code"], d["range"]["start"]["line"]) for d in server.ls.analysis.items(doc)}
    assert set(before) <= published


async def test_a_store_closed_during_a_look_leaves_no_judge_behind(
    server: InProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The judge holds a snapshot of the whole tree (up to 200,000 paths): one installed
    # for a project no open store needs was kept until the server exited.
    from memory_ls.server.document_sync import did_close

    # The look is held until the store is closed: a quick look could end before the
    # test saw it begin (it did once, in CI).
    release = threading.Event()
    real_build = project_watch.build_judge

    def held_build(*args: Any) -> Any:
        release.wait(TIMEOUT)
        return real_build(*args)

    monkeypatch.setattr(project_watch, "build_judge", held_build)
    uri, _ = await opened(server, "neovim", judge=False)
    files = server.ls.analysis.files
    await eventually(
        lambda: any(e.building for e in files.entries.values()), "no look began", 0.001
    )
    did_close(
        server.ls, lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    )
    assert any(e.building for e in files.entries.values())  # still held
    release.set()
    await eventually(
        lambda: not any(e.building for e in files.entries.values()), "the look never ended", 0.01
    )
    await asyncio.sleep(0.05)
    assert files.entries == {}


def test_a_burst_of_events_is_sorted_without_parsing_each_uri() -> None:
    events = [
        lsp.FileEvent(uri=f"file:///my%20project/src/f{i}.py", type=lsp.FileChangeType.Created)
        for i in range(project_watch.EVENTS_SORTED_LIMIT + 1)
    ]
    assert not project_watch.any_memory_file(events)  # a space in the path is no store
    store = lsp.FileEvent(
        uri="file:///my%20project/%2Epi/memory.md", type=lsp.FileChangeType.Changed
    )
    assert project_watch.any_memory_file([*events, store])
    other = lsp.FileEvent(uri="untitled:Untitled-1", type=lsp.FileChangeType.Changed)
    assert project_watch.any_memory_file([*events, other])
    assert not project_watch.any_memory_file(events[:3])
    assert project_watch.any_memory_file([*events[:3], store])
