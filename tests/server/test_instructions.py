"""``server/instructions.py`` in process: which files are tracked for ``export-stale``, and when
it is published."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as lsp

from memory_ls.core.bridges import block_lines
from memory_ls.core.recall import recall_plan
from memory_ls.server import publishing
from memory_ls.server.document_sync import did_change, did_close
from memory_ls.server.instructions import is_instruction_file
from memory_ls.store.runtime import MemoryRuntime

from .conftest import InProcess


def block(*notes: str) -> str:
    return "\n".join(block_lines(recall_plan(list(notes), [], 8192, True).body))


def pushed(server: InProcess, uri: str) -> list[list[str]]:
    """The codes of every push for ``uri``, oldest first."""
    return [
        [d["code"] for d in p["diagnostics"]]
        for p in server.client.notifications(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if p["uri"] == uri
    ]


def test_only_the_three_instruction_files_by_name() -> None:
    for name in ("AGENTS.md", "CLAUDE.md", "GEMINI.md"):
        assert is_instruction_file(Path("/p") / name)
    for name in ("README.md", "agents.md", "AGENTS.md.bak", "memory.md"):
        assert not is_instruction_file(Path("/p") / name)


async def test_tracked_published_refreshed_and_closed(server: InProcess) -> None:
    workspace = server.workspace
    workspace.write("project", ["use pnpm"])
    await server.initialize("emacs")  # a push client
    agents = workspace.root / "AGENTS.md"
    agents.write_text("# A\n\n" + block("use pnpm") + "\n")
    readme = workspace.root / "README.md"
    readme.write_text(block("stale") + "\n")
    uri, other = server.open(agents), server.open(readme)
    assert uri in server.ls.instructions.docs and other not in server.ls.instructions.docs
    assert server.ls.document(uri) is None  # not a memory document: no hover, symbols, lens
    assert pushed(server, uri) == [[]]
    assert pushed(server, other) == []

    # A store change elsewhere (another process) makes the block stale once rechecked.
    MemoryRuntime(workspace.root, agent_dir=str(workspace.agent_dir), trusted=True).add("new")
    publishing.refresh_all(server.ls)
    assert pushed(server, uri)[-1] == ["export-stale"]
    count = len(pushed(server, uri))
    publishing.refresh_all(server.ls)  # nothing changed: nothing sent again
    assert len(pushed(server, uri)) == count

    did_change(
        server.ls,
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                lsp.TextDocumentContentChangeWholeDocument(text=block("use pnpm", "new") + "\n")
            ],
        ),
    )
    assert pushed(server, uri)[-1] == []
    did_close(
        server.ls, lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri))
    )
    assert uri not in server.ls.instructions.docs
