"""Sending diagnostics: pushed, or pulled by clients that declare pull (SPEC §7 Diagnostics).

A client that declares ``textDocument.diagnostic`` gets pull diagnostics only
(and ``workspace/diagnostic/refresh`` when something outside the document
changed); every other client gets ``textDocument/publishDiagnostics``, never
both. What the diagnostics are is :mod:`memory_ls.server.diagnostics`' answer.
"""

from __future__ import annotations

import functools
import json
import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from memory_ls.server.documents import MemoryDocument
from memory_ls.server.protocol import send_encoded, send_json

if TYPE_CHECKING:
    from memory_ls.server.server import MemoryServer
    from memory_ls.store.runtime import MemoryRuntime

log = logging.getLogger("memory_ls.server")

REFRESH_DELAY = 0.02
"""Seconds a pull client's refresh waits, so a burst of changes asks it to pull once."""


def negotiate(ls: MemoryServer, params: lsp.InitializeParams) -> None:
    """Push or pull, as the client declares at ``initialize``.

    ``textDocument/diagnostic`` is registered here rather than up front, so that
    only a client that declares pull is offered it.
    """
    ls.pull = params.capabilities.text_document is not None and (
        params.capabilities.text_document.diagnostic is not None
    )
    if ls.pull:
        # Pulled and pushed diagnostics are the same structure; a client that shows
        # related information on pushes (Neovim declares it only there) shows it here.
        ls.analysis.related = bool(
            ls.capability("text_document.diagnostic.related_information")
            or ls.capability("text_document.publish_diagnostics.related_information")
        )
        ls.feature(
            lsp.TEXT_DOCUMENT_DIAGNOSTIC,
            lsp.DiagnosticOptions(
                identifier="memory", inter_file_dependencies=True, workspace_diagnostics=False
            ),
        )(pull_after_first_look)
        if not ls.capability("workspace.diagnostics.refresh_support"):
            # Such a client pulls on an edit and at no other time: what the rested look
            # (look_again_soon) finds could never reach it, and a pull answered with a
            # reused look would show a change that came just before until the next edit.
            ls.analysis.reuse_look = 0.0
    else:
        ls.analysis.related = bool(
            ls.capability("text_document.publish_diagnostics.related_information")
        )


def publish(ls: MemoryServer, doc: MemoryDocument, always: bool = False) -> None:
    """Push ``doc``'s diagnostics (pull clients are asked to re-pull instead).

    An open or a change always publishes, with the new version (SPEC §7); a
    background refresh (similar hints, the other store) only when they changed.
    """
    found = ls.document(doc.uri)
    if found is None:
        return
    state = found.state
    if ls.pull:
        request_refresh(ls)
        return
    body = ls.analysis.encoded(doc)
    look_again_soon(ls, state.info.runtime)
    if not always and body == state.sent:  # (a keystroke's always: not compared)
        return
    state.sent = body
    send_encoded(ls.protocol, *publish_parts(doc.uri, doc.version, body))


DISK_LOOK_REUSE = 0.25
"""Seconds for which an analysis pass takes the last pass's look at the disk (trust, the
configuration, the project folder's refusal, the stores' real paths) instead of its own
(``MemoryRuntime.steady``, in ``diagnostics.Analysis._update``): typing a keystroke
every 50 ms pays for a look once in five. A change there shows at the next pass after
this time, at once when a watcher reports it, and, with no event at all, once the
analysis rests (:func:`look_again_soon`)."""


def look_again_soon(ls: MemoryServer, runtime: MemoryRuntime) -> None:
    """Once the analysis has rested for a while, look at the disk afresh: an analysis may
    take the last one's look (``DISK_LOOK_REUSE``), and a change on disk that came meanwhile,
    with no watcher event after it, would otherwise stay unseen until the next edit."""

    def look() -> None:
        if runtime.look_again():
            ls.projects.invalidate()
            refresh_all(ls)

    ls.timers.later("disk-look", str(runtime.project_root), 2 * DISK_LOOK_REUSE, look)


_HEAD = json.dumps(
    {"jsonrpc": "2.0", "method": lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, "params": None}
)[: -len("null}")].encode()
_TAIL = b"]}}"


def publish_parts(uri: str, version: int | None, diagnostics: bytes) -> tuple[bytes, ...]:
    """:func:`publish_message` in the pieces it is joined from (a publish is framed and
    joined once, by :func:`send_encoded`: each copy of a 100 kB body costs)."""
    version_json = int.__repr__(version) if type(version) is int else json.dumps(version)
    params = f'{{"uri": {_uri_json(uri)}, "version": {version_json}, "diagnostics": ['
    return _HEAD, params.encode(), diagnostics, _TAIL


@functools.lru_cache(maxsize=256)
def _uri_json(uri: str) -> str:
    """``json.dumps(uri)``: the same few URIs are published at every keystroke."""
    return json.dumps(uri)


def publish_message(uri: str, version: int | None, diagnostics: bytes) -> bytes:
    """A ``publishDiagnostics`` notification around already encoded diagnostics.

    The same JSON pygls would write for the message built as objects (the separators
    of :func:`json.dumps`, ASCII only), made by joining bytes: encoding the whole list
    again on every keystroke was most of a publish's cost.
    """
    return b"".join(publish_parts(uri, version, diagnostics))


def push(ls: MemoryServer, uri: str, version: int | None, items: list[Any]) -> None:
    """Send one document's diagnostics (``textDocument/publishDiagnostics``)."""
    _send(ls, {"uri": uri, "version": version, "diagnostics": items})


def clear(ls: MemoryServer, uri: str) -> None:
    """Clear the diagnostics of a document that was closed (pull clients drop them themselves)."""
    if not ls.pull:
        _send(ls, {"uri": uri, "diagnostics": []})


def _send(ls: MemoryServer, params: dict[str, Any]) -> None:
    # Plain JSON: building lsprotocol objects for every diagnostic costs more than the analysis.
    message = {"jsonrpc": "2.0", "method": lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, "params": params}
    send_json(ls.protocol, message)


def request_refresh(ls: MemoryServer) -> None:
    """Ask a pull client to pull again (once per burst)."""
    if not ls.capability("workspace.diagnostics.refresh_support"):
        return
    if ls.refresh_requested:
        return
    ls.refresh_requested = True

    def send() -> None:
        ls.refresh_requested = False
        try:
            ls.workspace_diagnostic_refresh(None)
        except Exception as exc:
            log.warning("diagnostic refresh failed: %r", exc)

    ls.timers.later("refresh", "", REFRESH_DELAY, send)


def refresh_all(ls: MemoryServer, *, except_uri: str | None = None) -> None:
    """Recheck every open memory document (after a store, trust or settings change),
    and every open instruction file (its export block follows the stores)."""
    from memory_ls.server import instructions  # it publishes through this module

    if ls.pull and except_uri is None:
        request_refresh(ls)
    if not ls.pull:
        instructions.refresh(ls)
    for doc, _ in ls.open_documents():
        if doc.uri == except_uri:
            continue
        if ls.pull:
            continue
        try:
            publish(ls, doc)
        except Exception as exc:
            ls.log(f"memory-ls: could not check {doc.uri}: {exc!r}", lsp.MessageType.Error)


async def pull_after_first_look(ls: MemoryServer, params: lsp.DocumentDiagnosticParams) -> Any:
    """``textDocument/diagnostic`` (:func:`pull_diagnostics`), once the store's first look
    at its project (SPEC §13) has ended, when the client cannot be asked to pull again
    (no ``workspace.diagnostics.refreshSupport``): else its first answer would lack
    ``stale-path`` & co. until the next edit. At most ``FIRST_LOOK_WAIT`` seconds."""
    if not ls.capability("workspace.diagnostics.refresh_support"):
        from memory_ls.server import project_watch

        await project_watch.first_look(ls, params.text_document.uri)
    return pull_diagnostics(ls, params)


def pull_diagnostics(ls: MemoryServer, params: lsp.DocumentDiagnosticParams) -> Any:
    """``textDocument/diagnostic``: the full report, or ``unchanged`` for the same result."""
    found = ls.document(params.text_document.uri)
    if found is None:
        from memory_ls.server import instructions

        return instructions.pull(ls, params.text_document.uri)
    doc, state = found
    body = ls.analysis.encoded(doc)
    look_again_soon(ls, state.info.runtime)
    if body == state.sent and params.previous_result_id == str(state.result_id):
        return {"kind": "unchanged", "resultId": str(state.result_id)}
    if body != state.sent:
        state.result_id += 1
        state.sent = body
    items = json.loads(b"[" + body + b"]")
    return {"kind": "full", "resultId": str(state.result_id), "items": items}
