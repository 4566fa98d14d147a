"""What an open file is, in process: the workspace maps the store layer's classification
(``store.paths.classify_store_path``) onto its projects (SPEC §7 Documents)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from memory_ls.server.document_sync import did_close
from memory_ls.server.documents import MemoryDocument
from memory_ls.server.server import MemoryServer
from memory_ls.server.settings import Settings
from memory_ls.server.settings_sync import apply_settings
from memory_ls.server.workspace import Projects
from memory_ls.store.runtime import MemoryRuntime
from tests.conftest import Workspace, store_text

from .conftest import InProcess


def projects_for(workspace: Workspace) -> Projects:
    projects = Projects()
    projects.configure(Settings(agent_dir=str(workspace.agent_dir)), [workspace.root])
    return projects


def test_each_kind_of_file(workspace: Workspace) -> None:
    projects = projects_for(workspace)
    default = projects.default_runtime()
    info = projects.describe(workspace.global_store)
    assert info is not None and (info.runtime, info.scope) == (default, "global")
    info = projects.describe(workspace.project_store)
    assert info is not None and (info.runtime, info.scope) == (default, "project")
    below = workspace.root / "sub" / ".pi" / "memory.md"
    info = projects.describe(below)
    assert info is not None
    assert (info.runtime, info.scope, info.real_store) == (
        default,
        None,
        str(workspace.project_store),
    )
    assert projects.describe(workspace.root / "README.md") is None


def test_another_project_gets_its_own_runtime(workspace: Workspace, tmp_path: Path) -> None:
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    projects = projects_for(workspace)
    info = projects.describe(other / ".pi" / "memory.md")
    assert info is not None and info.scope == "project"
    assert info.runtime.project_root == other.resolve()
    assert info.runtime is not projects.default_runtime()


def test_a_refused_store_leading_to_the_agent_dir_stays_the_projects(
    workspace: Workspace,
) -> None:
    (workspace.root / ".pi").symlink_to(workspace.agent_dir)
    projects = projects_for(workspace)
    info = projects.describe(workspace.project_store)
    assert info is not None and info.scope == "project"
    assert info.runtime.store_refusal("project") is not None
    # A command's uri naming it picks that project too; the global store picks the default.
    assert projects.runtime_for_uri_path(workspace.project_store) is info.runtime
    assert projects.runtime_for_uri_path(workspace.global_store) is projects.default_runtime()


def test_an_agent_dir_in_a_projects_pi_picks_that_project_for_its_file(
    workspace: Workspace, tmp_path: Path
) -> None:
    """``agentDir`` is another project's ``.pi``: its ``memory.md`` is the global store,
    and a document or a command's ``uri`` naming it picks that project (whose project
    scope is refused), not the first workspace folder's, whose store is another file."""
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    (other / ".pi").mkdir()
    shared = other / ".pi" / "memory.md"
    projects = Projects()
    projects.configure(Settings(agent_dir=str(other / ".pi")), [workspace.root])
    info = projects.describe(shared)
    assert info is not None and info.scope == "global"
    assert info.runtime.project_root == other.resolve()
    assert info.runtime.shared_store_refusal("global") is not None
    assert projects.runtime_for_uri_path(shared) is info.runtime
    assert projects.default_runtime().store_refusal("project") is None


async def test_an_open_memory_md_follows_agent_dir_changes(
    server: InProcess, tmp_path: Path
) -> None:
    """A ``memory.md`` opened before ``agentDir`` names its folder becomes the global
    store with the text in the editor (it was never judged); the store it was before
    is let go when ``agentDir`` moves away (it kept the old store's diagnostics)."""
    ws = server.workspace
    other = tmp_path / "other-agent"
    other.mkdir()
    elsewhere = other / "memory.md"
    elsewhere.write_text("# Memory\n\n- use pnpm\n", encoding="utf-8")
    await server.initialize("neovim", init_options={"agentDir": str(ws.agent_dir)})
    uri = server.open(elsewhere)
    assert server.ls.document(uri) is None
    # Typed, not saved: the store is judged with the buffer's text.
    server.edit(uri, 2, (3, 0), (3, 0), "- Use pnpm.\n")
    before = server.open(ws.global_store, "# Memory\n\n- use uv\n")
    assert server.ls.document(before) is not None

    apply_settings(server.ls, {"agentDir": str(other)})
    found = server.ls.document(uri)
    assert found is not None and found.state.info.scope == "global"
    assert found.doc.version == 2
    codes = [(d["code"], d["range"]["start"]["line"]) for d in server.ls.analysis.items(found.doc)]
    assert ("duplicate", 3) in codes
    assert server.ls.document(before) is None  # no store any more: let go
    report = await pull(server, before)
    assert report["items"] == []

    apply_settings(server.ls, {"agentDir": str(ws.agent_dir)})
    assert server.ls.document(uri) is None
    again = server.ls.document(before)
    assert again is not None and again.state.info.scope == "global"
    # Closed while waiting: nothing of it is kept.
    did_close(
        server.ls, lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    )
    assert uri not in server.ls.unjudged


async def pull(server: InProcess, uri: str) -> Any:
    answer = await server.client.request(
        lsp.TEXT_DOCUMENT_DIAGNOSTIC,
        lsp.DocumentDiagnosticParams(text_document=lsp.TextDocumentIdentifier(uri=uri)),
    )
    assert "result" in answer, answer
    return answer["result"]


async def test_agent_dir_flipping_to_the_projects_pi_folder_keeps_one_document(
    server: InProcess,
) -> None:
    """``agentDir`` naming the project's ``.pi`` makes its store the global store too: the
    open store is then global, tracked once, and no note of it is "also in project
    memory" (the same file: its fix, "forget here, it stays there", forgot the note)."""
    ws = server.workspace
    ws.write("project", store_text("use pnpm", "run make test"))
    ws.write("global", store_text("use uv"))
    await server.initialize("neovim", init_options={"trusted": True})
    uri = server.open(ws.project_store)
    for agent, scope in [(ws.root / ".pi", "global"), (ws.agent_dir, "project")] * 2:
        apply_settings(server.ls, {"agentDir": str(agent), "trusted": True})
        found = server.ls.document(uri)
        assert found is not None and found.state.info.scope == scope
        assert list(server.ls.projects.by_path.values()).count(found.doc) == 1
        assert uri not in server.ls.unjudged
        codes = [d["code"] for d in server.ls.analysis.items(found.doc)]
        assert "cross-scope-duplicate" not in codes, codes
        hover = hover_text(server, uri, 2)
        assert "also" not in hover.lower(), hover


def hover_text(server: InProcess, uri: str, line: int) -> str:
    from memory_ls.server.hover import hover

    found = hover(
        server.ls,
        lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line, 3)
        ),
    )
    assert found is not None
    contents = found.contents
    assert isinstance(contents, lsp.MarkupContent)
    return contents.value


def test_a_commands_uri_judges_its_projects_pi_once(
    workspace: Workspace, tmp_path: Path, monkeypatch: Any
) -> None:
    """A command's ``uri`` naming a store is classified once: whether its project's
    ``.pi`` leads out (which spares a dangling link the "no such project" check) and
    which project it picks are one look at that ``.pi``, not one each."""
    from memory_ls.server.commands import runtime_for
    from memory_ls.store import paths

    (workspace.root / ".pi").mkdir()
    away = tmp_path / "away"
    (away / ".git").mkdir(parents=True)
    (away / ".pi").symlink_to(tmp_path / "gone")  # dangling, leading out
    ls = MemoryServer()
    ls.projects.configure(Settings(agent_dir=str(workspace.agent_dir)), [workspace.root])
    judged: list[Path] = []
    real_refusal = paths.project_folder_refusal

    def counted(project_root: Path, *args: Any, **kwargs: Any) -> str | None:
        judged.append(project_root)
        return real_refusal(project_root, *args, **kwargs)

    monkeypatch.setattr(paths, "project_folder_refusal", counted)
    for store, root in (
        (workspace.project_store, workspace.root.resolve()),
        (away / ".pi" / "memory.md", away.resolve()),
    ):
        judged.clear()
        runtime = runtime_for(ls, "memory.list", {"uri": store.as_uri()})
        assert isinstance(runtime, MemoryRuntime), runtime
        assert runtime.project_root == root
        assert judged == [root], store
    missing = runtime_for(ls, "memory.list", {"uri": (tmp_path / "typo").as_uri()})
    assert isinstance(missing, dict) and missing["error"].startswith("No such project directory")


def _one_store_two_uris(
    workspace: Workspace, tmp_path: Path
) -> tuple[Projects, MemoryRuntime, MemoryDocument, MemoryDocument]:
    """The project store as two documents: by its real path and through a linked folder."""
    link = tmp_path / "linked"
    link.symlink_to(workspace.root, target_is_directory=True)
    projects = projects_for(workspace)
    real = MemoryDocument("file:///real", workspace.project_store, "- a\n", 1)
    linked = MemoryDocument("file:///linked", link / ".pi" / "memory.md", "- a\n", 1)
    return projects, projects.default_runtime(), real, linked


def test_closing_one_of_two_uris_of_a_file_keeps_the_other_as_its_open_document(
    workspace: Workspace, tmp_path: Path
) -> None:
    # The same store opened through a symlinked folder and through its real path: a
    # command's change must still reach the buffer left open once the other closes.
    projects, runtime, real, linked = _one_store_two_uris(workspace, tmp_path)
    projects.open(real)
    projects.open(linked)
    assert projects.open_store(runtime, "project") is linked
    projects.close("file:///linked")
    assert projects.open_store(runtime, "project") is real
    projects.open(linked)
    projects.close("file:///real")  # not the one the file maps to: nothing moves
    assert projects.open_store(runtime, "project") is linked
    projects.close("file:///linked")
    assert projects.open_store(runtime, "project") is None


def test_a_store_under_a_refused_pi_is_described_as_refused(
    workspace: Workspace, tmp_path: Path
) -> None:
    """``<root>/.pi/x/.pi/memory.md`` where ``<root>/.pi`` leads out: as written it lies in
    this project's refused ``.pi``, as commands judge it, so the editor describes it as this
    project's refused store, never as the store of the project out there (whose notes it
    would then check, recall and offer to change)."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "x" / ".pi").mkdir(parents=True)
    (elsewhere / "x" / ".git").mkdir()
    (workspace.root / ".pi").symlink_to(elsewhere)
    projects = projects_for(workspace)
    default = projects.default_runtime()
    for spelled in (
        workspace.root / ".pi" / "x" / ".pi" / "memory.md",
        workspace.root / ".pi" / "memory.md",
        workspace.root / ".pi" / "y" / "memory.md" / ".pi" / "memory.md",  # missing
    ):
        info = projects.describe(spelled)
        assert info is not None, spelled
        assert (info.runtime, info.scope, info.real_store) == (default, "project", None), spelled
        assert default.store_refusal("project") is not None
        assert projects.runtime_for_uri_path(spelled) is default, spelled
    # The store out there, named where it is, is that project's own.
    info = projects.describe(elsewhere / "x" / ".pi" / "memory.md")
    assert info is not None and info.runtime.project_root == (elsewhere / "x").resolve()


def test_every_open_document_of_a_store_is_found_in_the_order_they_opened(
    workspace: Workspace, tmp_path: Path
) -> None:
    """A command's change goes to each buffer of the file (``commands.sync_buffers``)."""
    projects, runtime, real, linked = _one_store_two_uris(workspace, tmp_path)
    other = MemoryDocument("file:///global", workspace.global_store, "- g\n", 1)
    assert projects.open_stores(runtime, "project") == []
    for doc in (real, other, linked):
        projects.open(doc)
    assert projects.open_stores(runtime, "project") == [real, linked]
    assert projects.same_file(linked) == [real, linked]
    assert projects.open_stores(runtime, "global") == [other]
    # Opened again under the same uri (a new document): it replaces the old one.
    again = MemoryDocument("file:///real", workspace.project_store, "- a\n- b\n", 2)
    projects.open(again)
    assert projects.open_stores(runtime, "project") == [linked, again]
    assert projects.open_store(runtime, "project") is again
    projects.close("file:///real")
    assert projects.open_stores(runtime, "project") == [linked]
    assert projects.open_store(runtime, "project") is linked
    projects.close("file:///linked")
    assert projects.open_stores(runtime, "project") == []
    assert projects.same_file(linked) == []


def test_a_document_follows_its_path_when_a_folder_link_is_pointed_elsewhere(
    workspace: Workspace, tmp_path: Path
) -> None:
    """``Projects.follow``: the linked document becomes the open document of the file its
    path leads to now (``commands.sync_buffers`` then finds it there, not under the file
    it was opened from); the real one stays its file's open document."""
    projects, runtime, real, linked = _one_store_two_uris(workspace, tmp_path)
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    (other / ".pi").mkdir()
    projects.open(real)
    projects.open(linked)
    assert projects.follow("file:///linked") is None  # nothing moved
    assert projects.open_store(runtime, "project") is linked
    link = tmp_path / "linked"
    link.unlink()
    link.symlink_to(other, target_is_directory=True)
    before = str(workspace.project_store.resolve())
    now = str((other / ".pi" / "memory.md").resolve())
    assert projects.follow("file:///linked") == (before, now)
    assert projects.follow("file:///linked") is None  # once
    assert projects.follow("file:///real") is None
    assert projects.follow("file:///nothing-open") is None
    assert projects.file_of("file:///linked") == now
    assert projects.open_stores(runtime, "project") == [real]
    assert projects.open_store(runtime, "project") is real
    other_runtime = projects.runtime_for_path(other)
    assert projects.open_stores(other_runtime, "project") == [linked]
    assert projects.open_store(other_runtime, "project") is linked
    assert projects.same_file(linked) == [linked]
    # Pointed back: the file keeps the document it had (the real one), and lists both.
    link.unlink()
    link.symlink_to(workspace.root, target_is_directory=True)
    assert projects.follow("file:///linked") == (now, before)
    assert projects.open_store(runtime, "project") is real
    assert projects.open_stores(runtime, "project") == [real, linked]
    assert projects.open_stores(other_runtime, "project") == []
    # A link that dangles: the document's file is where it would lead (nothing there).
    link.unlink()
    link.symlink_to(tmp_path / "gone", target_is_directory=True)
    moved = projects.follow("file:///linked")
    assert moved == (before, str(tmp_path.resolve() / "gone" / ".pi" / "memory.md"))
    assert projects.open_store(runtime, "project") is real
