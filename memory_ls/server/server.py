"""The language server: its state, the wiring of the feature modules, and :func:`serve` (SPEC §7).

Each feature module registers its own handlers (``register(ls)``), and each
handler reads like a sentence: get the document (:meth:`MemoryServer.document`),
ask the analysis or the runtime, send the answer. ``docs/architecture.md`` says
which module holds what.
"""

from __future__ import annotations

import gc
import logging
import sys
from typing import Any, NamedTuple

from lsprotocol import types as lsp
from pygls.exceptions import (
    FeatureRequestError,
    JsonRpcException,
    JsonRpcInternalError,
)
from pygls.lsp.server import LanguageServer

from memory_ls import __version__
from memory_ls.core.checks import note_hash
from memory_ls.server import (
    code_actions,
    commands,
    document_sync,
    formatting,
    hover,
    lens,
    project_watch,
    publishing,
    review,
    settings_sync,
    symbols,
)
from memory_ls.server.background import Timers
from memory_ls.server.diagnostics import Analysis, DocState
from memory_ls.server.documents import MemoryDocument
from memory_ls.server.instructions import InstructionFiles
from memory_ls.server.positions import to_client
from memory_ls.server.protocol import MemoryProtocol, start_stdio, start_tcp, start_ws
from memory_ls.server.settings import Settings
from memory_ls.server.workspace import Projects

log = logging.getLogger("memory_ls.server")


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
        """Every project, and the open documents (``workspace.py``)."""
        self.analysis = Analysis(self.projects)
        """Each open document's diagnostics state and findings (``diagnostics.py``)."""
        self.open_buffers = commands.OpenBuffers()
        """The order of commands per store, and what open buffers lack (``commands.py``)."""
        self.timers = Timers(lambda message: self.log(message, lsp.MessageType.Error))
        """Calls that wait for a pause (``background.py``)."""
        self.pull = False
        """Whether the client pulls diagnostics, decided at initialize (``publishing.py``)."""
        self.refresh_requested = False
        """Whether a ``workspace/diagnostic/refresh`` is already scheduled (``publishing.py``)."""
        self.init_settings = Settings()
        """The settings in ``initializationOptions``, under the client's later ones."""
        self.reported: dict[str, None] = {}
        """Settings problems already reported, oldest first (each is reported once)."""
        self.instructions = InstructionFiles()
        """Open AGENTS.md / CLAUDE.md / GEMINI.md files, for ``export-stale`` (``instructions.py``)."""
        self.unjudged: dict[str, MemoryDocument] = {}
        """Open files named ``memory.md`` that are no store now, kept in step with the
        editor: a settings change (``agentDir``) may make one a store (``document_sync.py``)."""
        self.client_name = "lsp"
        """The client's ``clientInfo.name``: who proposes through ``memory.propose`` (§12)."""
        self.inbox_stamps: dict[str, Any] = {}
        """The review inboxes' stamps last seen (``review.py``)."""
        self.inbox_task: Any = None
        """The task that watches the review inboxes (``review.py``)."""

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
        """Whether the client accepts ``workspace/applyEdit``: not once it asked to shut
        down (a command that began before ends after it), as pygls then reads neither
        the client's answer nor the ``didChange`` showing the edit."""
        if getattr(self.protocol, "_shutdown", False):
            return False
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


# -- wiring -----------------------------------------------------------------------------


def initialize(ls: MemoryServer, params: lsp.InitializeParams) -> None:
    """Read settings and folders; offer pull diagnostics only to clients that declare them."""
    settings = settings_sync.from_initialization_options(ls, params.initialization_options)
    ls.projects.configure(settings, document_sync.folders_from(params))
    encoding = ls.workspace.position_encoding or "utf-16"
    ls.analysis.encoding = str(getattr(encoding, "value", encoding))
    publishing.negotiate(ls, params)
    if params.client_info is not None:
        from memory_ls.core.inbox import clean_by

        ls.client_name = clean_by(params.client_info.name, ls.client_name)


async def initialized(ls: MemoryServer, params: lsp.InitializedParams) -> None:
    """Pull settings, watch the files memory depends on, then freeze start-up's objects."""
    prepare_first_publish(ls)
    try:
        await settings_sync.pull_settings(ls)
        await document_sync.register_watchers(ls)
        review.start(ls)
    except Exception as exc:
        ls.log(f"memory-ls: start-up step failed: {exc!r}", lsp.MessageType.Warning)
    await project_watch.register_watchers(ls)  # SPEC §13: the project tree (logs a failure)
    # Start-up's objects out of the collector's way for good. Frozen as they are: a full
    # collection first found nothing to free (0 objects in bench sessions on 4500) and
    # cost 40-65 ms, and it ran when the client's answers came, right after an opened
    # store's first publish, holding up the `similar` wave and a keystroke typed then.
    gc.freeze()


def prepare_first_publish(ls: MemoryServer) -> None:
    """Load what a store's first publish would otherwise load while the editor waits for it:
    BLAKE2b for the notes' hashes (``_blake2``) and the codec of the negotiated position
    encoding (UTF-16's is imported on first use). ~1 ms, run once the client has its
    ``initialize`` answer and before it can open a document (issue 11: open)."""
    note_hash("")
    to_client("\u00e9", 1, ls.analysis.encoding)


def create_server() -> MemoryServer:
    """A server with every feature registered."""
    ls = MemoryServer()
    ls.feature(lsp.INITIALIZE)(initialize)
    ls.feature(lsp.INITIALIZED)(initialized)
    document_sync.register(ls)
    commands.register(ls)
    settings_sync.register(ls)
    code_actions.register(ls)
    symbols.register(ls)
    hover.register(ls)
    lens.register(ls)
    formatting.register(ls)
    project_watch.register(ls)
    return ls


def serve(transport: str, host: str | None, port: int | None) -> int:
    """Run the language server on ``stdio``, ``tcp`` or ``ws``; returns the exit code."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    logging.getLogger("pygls").setLevel(logging.ERROR)
    ls = create_server()
    if transport == "stdio":
        if sys.stdin is None or sys.stdout is None:  # started with fd 0 or 1 closed
            print("memory-ls: serve needs standard input and output open", file=sys.stderr)
            return 2
        start_stdio(ls)
    elif transport == "tcp":
        start_tcp(ls, host or "127.0.0.1", port or 2087)
    elif transport == "ws":
        start_ws(ls, host or "127.0.0.1", port or 2087)
    else:
        print(f"memory-ls: unknown transport {transport!r}", file=sys.stderr)
        return 2
    return ls.protocol.exit_code
