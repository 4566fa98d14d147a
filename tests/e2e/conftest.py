"""End-to-end harness: the real server over stdio, driven by pytest-lsp's client.

Every test runs the server on the shared ``workspace`` (a temporary project with
an empty ``.git/``, agent dir and ``HOME``), so the real home is never touched. The client answers ``workspace/applyEdit`` like an editor (it applies the
edit to its copy of the buffer and sends ``didChange``), ``client/registerCapability``
and ``window/showMessageRequest`` (with the answer a test chooses).
"""

from __future__ import annotations

import ast
import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest_asyncio
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient, client_capabilities, make_test_lsp_client

from memory_ls.server.positions import from_client
from memory_ls.server.uris import uri_of_path
from tests.conftest import Workspace

PRESETS = ["visual-studio-code", "neovim", "emacs"]
TIMEOUT = 10.0


def uri_of(path: Path) -> str:
    """The URI an editor sends for ``path`` (a name that is not UTF-8 quoted byte for byte)."""
    return uri_of_path(path)


def apply_text_edits(text: str, edits: list[lsp.TextEdit], encoding: str) -> str:
    """Apply LSP text edits to ``text`` the way an editor does (last first)."""
    lines = text.split("\n")

    def offset(pos: lsp.Position) -> int:
        line = min(pos.line, len(lines) - 1)
        col = from_client(lines[line], pos.character, encoding) if pos.line < len(lines) else 0
        return sum(len(x) + 1 for x in lines[:line]) + col

    spans = sorted(
        ((offset(e.range.start), offset(e.range.end), e.new_text) for e in edits), reverse=True
    )
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def edits_for(edit: lsp.WorkspaceEdit, uri: str) -> list[lsp.TextEdit]:
    out: list[lsp.TextEdit] = []
    if edit.document_changes:
        for change in edit.document_changes:
            if isinstance(change, lsp.TextDocumentEdit) and change.text_document.uri == uri:
                out.extend(e for e in change.edits if isinstance(e, lsp.TextEdit))
    if edit.changes:
        out.extend(edit.changes.get(uri, []))
    return out


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


@dataclass
class Session:
    client: LanguageClient
    workspace: Workspace
    preset: str
    encoding: str = "utf-16"
    pull: bool = False
    buffers: dict[str, str] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)
    confirm: str | None = "Clear"
    asked: list[lsp.ShowMessageRequestParams] = field(default_factory=list)
    applied: list[lsp.WorkspaceEdit] = field(default_factory=list)
    registrations: list[lsp.Registration] = field(default_factory=list)
    server_capabilities: lsp.ServerCapabilities | None = None
    refuse: Callable[[Session, lsp.WorkspaceEdit], str | None] | None = None
    """Asked before applying an edit: a reason makes the client answer ``applied: false``."""
    change_delay: float = 0.0
    """Seconds between answering ``workspace/applyEdit`` and sending its ``didChange``."""

    # -- documents -------------------------------------------------------------------

    def open(self, path: Path, text: str | None = None, language: str = "markdown") -> str:
        uri = uri_of(path)
        if text is None:
            text = path.read_text(encoding="utf-8")
        self.buffers[uri] = text
        self.versions[uri] = 1
        self.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(
                    uri=uri, language_id=language, version=1, text=text
                )
            )
        )
        return uri

    def edit(self, uri: str, edits: list[lsp.TextEdit], delay: float = 0.0) -> None:
        """Apply edits locally and send them as one incremental didChange (``delay`` s later)."""
        self.versions[uri] += 1
        self.buffers[uri] = apply_text_edits(self.buffers[uri], edits, self.encoding)
        changes: list[lsp.TextDocumentContentChangeEvent] = [
            lsp.TextDocumentContentChangePartial(range=e.range, text=e.new_text)
            for e in sorted(
                edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
            )
        ]
        params = lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=changes,
        )
        if delay:
            asyncio.get_running_loop().call_later(
                delay, self.client.text_document_did_change, params
            )
        else:
            self.client.text_document_did_change(params)

    def replace_all(self, uri: str, text: str) -> None:
        self.versions[uri] += 1
        self.buffers[uri] = text
        self.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(
                    uri=uri, version=self.versions[uri]
                ),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    # -- diagnostics -----------------------------------------------------------------

    async def diagnostics(self, uri: str) -> list[lsp.Diagnostic]:
        """The current diagnostics (pulled for pull clients, last push otherwise)."""
        if self.pull:
            report = await asyncio.wait_for(
                self.client.text_document_diagnostic_async(
                    lsp.DocumentDiagnosticParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
                ),
                TIMEOUT,
            )
            assert isinstance(report, lsp.RelatedFullDocumentDiagnosticReport)
            return list(report.items)
        return list(self.client.diagnostics.get(uri, []))

    async def wait_for(
        self, uri: str, predicate: Callable[[list[lsp.Diagnostic]], bool], timeout: float = TIMEOUT
    ) -> list[lsp.Diagnostic]:
        """Poll until the document's diagnostics satisfy ``predicate``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            found = await self.diagnostics(uri)
            if predicate(found):
                return found
            if loop.time() > deadline:
                raise AssertionError(
                    f"diagnostics never matched: {[(d.code, d.message) for d in found]}"
                )
            await asyncio.sleep(0.05)

    async def codes(self, uri: str, *expected: str) -> list[lsp.Diagnostic]:
        want = set(expected)
        return await self.wait_for(uri, lambda ds: want <= {str(d.code) for d in ds})

    async def command(self, name: str, argument: Any = None) -> Any:
        args = [] if argument is None else [argument]
        return await asyncio.wait_for(
            self.client.workspace_execute_command_async(
                lsp.ExecuteCommandParams(command=name, arguments=args)
            ),
            TIMEOUT,
        )

    async def command_while_locked(
        self, locked: Path, env: dict[str, str], name: str, argument: Any, hover_uri: str
    ) -> tuple[Any, lsp.Hover | None]:
        """Run a command while another process holds ``locked``'s lock, and hover meanwhile.

        The hover must be answered (within 2 s) while the command still waits: a
        command waits for a lock off the event loop. Returns the command's result
        once the lock is released, and the hover.
        """
        from tests.lock_holder import held_lock

        loop = asyncio.get_running_loop()
        with held_lock(locked, env):
            began = loop.time()
            running = asyncio.ensure_future(self.command(name, argument))
            await asyncio.sleep(0.3)  # the command is waiting for the lock by now
            hover = await asyncio.wait_for(
                self.client.text_document_hover_async(
                    lsp.HoverParams(
                        text_document=lsp.TextDocumentIdentifier(uri=hover_uri),
                        position=lsp.Position(2, 3),
                    )
                ),
                2.0,
            )
            hovered = loop.time() - began
            assert not running.done(), f"{name} did not wait for the lock"
            result = await running
        assert hovered < 3, f"the hover waited for {name}"
        return result, hover


def _install_handlers(session: Session) -> None:
    client = session.client

    @client.feature(lsp.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
        session.applied.append(params.edit)
        reason = session.refuse(session, params.edit) if session.refuse else None
        if reason is not None:
            return lsp.ApplyWorkspaceEditResult(applied=False, failure_reason=reason)
        for uri in list(session.buffers):
            edits = edits_for(params.edit, uri)
            if edits:
                session.edit(uri, edits, session.change_delay)
        return lsp.ApplyWorkspaceEditResult(applied=True)

    @client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def register(params: lsp.RegistrationParams) -> None:
        session.registrations.extend(params.registrations)

    @client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
    def ask(params: lsp.ShowMessageRequestParams) -> lsp.MessageActionItem | None:
        session.asked.append(params)
        return lsp.MessageActionItem(title=session.confirm) if session.confirm else None


@pytest_asyncio.fixture
async def start(workspace: Workspace) -> AsyncIterator[Callable[..., Any]]:
    """``await start(preset, init_options=..., configuration=...)`` → an initialised Session."""
    sessions: list[Session] = []

    async def _start(
        preset: str = "visual-studio-code",
        init_options: Any = None,
        configuration: dict[str, Any] | None = None,
        folders: list[Path] | None = None,
    ) -> Session:
        client = make_test_lsp_client()
        if configuration is not None:
            client.set_configuration(configuration, section="memoryLs")
        env = {**workspace.env(), "PYTHONUNBUFFERED": "1"}
        session = Session(client, workspace, preset)
        _install_handlers(session)
        await client.start_io(sys.executable, "-m", "memory_ls.server", env=env)
        sessions.append(session)
        caps = client_capabilities(preset)
        folder_paths = folders or [workspace.root]
        result = await asyncio.wait_for(
            client.initialize_session(
                lsp.InitializeParams(
                    capabilities=caps,
                    root_uri=uri_of(folder_paths[0]),
                    workspace_folders=[
                        lsp.WorkspaceFolder(uri=uri_of(f), name=f.name) for f in folder_paths
                    ],
                    initialization_options=init_options,
                )
            ),
            TIMEOUT,
        )
        session.server_capabilities = result.capabilities
        enc = result.capabilities.position_encoding or "utf-16"
        session.encoding = str(getattr(enc, "value", enc))
        session.pull = result.capabilities.diagnostic_provider is not None
        await asyncio.sleep(0.1)  # let `initialized` pull settings and register watchers
        return session

    yield _start
    for session in sessions:
        try:
            await asyncio.wait_for(session.client.shutdown_session(), TIMEOUT)
        except Exception:
            await session.client.stop()
