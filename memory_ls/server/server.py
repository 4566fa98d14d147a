"""The language server: wiring of every feature, and :func:`serve` (SPEC §7).

Each handler reads like a sentence: find the document, ask the feature module,
send the answer. Anything unexpected in a notification handler is logged to
the client's log (``window/logMessage``), never shown as a pop-up, and the
server carries on.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from lsprotocol import types as lsp
from pygls.exceptions import (
    FeatureRequestError,
    JsonRpcException,
    JsonRpcInternalError,
)
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from memory_ls import __version__
from memory_ls.server import (
    background,
    code_actions,
    commands,
    formatting,
    hover,
    lens,
    publishing,
    settings_sync,
    symbols,
)
from memory_ls.server.background import Timers
from memory_ls.server.diagnostics import Analysis, DocState, disk_facts
from memory_ls.server.documents import MemoryDocument, Span
from memory_ls.server.protocol import CLIENT_TIMEOUT, FramedStdin, MemoryProtocol
from memory_ls.server.settings import Settings
from memory_ls.server.workspace import Projects

log = logging.getLogger("memory_ls.server")
F = TypeVar("F", bound=Callable[..., Any])

OTHERS_DELAY = 0.03
"""Seconds after an edit before the other store's diagnostics are refreshed."""


class OpenDocument(NamedTuple):
    """An open memory document and its diagnostics state."""

    doc: MemoryDocument
    state: DocState


class MemoryServer(LanguageServer):
    """The memory-ls language server and its state."""

    protocol: MemoryProtocol

    def __init__(self) -> None:
        super().__init__(
            "memory-ls",
            __version__,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
            protocol_cls=MemoryProtocol,
        )
        self.projects = Projects()
        self.analysis = Analysis(self.projects)
        self.open_buffers = commands.OpenBuffers()
        self.pull = False
        self.init_settings = Settings()
        self.reported: set[str] = set()
        self.timers = Timers(lambda message: self.log(message, lsp.MessageType.Error))
        self.refresh_requested = False

    # -- open documents --------------------------------------------------------------

    def document(self, uri: str) -> OpenDocument | None:
        """The open memory document at ``uri`` and its diagnostics state, if there is one."""
        doc = self.projects.documents.get(uri)
        state = self.analysis.states.get(uri)
        return None if doc is None or state is None else OpenDocument(doc, state)

    def open_documents(self) -> list[OpenDocument]:
        """Every open memory document (a copy: handlers may open or close documents meanwhile)."""
        return [found for uri in list(self.projects.documents) if (found := self.document(uri))]

    def is_open(self, doc: MemoryDocument) -> bool:
        """Whether ``doc`` is still open (not closed, nor closed and opened again)."""
        return self.projects.documents.get(doc.uri) is doc

    def track(self, doc: MemoryDocument, state: DocState) -> None:
        """Start tracking a document that was opened."""
        self.projects.open(doc)
        self.analysis.states[doc.uri] = state

    def untrack(self, uri: str) -> MemoryDocument | None:
        """Stop tracking a document that was closed; the document, if it was tracked."""
        self.analysis.states.pop(uri, None)
        return self.projects.close(uri)

    # -- talking to the client -------------------------------------------------------

    def log(self, message: str, kind: lsp.MessageType = lsp.MessageType.Info) -> None:
        """A line in the client's log (never a pop-up)."""
        try:
            self.window_log_message(lsp.LogMessageParams(type=kind, message=message))
        except Exception:  # no transport yet, or gone
            log.warning("%s", message)

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Errors are logged, not shown: a notification must never pop up an error.

        pygls' read loop reports with ``source`` ``JsonRpcException``; anything but a
        ``JsonRpcException`` from there is a body that ``json.loads`` refused.
        """
        if source is JsonRpcException and not isinstance(error, JsonRpcException):
            self.protocol.answer_unparsable(error)
            return
        if source is FeatureRequestError and not isinstance(error, JsonRpcInternalError):
            return  # the client's mistake (bad params, unknown method), already answered
        self.log(f"memory-ls: internal error: {error}", lsp.MessageType.Error)

    def capability(self, path: str) -> Any:
        """A client capability by dotted path (``None`` when not declared)."""
        value: Any = self.client_capabilities
        for part in path.split("."):
            value = getattr(value, part, None)
            if value is None:
                return None
        return value

    def can_apply_edit(self) -> bool:
        """Whether the client accepts ``workspace/applyEdit``."""
        return bool(self.capability("workspace.apply_edit"))

    def workspace_edit(self, doc: MemoryDocument, edits: list[lsp.TextEdit]) -> lsp.WorkspaceEdit:
        """Edits to one document: ``documentChanges`` when the client has them, else ``changes``."""
        if self.capability("workspace.workspace_edit.document_changes"):
            return lsp.WorkspaceEdit(
                document_changes=[
                    lsp.TextDocumentEdit(
                        text_document=lsp.OptionalVersionedTextDocumentIdentifier(
                            uri=doc.uri, version=doc.version
                        ),
                        edits=list(edits),
                    )
                ]
            )
        return lsp.WorkspaceEdit(changes={doc.uri: list(edits)})

    def folders_from(self, params: lsp.InitializeParams) -> list[Path]:
        """The workspace folders (or the root) as paths."""
        uris = [f.uri for f in params.workspace_folders or []]
        if not uris and params.root_uri:
            uris = [params.root_uri]
        paths = [to_fs_path(u) for u in uris]
        if not uris and params.root_path:
            paths = [params.root_path]
        return [Path(p) for p in paths if p]


# -- handlers ---------------------------------------------------------------------------


def guarded(fn: F) -> F:
    """Log (never raise) whatever goes wrong in a notification handler."""

    @functools.wraps(fn)
    def wrapper(ls: MemoryServer, *args: Any) -> Any:
        try:
            return fn(ls, *args)
        except Exception as exc:
            log.exception("handler %s failed", fn.__name__)
            ls.log(f"memory-ls: {fn.__name__} failed: {exc!r}", lsp.MessageType.Error)
            return None

    return wrapper  # type: ignore[return-value]


def initialize(ls: MemoryServer, params: lsp.InitializeParams) -> None:
    """Read settings and folders; offer pull diagnostics only to clients that declare them."""
    settings = settings_sync.from_initialization_options(ls, params.initialization_options)
    ls.projects.configure(settings, ls.folders_from(params))
    encoding = ls.workspace.position_encoding or "utf-16"
    ls.analysis.encoding = str(getattr(encoding, "value", encoding))
    publishing.negotiate(ls, params)


async def initialized(ls: MemoryServer, params: lsp.InitializedParams) -> None:
    """Pull settings, watch the files memory depends on, then freeze start-up garbage."""
    try:
        await settings_sync.pull_settings(ls)
        await register_watchers(ls)
    except Exception as exc:
        ls.log(f"memory-ls: start-up step failed: {exc!r}", lsp.MessageType.Warning)
    gc.collect()
    gc.freeze()


async def register_watchers(ls: MemoryServer) -> None:
    """Watch the stores, ``bytefly.json`` and ``trust.json`` where the client allows it."""
    if not ls.capability("workspace.did_change_watched_files.dynamic_registration"):
        return
    agent = ls.projects.default_runtime().agent_dir
    watchers: list[lsp.FileSystemWatcher] = [
        lsp.FileSystemWatcher(glob_pattern="**/.pi/memory.md"),
        lsp.FileSystemWatcher(glob_pattern="**/.pi/bytefly.json"),
    ]
    if ls.capability("workspace.did_change_watched_files.relative_pattern_support"):
        watchers.append(
            lsp.FileSystemWatcher(
                glob_pattern=lsp.RelativePattern(
                    base_uri=from_fs_path(str(agent)) or str(agent),
                    pattern="{memory.md,bytefly.json,trust.json}",
                )
            )
        )
    else:
        watchers.extend(
            lsp.FileSystemWatcher(glob_pattern=str(agent / name))
            for name in ("memory.md", "bytefly.json", "trust.json")
        )
    params = lsp.RegistrationParams(
        registrations=[
            lsp.Registration(
                id="memory-ls-watched-files",
                method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=lsp.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
            )
        ]
    )
    await asyncio.wait_for(ls.client_register_capability_async(params), CLIENT_TIMEOUT)


def _path_of(uri: str) -> Path | None:
    if not uri.startswith("file:"):
        return None
    fs = to_fs_path(uri)
    return Path(fs) if fs else None


@guarded
def did_open(ls: MemoryServer, params: lsp.DidOpenTextDocumentParams) -> None:
    """Track a memory document and check it; other documents get nothing."""
    item = params.text_document
    path = _path_of(item.uri)
    if path is None:
        return
    info = ls.projects.describe(path)
    if info is None:
        return
    doc = MemoryDocument(item.uri, path, item.text, item.version)
    ls.track(doc, DocState(info, disk_facts(doc)))
    publishing.publish(ls, doc, always=True)
    background.start_similar(ls, doc)
    ls.timers.later(
        "others", "", OTHERS_DELAY, lambda: publishing.refresh_all(ls, except_uri=doc.uri)
    )


@guarded
def did_change(ls: MemoryServer, params: lsp.DidChangeTextDocumentParams) -> None:
    """Apply the edit to the per-line state, then re-check what it touched."""
    found = ls.document(params.text_document.uri)
    if found is None:
        return
    doc = found.doc
    notes_before = doc.notes_version
    encoding = ls.analysis.encoding
    for change in params.content_changes:
        if isinstance(change, lsp.TextDocumentContentChangePartial):
            r = change.range
            span = Span(r.start.line, r.start.character, r.end.line, r.end.character)
            doc.apply_change(span, change.text, encoding)
        else:
            doc.apply_change(None, change.text, encoding)
    doc.version = params.text_document.version
    commands.buffer_changed(ls, doc)
    publishing.publish(ls, doc, always=True)
    if doc.notes_version != notes_before:
        background.similar_after_edit(ls, doc)
        ls.timers.later(
            "others", "", OTHERS_DELAY, lambda: publishing.refresh_all(ls, except_uri=doc.uri)
        )


@guarded
def did_close(ls: MemoryServer, params: lsp.DidCloseTextDocumentParams) -> None:
    """Forget the document and clear its diagnostics."""
    doc = ls.untrack(params.text_document.uri)
    if doc is None:
        return
    commands.buffer_closed(ls, doc.uri)
    publishing.clear(ls, doc.uri)
    ls.projects.invalidate()
    publishing.refresh_all(ls)


@guarded
def did_save(ls: MemoryServer, params: lsp.DidSaveTextDocumentParams) -> None:
    """The file on disk changed: re-read what depends on it."""
    found = ls.document(params.text_document.uri)
    if found is not None:
        found.state.disk = disk_facts(found.doc)
        commands.buffer_changed(ls, found.doc)  # saved: the buffer is the file now
    ls.projects.invalidate()
    publishing.refresh_all(ls)


@guarded
def did_change_watched_files(ls: MemoryServer, params: lsp.DidChangeWatchedFilesParams) -> None:
    """A store, ``bytefly.json`` or ``trust.json`` changed on disk: recheck everything."""
    for doc, state in ls.open_documents():
        state.disk = disk_facts(doc)
        state.not_injected = None
    ls.projects.invalidate()
    publishing.refresh_all(ls, redescribe=True)


@guarded
def did_change_folders(ls: MemoryServer, params: lsp.DidChangeWorkspaceFoldersParams) -> None:
    """Each workspace folder is its own project."""
    folders = [ls.projects.folders[i] for i in range(len(ls.projects.folders))]
    removed = {to_fs_path(f.uri) for f in params.event.removed}
    folders = [f for f in folders if str(f) not in removed]
    folders += [Path(p) for f in params.event.added if (p := to_fs_path(f.uri))]
    ls.projects.configure(ls.projects.settings, folders)
    publishing.refresh_all(ls, redescribe=True)


def make_command(name: str) -> Callable[..., Any]:
    """The handler of one ``memory.*`` command."""

    async def handler(ls: MemoryServer, *args: Any) -> Any:
        try:
            return await commands.execute(ls, name, args)
        except JsonRpcException:
            raise
        except Exception as exc:
            log.exception("command %s failed", name)
            raise JsonRpcInternalError(f"{name} failed: {exc}") from None

    handler.__name__ = name.replace(".", "_")
    return handler


def create_server() -> MemoryServer:
    """A server with every feature registered."""
    ls = MemoryServer()
    ls.feature(lsp.INITIALIZE)(initialize)
    ls.feature(lsp.INITIALIZED)(initialized)
    ls.feature(lsp.TEXT_DOCUMENT_DID_OPEN)(did_open)
    ls.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)(did_change)
    ls.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)(did_close)
    ls.feature(lsp.TEXT_DOCUMENT_DID_SAVE, lsp.SaveOptions(include_text=False))(did_save)
    ls.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)(did_change_watched_files)
    ls.feature(lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(did_change_folders)
    for name in commands.COMMANDS:
        ls.command(name)(make_command(name))
    settings_sync.register(ls)
    code_actions.register(ls)
    symbols.register(ls)
    hover.register(ls)
    lens.register(ls)
    formatting.register(ls)
    return ls


def serve(transport: str, host: str | None, port: int | None) -> int:
    """Run the language server on ``stdio``, ``tcp`` or ``ws``; returns the exit code."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    logging.getLogger("pygls").setLevel(logging.ERROR)
    ls = create_server()
    if transport == "stdio":
        ls.start_io(stdin=FramedStdin(sys.stdin.buffer))  # type: ignore[arg-type]
    elif transport == "tcp":
        ls.start_tcp(host or "127.0.0.1", port or 2087)
    elif transport == "ws":
        ls.start_ws(host or "127.0.0.1", port or 2087)
    else:
        print(f"memory-ls: unknown transport {transport!r}", file=sys.stderr)
        return 2
    return ls.protocol.exit_code
