"""Attacks on SPEC §13's editor side (project_watch.py, memory.reveal, the stale quick
fixes): floods and malformed watched-file events, hostile trees, forged reveal arguments,
clients that refuse or never answer. Each test holds a fix of what an attack broke, or
pins what held."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

from lsprotocol import types as lsp

from tests import stale_project
from tests.conftest import store_text

from .conftest import TIMEOUT, Session, code_actions, uri_of

STALE = ("stale-path", "stale-script", "instruction-duplicate")


def raw_notify(s: Session, method: str, params: str) -> None:
    """A notification whose params are written by hand (``1e999``, missing fields)."""
    body = f'{{"jsonrpc": "2.0", "method": "{method}", "params": {params}}}'.encode()
    s.client.protocol.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)


async def hover_time(s: Session, uri: str) -> float:
    began = time.perf_counter()
    await asyncio.wait_for(
        s.client.text_document_hover_async(
            lsp.HoverParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(2, 3)
            )
        ),
        TIMEOUT,
    )
    return time.perf_counter() - began


def threads_of(s: Session) -> int:
    assert s.client._server is not None
    return len(os.listdir(f"/proc/{s.client._server.pid}/task"))


def tracebacks(s: Session) -> list[str]:
    said = [m.message for m in s.client.log_messages] + [m.message for m in s.client.messages]
    return [m for m in said if "Traceback" in m or "Error" in m]


async def test_malformed_watched_file_events(start, workspace):
    workspace.write("project", store_text("The entry point is `src/gone.py`."))
    (workspace.root / "src").mkdir()
    s = await start()
    uri = s.open(workspace.project_store)
    await s.codes(uri, "stale-path")
    bad = [
        '{"changes": [{"uri": "file:///../../etc/passwd", "type": 1}]}',
        '{"changes": [{"uri": "http://example.com/x", "type": 2}]}',
        '{"changes": [{"uri": "not a uri", "type": 3}]}',
        '{"changes": [{"uri": "file:///tmp/caf%E9%FF%FE", "type": 1}]}',
        '{"changes": [{"uri": "file:///%00/x", "type": 1}]}',
        '{"changes": [{"uri": "", "type": 1}]}',
        '{"changes": [{"uri": "file://", "type": 1}]}',
        '{"changes": [{"uri": "file:", "type": 1}]}',
        '{"changes": [{"uri": "file://host/share/x", "type": 1}]}',
        '{"changes": [{"uri": "file:///x", "type": 0}]}',
        '{"changes": [{"uri": "file:///x", "type": 4}]}',
        '{"changes": [{"uri": "file:///x", "type": 1e999}]}',
        '{"changes": [{"uri": "file:///x"}]}',
        '{"changes": [{"type": 1}]}',
        '{"changes": [{}]}',
        '{"changes": [null]}',
        '{"changes": null}',
        '{"changes": "x"}',
        "{}",
        "null",
        "[]",
        '{"changes": [{"uri": 12, "type": 1}]}',
        f'{{"changes": [{{"uri": "{uri_of(workspace.root)}/%2e%2e/%2e%2e/etc", "type": 1}}]}}',
        f'{{"changes": [{{"uri": "{uri_of(workspace.root)}/src/\\u0000x", "type": 1}}]}}',
    ]
    for params in bad:
        raw_notify(s, "workspace/didChangeWatchedFiles", params)
    assert await hover_time(s, uri) < 2
    r = await s.command("memory.list")
    assert len(r["project"]) == 1
    ds = await s.diagnostics(uri)
    assert [d.code for d in ds if d.code in STALE] == ["stale-path"]
    # A bad event next to a real one: the real one still counts.
    await asyncio.sleep(0.5)  # every look the events above asked for is over
    gone = workspace.root / "src" / "gone.py"
    gone.touch()
    for odd in ("file:///%00/x", "file:///x\u0000y"):
        changes = [{"uri": odd, "type": 1}, {"uri": uri_of(gone), "type": 1}]
        raw_notify(s, "workspace/didChangeWatchedFiles", json.dumps({"changes": changes}))
    await s.wait_for(uri, lambda ds: not [d for d in ds if d.code == "stale-path"], 3)
    assert not tracebacks(s), tracebacks(s)


async def test_a_flood_of_events_in_one_notification(start, workspace):
    (workspace.root / "src").mkdir()
    workspace.write("project", store_text("The entry point is `src/gone.py`."))
    s = await start()
    uri = s.open(workspace.project_store)
    await s.codes(uri, "stale-path")
    outside = [
        lsp.FileEvent(
            uri=f"file:///nowhere/deep/{i}/x/y/z/file{i}.py", type=lsp.FileChangeType.Created
        )
        for i in range(10_000)
    ]
    skipped = [
        lsp.FileEvent(
            uri=uri_of(workspace.root / "node_modules" / f"p{i}" / "index.js"),
            type=lsp.FileChangeType.Created,
        )
        for i in range(10_000)
    ]
    for changes in (outside, skipped):
        began = time.perf_counter()
        s.client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(changes))
        took = await hover_time(s, uri)
        print("flood hover", took, time.perf_counter() - began)
        assert took < 1.0


async def test_events_every_millisecond(start, workspace):
    root = workspace.root
    (root / "src").mkdir()
    for i in range(300):
        (root / "src" / f"m{i}").mkdir()
        for j in range(50):
            (root / "src" / f"m{i}" / f"f{j}.py").touch()
    workspace.write("project", store_text("The entry point is `src/gone.py`."))
    s = await start()
    uri = s.open(workspace.project_store)
    await s.codes(uri, "stale-path")
    base = threads_of(s)
    most = base
    worst = 0.0
    loop = asyncio.get_running_loop()
    end = loop.time() + 3
    i = 0
    while loop.time() < end:
        p = root / "src" / f"new{i}.py"
        s.client.workspace_did_change_watched_files(
            lsp.DidChangeWatchedFilesParams(
                [lsp.FileEvent(uri=uri_of(p), type=lsp.FileChangeType.Created)]
            )
        )
        i += 1
        if i % 100 == 0:
            worst = max(worst, await hover_time(s, uri))
            most = max(most, threads_of(s))
        await asyncio.sleep(0.001)
    print("events", i, "worst hover", worst, "threads", base, most)
    assert worst < 1.0
    # Rebuilds run one at a time (1,600+ events would otherwise pile up threads); the
    # server's other workers (asyncio's executor for writes, the similar and conflict
    # passes) come and go, so a few more than at the start are not a pile-up.
    assert most - base <= 6
    # The note becomes clean when the file appears, even while events keep coming.
    (root / "src" / "gone.py").touch()
    end = loop.time() + 3
    seen_clean = False
    while loop.time() < end:
        s.client.workspace_did_change_watched_files(
            lsp.DidChangeWatchedFilesParams(
                [
                    lsp.FileEvent(
                        uri=uri_of(root / "src" / f"x{i}.py"), type=lsp.FileChangeType.Created
                    )
                ]
            )
        )
        i += 1
        await asyncio.sleep(0.005)
        if not [d for d in await s.diagnostics(uri) if d.code == "stale-path"]:
            seen_clean = True
            break
    assert seen_clean, "a steady stream of events starves the rebuild"


def _reveal_raw(s: Session, ident: int, argument: str) -> None:
    body = (
        f'{{"jsonrpc": "2.0", "id": "raw{ident}", "method": "workspace/executeCommand",'
        f' "params": {{"command": "memory.reveal", "arguments": [{argument}]}}}}'
    ).encode()
    s.client.protocol.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)


async def test_memory_reveal_with_forged_arguments(start, workspace):
    stale_project.project(workspace)
    s = await start()
    uri = s.open(workspace.project_store)
    await s.codes(uri, "stale-path")
    other = workspace.root / "AGENTS.md"
    s.open(other)
    good = {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 3}}
    for arg in [
        {"uri": uri_of(other), "range": good},  # open, but not a store
        {"uri": "file:///etc/passwd", "range": good},
        {"uri": uri, "range": {"start": {"line": -1, "character": 0}, "end": good["end"]}},
        {"uri": uri, "range": "x"},
        {"uri": uri, "range": None},
        {"uri": 12, "range": good},
        {"uri": uri},
        {},
        {"uri": uri, "range": {"start": {"line": 10**9, "character": 0}, "end": good["end"]}},
        {"uri": uri, "range": {"start": good["start"], "end": {"line": 10**9, "character": 5}}},
        {"uri": uri, "range": {"start": {"line": 2, "character": 10**9}, "end": good["end"]}},
        {"uri": uri, "range": {"start": {"line": 3, "character": 0}, "end": good["end"]}},
    ]:
        result = await s.command("memory.reveal", arg)
        assert result["shown"] is False and result["error"], (arg, result)
    assert s.client.shown_documents == []
    ok = await s.command("memory.reveal", {"uri": uri, "range": good})
    assert ok == {"shown": True}


async def test_memory_reveal_when_the_client_never_answers_or_fails(start, workspace):
    stale_project.project(workspace)
    s = await start()
    uri = s.open(workspace.project_store)
    await s.codes(uri, "stale-path")
    good = {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 3}}
    fm = s.client.protocol.fm

    async def never(params: lsp.ShowDocumentParams) -> None:
        await asyncio.sleep(3600)

    def fails(params: lsp.ShowDocumentParams) -> None:
        raise RuntimeError("no window here")

    fm.features[lsp.WINDOW_SHOW_DOCUMENT] = never
    began = time.perf_counter()
    running = asyncio.ensure_future(s.command("memory.reveal", {"uri": uri, "range": good}))
    await asyncio.sleep(0.2)
    assert await hover_time(s, uri) < 1  # the loop is not held meanwhile
    result = await running
    assert result["shown"] is False and time.perf_counter() - began < TIMEOUT
    fm.features[lsp.WINDOW_SHOW_DOCUMENT] = fails
    result = await s.command("memory.reveal", {"uri": uri, "range": good})
    assert result["shown"] is False and "no window here" in result["error"]


async def test_forget_from_a_diagnostic_of_an_older_version_without_its_data(start, workspace):
    # Two notes with the same stale mention; the client sends back the first one's
    # diagnostic without `data` (clients without dataSupport) after the buffer changed.
    (workspace.root / "src").mkdir()
    workspace.write(
        "project",
        store_text("Read `src/gone.py` first.", "Keep the parser in `src/gone.py` small."),
    )
    s = await start("neovim")
    uri = s.open(workspace.project_store)
    ds = await s.wait_for(uri, lambda ds: len([d for d in ds if d.code == "stale-path"]) == 2)
    first = next(d for d in ds if d.code == "stale-path" and d.range.start.line == 2)
    # The first note is removed by hand: the second moves up to line 2.
    s.edit(
        uri,
        [
            lsp.TextEdit(
                range=lsp.Range(start=lsp.Position(2, 0), end=lsp.Position(3, 0)), new_text=""
            )
        ],
    )
    await s.wait_for(uri, lambda ds: len([d for d in ds if d.code == "stale-path"]) == 1)
    sent = lsp.Diagnostic(
        range=first.range, message=first.message, code=first.code, source=first.source
    )
    actions = await code_actions(s, uri, 2, only=["quickfix"], diagnostics=[sent])
    forget = [a for a in actions if a.title.startswith("Forget")]
    assert not forget, "a fix for the old diagnostic would forget another note"


async def test_an_instruction_file_symlinked_out_of_the_project_later(start, workspace):
    secret = workspace.home / ".bashrc"
    secret.write_text("- Keep commits small and focused.\n")
    workspace.write("project", store_text("Keep commits small and focused."))
    s = await start()
    uri = s.open(workspace.project_store)
    await asyncio.sleep(0.5)
    agents = workspace.root / "AGENTS.md"
    agents.symlink_to(secret)
    (workspace.root / "CLAUDE.md").symlink_to(workspace.root / "GEMINI.md")
    (workspace.root / "GEMINI.md").symlink_to(secret)
    # Folders leading out: .github and .claude are read from, and walked.
    out = workspace.home / "out"
    out.mkdir()
    (out / "copilot-instructions.md").write_text(secret.read_text())
    (out / "CLAUDE.md").write_text(secret.read_text())
    (workspace.root / ".github").symlink_to(out)
    (workspace.root / ".claude").symlink_to(out)
    s.client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            [
                lsp.FileEvent(uri=uri_of(agents), type=lsp.FileChangeType.Created),
                lsp.FileEvent(
                    uri=uri_of(workspace.root / "CLAUDE.md"), type=lsp.FileChangeType.Created
                ),
                lsp.FileEvent(
                    uri=uri_of(workspace.root / ".github" / "copilot-instructions.md"),
                    type=lsp.FileChangeType.Changed,
                ),
                lsp.FileEvent(uri=uri_of(out / "CLAUDE.md"), type=lsp.FileChangeType.Changed),
            ]
        )
    )
    await asyncio.sleep(0.8)
    assert not [d for d in await s.diagnostics(uri) if d.code == "instruction-duplicate"]
    # A symlink inside the project is followed.
    agents.unlink()
    (workspace.root / "docs").mkdir()
    (workspace.root / "docs" / "agents.md").write_text("- Keep commits small and focused.\n")
    agents.symlink_to(workspace.root / "docs" / "agents.md")
    s.client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            [lsp.FileEvent(uri=uri_of(agents), type=lsp.FileChangeType.Changed)]
        )
    )
    await s.codes(uri, "instruction-duplicate")


async def test_fifos_named_like_the_files_read(start, workspace):
    for name in ("AGENTS.md", "CLAUDE.md", "Makefile", "justfile", "pnpm-workspace.yaml"):
        os.mkfifo(workspace.root / name)
    (workspace.root / ".github").mkdir()
    os.mkfifo(workspace.root / ".github" / "copilot-instructions.md")
    (workspace.root / "package.json").write_text('{"workspaces": ["pkgs/*"]}')
    (workspace.root / "pkgs" / "a").mkdir(parents=True)
    os.mkfifo(workspace.root / "pkgs" / "a" / "package.json")
    import socket

    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(workspace.root / "GEMINI.md"))
    workspace.write("project", store_text("Run `make gone` and read `src/gone.py`."))
    (workspace.root / "src").mkdir()
    s = await start()
    uri = s.open(workspace.project_store)
    ds = await s.codes(uri, "stale-path")
    assert not [d for d in ds if d.code == "stale-script"]
    assert await hover_time(s, uri) < 1
    sock.close()


def _refuse_registration(s: Session, how: str) -> None:
    fm = s.client.protocol.fm

    async def never(params: lsp.RegistrationParams) -> None:
        await asyncio.sleep(3600)

    def fails(params: lsp.RegistrationParams) -> None:
        raise RuntimeError("no watchers here")

    fm.features[lsp.CLIENT_REGISTER_CAPABILITY] = never if how == "never" else fails


async def test_clients_that_refuse_or_never_answer_registration(start, workspace):
    from .conftest import _install_handlers  # noqa: F401  (the default handlers)

    (workspace.root / "src").mkdir()
    app = workspace.root / "src" / "app.py"
    app.write_text("")
    workspace.write("project", store_text("The entry point is `src/app.py`."))
    for how in ("fails", "never"):
        s = await start()
        _refuse_registration(s, how)
        # Folders change: the server registers again.
        s.client.workspace_did_change_workspace_folders(
            lsp.DidChangeWorkspaceFoldersParams(
                event=lsp.WorkspaceFoldersChangeEvent(added=[], removed=[])
            )
        )
        uri = s.open(workspace.project_store)
        assert await hover_time(s, uri) < 1
        r = await s.command("memory.list")
        assert len(r["project"]) == 1


def _big_instructions(path: Path, size: int = 1024 * 1024 - 1000) -> None:
    import random
    import string

    rng = random.Random(1)
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9))) for _ in range(3000)]
    out: list[str] = []
    total = 0
    while total < size:
        line = "- " + " ".join(rng.choices(words, k=rng.randint(4, 10)))
        out.append(line)
        total += len(line) + 1
    path.write_text("\n".join(out) + "\n")


async def _publish_p50(s: Session, uri: str, salt: str) -> float:
    """The median time from a keystroke's didChange (a new key each time) to its publish."""
    loop = asyncio.get_running_loop()
    times: list[float] = []
    for i in range(25):
        before = s.client.diagnostics.get(uri)
        text = f"Run the suite before merging {salt}{i} {'x' * (i % 5)} today"
        whole = lsp.Range(start=lsp.Position(2, 2), end=lsp.Position(2, 200))
        s.edit(uri, [lsp.TextEdit(range=whole, new_text=text)])
        began = loop.time()
        while s.client.diagnostics.get(uri) is before and loop.time() - began < 5:
            await asyncio.sleep(0.001)
        times.append(loop.time() - began)
    return sorted(times)[len(times) // 2]


async def test_typing_with_a_huge_instruction_file(start, workspace):
    agents = workspace.root / "AGENTS.md"
    _big_instructions(agents)
    workspace.write(
        "project", store_text(*[f"Note number {i} about the build." for i in range(50)])
    )
    s = await start("emacs")  # pushes: the time from didChange to its publish
    uri = s.open(workspace.project_store)
    await asyncio.sleep(2.0)
    huge = await _publish_p50(s, uri, "a")
    agents.write_text("- Keep commits small.\n")
    s.client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            [lsp.FileEvent(uri=uri_of(agents), type=lsp.FileChangeType.Changed)]
        )
    )
    await asyncio.sleep(1.0)
    small = await _publish_p50(s, uri, "b")
    print("publish p50 with a 1 MB AGENTS.md", huge, "with a small one", small)
    # Before the fix: 47 ms against 26 ms; after: 38 and 37. The bound grows with the
    # small file's own figure: a loaded machine slows both alike (it once failed at +12 ms).
    assert huge < small + max(0.012, 0.4 * small)


def _tree(root: Path, folders: int = 150, files: int = 100) -> None:
    for i in range(folders):
        d = root / "big" / f"d{i}"
        d.mkdir(parents=True)
        for j in range(files):
            (d / f"f{j}.txt").touch()


async def test_the_project_deleted_or_its_store_swapped_while_it_is_looked_at(start, workspace):
    import shutil

    _tree(workspace.root)
    (workspace.root / "src").mkdir()
    workspace.write("project", store_text("The entry point is `src/gone.py`."))
    s = await start()
    uri = s.open(workspace.project_store)
    await s.codes(uri, "stale-path")
    # `.pi` swapped for a symlink out of the project while a look runs.
    outside = workspace.home / "elsewhere"
    outside.mkdir()
    (outside / "memory.md").write_text(workspace.text("project"))
    event = lsp.FileEvent(
        uri=uri_of(workspace.root / "src" / "x.py"), type=lsp.FileChangeType.Created
    )
    s.client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams([event]))
    await asyncio.sleep(0.12)
    pi = workspace.root / ".pi"
    pi.rename(workspace.root / ".pi-old")
    pi.symlink_to(outside)
    s.client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            [lsp.FileEvent(uri=uri_of(pi), type=lsp.FileChangeType.Created)]
        )
    )
    assert await hover_time(s, uri) < 1
    await asyncio.sleep(0.5)
    r = await s.command("memory.list")
    assert "error" in r or r["project"] == [] or r.get("refused"), r
    # The whole project deleted while a look runs.
    s.client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams([event]))
    await asyncio.sleep(0.12)
    shutil.rmtree(workspace.root)
    s.client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            [lsp.FileEvent(uri=uri_of(workspace.root), type=lsp.FileChangeType.Deleted)]
        )
    )
    assert await hover_time(s, uri) < 1
    await asyncio.sleep(0.5)
    await s.command("memory.list")
    assert not tracebacks(s), tracebacks(s)


async def test_a_folder_removed_while_its_project_is_looked_at(start, workspace):
    other = workspace.home / "other"
    (other / ".git").mkdir(parents=True)
    (other / ".pi").mkdir()
    (other / ".pi" / "memory.md").write_text(store_text("Read `src/gone.py` first."))
    (other / "src").mkdir()
    _tree(other)
    s = await start(folders=[workspace.root, other])
    uri = s.open(other / ".pi" / "memory.md")
    await s.codes(uri, "stale-path")
    (other / "src" / "gone.py").touch()
    s.client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            [lsp.FileEvent(uri=uri_of(other / "src" / "gone.py"), type=lsp.FileChangeType.Created)]
        )
    )
    await asyncio.sleep(0.12)  # the look has begun
    s.client.workspace_did_change_workspace_folders(
        lsp.DidChangeWorkspaceFoldersParams(
            event=lsp.WorkspaceFoldersChangeEvent(
                added=[], removed=[lsp.WorkspaceFolder(uri=uri_of(other), name="other")]
            )
        )
    )
    s.client.text_document_did_close(
        lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    )
    await asyncio.sleep(0.8)
    # Opened again: judged against the tree as it is now.
    s.versions[uri] = 0
    (other / "src" / "gone.py").unlink()
    uri = s.open(other / ".pi" / "memory.md")
    await s.codes(uri, "stale-path")
    assert not tracebacks(s), tracebacks(s)


async def test_an_untrusted_projects_findings_stay_in_the_editor(start, workspace):
    (workspace.root / "AGENTS.md").write_text(
        "# Rules\n\n- Keep SECRET-INSTRUCTION commits \u202eflipped\u202c small.\n"
    )
    (workspace.root / "src").mkdir()
    workspace.write(
        "project",
        store_text(
            "Keep SECRET-INSTRUCTION commits \u202eflipped\u202c small.",
            "Read `src/SECRET-PATH\u202e.py` first.",
        ),
    )
    s = await start("emacs", init_options={"trusted": False})
    uri = s.open(workspace.project_store)
    ds = await s.codes(uri, "instruction-duplicate", "stale-path")
    for d in ds:  # in the editor, for the user: but escaped
        assert "\u202e" not in d.message, d.message
        for r in d.related_information or []:
            assert "\u202e" not in r.message
    doctor = await s.command("memory.doctor")
    assert "SECRET" not in json.dumps(doctor), doctor


async def test_slow_build_files_do_not_hold_up_typing(start, workspace):
    body = "a\\\n" * ((1024 * 1024 - 10) // 3)
    for name in ("Makefile", "justfile", "pnpm-workspace.yaml"):
        (workspace.root / name).write_text(body)
    (workspace.root / "package.json").write_text("[" * 500_000 + "]" * 500_000)
    (workspace.root / "src").mkdir()
    workspace.write("project", store_text("Read `src/gone.py` and run `make x` first."))
    s = await start()
    uri = s.open(workspace.project_store)
    worst = 0.0
    loop = asyncio.get_running_loop()
    began = loop.time()
    while loop.time() - began < 3:
        worst = max(worst, await hover_time(s, uri))
        await asyncio.sleep(0.01)
    print("worst hover during slow builds", worst)
    await s.codes(uri, "stale-path")
    print("judged after", loop.time() - began)
    assert worst < 0.25


async def test_agent_dir_changed_while_its_files_are_looked_at(start, workspace):
    (workspace.agent_dir / "AGENTS.md").write_text("- Reply in British English.\n")
    workspace.write("global", store_text("Reply in British English."))
    other = workspace.home / "agent2"
    other.mkdir()
    (other / "AGENTS.md").write_text("- Something else entirely.\n")
    (other / "memory.md").write_text(
        store_text("Reply in British English.", "Something else entirely.")
    )
    s = await start("emacs")
    g = s.open(workspace.global_store)
    await s.codes(g, "instruction-duplicate")
    _tree(workspace.agent_dir)  # a slower look
    s.client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            [
                lsp.FileEvent(
                    uri=uri_of(workspace.agent_dir / "AGENTS.md"), type=lsp.FileChangeType.Changed
                )
            ]
        )
    )
    await asyncio.sleep(0.11)
    s.client.set_configuration({"agentDir": str(other)}, section="memoryLs")
    s.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    # (Opened before the new settings are applied, it would never be a store: a
    # document's kind is decided once, when it is opened; not this module's to change.)
    await asyncio.sleep(1.0)
    g2 = s.open(other / "memory.md")
    # The new agent dir's store is judged against the new agent dir's AGENTS.md only.
    ds = await s.codes(g2, "instruction-duplicate")
    dup = [d for d in ds if d.code == "instruction-duplicate"]
    assert [d.range.start.line for d in dup] == [3], [d.message for d in dup]
    assert str(other / "AGENTS.md") in dup[0].message
    assert not tracebacks(s), tracebacks(s)


async def test_folders_changed_in_quick_succession_leave_one_registration(start, workspace):
    from memory_ls.server.project_watch import WATCH_ID

    s = await start()
    live: dict[str, int] = {}
    fm = s.client.protocol.fm

    async def register(params: lsp.RegistrationParams) -> None:
        await asyncio.sleep(0.05)  # a client that takes a moment to answer
        for r in params.registrations:
            live[r.id] = live.get(r.id, 0) + 1

    async def unregister(params: lsp.UnregistrationParams) -> None:
        await asyncio.sleep(0.02)
        for u in params.unregisterations:
            if live.get(u.id):
                live[u.id] -= 1

    fm.features[lsp.CLIENT_REGISTER_CAPABILITY] = register
    fm.features[lsp.CLIENT_UNREGISTER_CAPABILITY] = unregister
    live[WATCH_ID] = 1  # registered by `initialized`
    folders = []
    for i in range(5):
        f = workspace.home / f"f{i}"
        f.mkdir()
        folders.append(f)
        s.client.workspace_did_change_workspace_folders(
            lsp.DidChangeWorkspaceFoldersParams(
                event=lsp.WorkspaceFoldersChangeEvent(
                    added=[lsp.WorkspaceFolder(uri=uri_of(f), name=f.name)], removed=[]
                )
            )
        )
        await asyncio.sleep(0.01)
    await asyncio.sleep(1.0)
    assert live[WATCH_ID] == 1, live


async def test_hidden_characters_in_the_projects_folder_name(start, workspace):
    other = workspace.home / "pro\u202ejx\u200b\x1b[31m"
    (other / ".git").mkdir(parents=True)
    (other / ".pi").mkdir()
    (other / "AGENTS.md").write_text("- Keep commits small.\n")
    (other / "src").mkdir()
    (other / ".pi" / "memory.md").write_text(
        store_text("Keep commits small.", "Read `src/gone.py` first.")
    )
    s = await start(folders=[workspace.root, other])
    uri = s.open(other / ".pi" / "memory.md")
    ds = await s.codes(uri, "instruction-duplicate", "stale-path")
    for d in ds:
        for text in (d.message, *(r.message for r in d.related_information or [])):
            assert not any(c in text for c in "\u202e\u200b\x1b"), text
    dup = next(d for d in ds if d.code == "instruction-duplicate")
    assert "\\u202e" in dup.message
    if dup.related_information:
        assert dup.related_information[0].location.uri == uri_of(other / "AGENTS.md")
