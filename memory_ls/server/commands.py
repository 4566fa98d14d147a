"""The ``memory.*`` commands (SPEC §7 Commands) and the open-buffer rule.

Each command takes one JSON object. Field values are validated by the runtime
and refused as a ``MemoryResult`` with ``error``; only an argument that is not
an object is a protocol error (``InvalidParams``). When a command changes a
store that is open in the editor, the buffer is brought up to date with a
``workspace/applyEdit``: a buffer that matched the file takes the file's new
text, and a buffer with unsaved edits gets the command's change applied to
*its* text, so neither the user's edits nor the command's change are lost.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import to_fs_path

from memory_ls.core.actions import (
    Change,
    apply_add,
    apply_clear,
    apply_forget,
    apply_merge,
    apply_update,
    check_scope,
    check_text,
)
from memory_ls.core.models import MemoryResult, Scope, other_scope
from memory_ls.server.documents import MemoryDocument
from memory_ls.server.edits import replacing_edit
from memory_ls.store.runtime import MemoryRuntime

if TYPE_CHECKING:
    from memory_ls.server.server import MemoryServer

log = logging.getLogger(__name__)

MUTATING = ("add", "update", "forget", "merge", "move", "clear")
COMMANDS = (
    "memory.add",
    "memory.update",
    "memory.forget",
    "memory.list",
    "memory.merge",
    "memory.move",
    "memory.clear",
    "memory.path",
    "memory.reload",
    "memory.doctor",
    "memory.inject",
)
APPLY_TIMEOUT = 5.0
CONFIRM_TIMEOUT = 600.0
CLEAR_CANNOT_ASK = (
    "memory.clear needs a client that can ask for confirmation "
    "(window/showMessageRequest); nothing was changed."
)
CLEAR_DECLINED = "memory.clear was not confirmed; nothing was changed."


def argument(command: str, args: tuple[Any, ...]) -> dict[str, Any]:
    """The command's one JSON object argument (none at all counts as ``{}``)."""
    if not args:
        return {}
    first = args[0]
    if not isinstance(first, Mapping):
        raise JsonRpcInvalidParams(
            f"{command} takes one JSON object argument, not {type(first).__name__}."
        )
    return dict(first)


def runtime_for(ls: MemoryServer, arg: Mapping[str, Any]) -> MemoryRuntime:
    """The project a command's ``uri`` picks (default: the first workspace folder)."""
    uri = arg.get("uri")
    path: Path | None = None
    if isinstance(uri, str) and uri:
        fs = to_fs_path(uri) if "://" in uri else uri
        path = Path(fs) if fs else None
    return ls.projects.runtime_for_uri_path(path)


async def execute(ls: MemoryServer, command: str, args: tuple[Any, ...]) -> Any:
    """Run one ``memory.*`` command and return its result."""
    arg = argument(command, args)
    runtime = runtime_for(ls, arg)
    name = command.removeprefix("memory.")
    if name == "list":
        return runtime.list()
    if name == "path":
        return runtime.path_info()
    if name == "inject":
        return runtime.inject()
    if name == "doctor":
        report: dict[str, Any] = dict(runtime.doctor_report())
        report["text"] = runtime.doctor_text()
        return report
    if name == "reload":
        changes = runtime.reload()
        ls.projects.invalidate()
        ls.refresh_all()
        # A MemoryResult (both scopes' notes as now read) plus what changed per scope.
        changed = any(c.added or c.removed for c in changes.values())
        return {
            **runtime.result("reload", "project", changed),
            "reloaded": {s: {"added": c.added, "removed": c.removed} for s, c in changes.items()},
        }
    return await _mutate(ls, runtime, name, arg)


async def _mutate(
    ls: MemoryServer, runtime: MemoryRuntime, action: str, arg: dict[str, Any]
) -> MemoryResult:
    scope, scope_error = check_scope(arg.get("scope"))
    # Ask only when the clear could happen: a bad scope, read-only or untrusted is refused as is.
    if action == "clear" and scope_error is None and runtime.refusal(scope) is None:
        refusal = await _confirm_clear(ls, runtime, scope)
        if refusal:
            return runtime.result("clear", scope, error=refusal)
    scopes: tuple[Scope, ...] = (scope, other_scope(scope)) if action == "move" else (scope,)
    before = {s: runtime.view(s).file.content for s in scopes}
    result = runtime.run(action, arg)
    ls.projects.invalidate()
    if "error" not in result:
        for s in scopes:
            after = runtime.view(s).file.content
            doc = ls.projects.open_store(runtime, s)
            if doc is not None and after != before[s]:
                transform = _transform(action, s, scope, result, arg)
                await sync_buffer(ls, doc, before[s], after, transform)
    ls.refresh_all()
    return result


def _transform(
    action: str, target: Scope, scope: Scope, result: MemoryResult, arg: Mapping[str, Any]
) -> Callable[[str], Change]:
    """The command's change as a function of a store's text (for a buffer with edits)."""
    entry = result.get("entry", "")
    to = result.get("to", "")
    if action == "add" or (action == "move" and target != scope):
        return lambda content: apply_add(content, entry)
    if action in ("forget", "move"):
        return lambda content: apply_forget(content, entry, target)
    if action == "update":
        return lambda content: apply_update(content, entry, to, target)
    if action == "merge":
        other, _ = check_text(arg.get("other"), "other")
        return lambda content: apply_merge(content, entry, other, to, target)
    return apply_clear


async def sync_buffer(
    ls: MemoryServer,
    doc: MemoryDocument,
    before: str,
    after: str,
    transform: Callable[[str], Change],
) -> None:
    """Show a command's change in an open buffer without losing unsaved edits."""
    buffer = doc.text()
    if buffer == before:
        new = after
    else:
        change = transform(buffer)
        if change.error or not change.changed:
            return
        new = change.content
    if new == buffer:
        return
    if not ls.can_apply_edit():
        log.info("the client cannot apply edits; %s is out of date in the editor", doc.path)
        return
    edit = buffer_edit(ls, doc, new)
    try:
        await asyncio.wait_for(
            ls.workspace_apply_edit_async(
                lsp.ApplyWorkspaceEditParams(edit=edit, label="memory-ls")
            ),
            APPLY_TIMEOUT,
        )
    except Exception as exc:  # the client may refuse or never answer
        ls.log(f"Could not update the open buffer of {doc.path}: {exc!r}", lsp.MessageType.Warning)


def buffer_edit(ls: MemoryServer, doc: MemoryDocument, new: str) -> lsp.WorkspaceEdit:
    """One text edit turning ``doc``'s text into ``new`` (only the lines that differ)."""
    edit = replacing_edit(doc.lines, new, doc.eol, ls.analysis.encoding)
    return ls.workspace_edit(doc, [] if edit is None else [edit])


async def _confirm_clear(ls: MemoryServer, runtime: MemoryRuntime, scope: Scope) -> str | None:
    """Ask the user; the reason to refuse, or ``None`` when they confirmed."""
    caps = ls.client_capabilities.window
    if caps is None or caps.show_message is None:
        return CLEAR_CANNOT_ASK
    count = len(runtime.view(scope).parsed.bullets)
    params = lsp.ShowMessageRequestParams(
        type=lsp.MessageType.Warning,
        message=(
            f"Clear all {count} {scope} memory note(s) in {runtime.paths[scope]}? "
            "This cannot be undone."
        ),
        actions=[lsp.MessageActionItem(title="Clear"), lsp.MessageActionItem(title="Cancel")],
    )
    try:
        answer = await asyncio.wait_for(
            ls.window_show_message_request_async(params), CONFIRM_TIMEOUT
        )
    except Exception as exc:
        ls.log(f"memory.clear: no confirmation ({exc!r})", lsp.MessageType.Warning)
        return CLEAR_DECLINED
    if answer is None or answer.title != "Clear":
        return CLEAR_DECLINED
    return None
