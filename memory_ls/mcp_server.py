"""``memory-ls mcp``: the memory tool and the recall resources over MCP (SPEC §11).

A thin layer over :class:`~memory_ls.store.runtime.MemoryRuntime`, built on the
official ``mcp`` SDK's ``MCPServer``: it turns tool arguments into one runtime
call and the :data:`MemoryResult` back into Pi's result texts. Nothing but the
protocol is written to stdout; logs go to stderr. The language-server stack
(pygls, lsprotocol) is never imported here.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    CallToolResult,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    TextContent,
    ToolAnnotations,
    jsonrpc_message_adapter,
)
from pydantic import PlainValidator, ValidationError, WithJsonSchema

from memory_ls import __version__
from memory_ls.core.actions import ACTION_MESSAGE, check_scope
from memory_ls.core.config import finite_json_float
from memory_ls.core.models import MemoryResult, Scope
from memory_ls.core.render import result_text
from memory_ls.core.text import without_lone_surrogates
from memory_ls.schemas import memory_result_schema
from memory_ls.store.paths import project_start, real_path, unfollowable
from memory_ls.store.runtime import MemoryRuntime

log = logging.getLogger("memory_ls.mcp")

TOOL_NAME = "memory"
TOOL_ACTIONS = ("add", "update", "forget", "list")
"""What an agent may do through MCP: no merge, move or bulk clear."""

TOOL_DESCRIPTION = (
    "Durable memory across sessions. Saved notes are recalled automatically at the start "
    "of later sessions, so there is no need to list them before working. Save one short "
    "fact per call (a preference, a convention, a command that works). Use scope "
    '"project" (the default) for facts about this repository and "global" for facts that '
    "hold across projects. update and forget need the note's exact text (see list). "
    "There is no bulk clear."
)

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {
            "type": "string",
            "enum": list(TOOL_ACTIONS),
            "description": "add a note, update one, forget one, or list both scopes.",
        },
        "text": {
            "type": "string",
            "description": (
                "add: the note, one fact on one line (at most 500 characters). "
                "update/forget: the exact text of the stored note."
            ),
        },
        "to": {
            "type": "string",
            "description": "update: the note's new text.",
        },
        "scope": {
            "type": "string",
            "enum": ["project", "global"],
            "description": 'Which store: "project" (default) or "global".',
        },
    },
    "required": ["action"],
}

REVIEW_DESCRIPTION = (
    " Review is on: add, update and forget do not change memory; each becomes a proposal "
    "that waits in an inbox until a person accepts or rejects it, so a saved fact is not "
    "recalled until then (list shows only accepted notes)."
)
"""Appended to the tool's description under ``--review`` (SPEC §12)."""

PROPOSED_ACTIONS = ("add", "update", "forget")

# A raw value, passed through untouched: the runtime validates every field
# (SPEC §3), so a missing, non-string or unknown value must reach it. Typed
# exactly ``str`` so the SDK does not JSON-pre-parse it ("null" stays a string).
RawArg = Annotated[str, PlainValidator(lambda value: value), WithJsonSchema({"type": "string"})]
ToolResult = Annotated[CallToolResult, MemoryResult]


def tool_result(result: MemoryResult, text: str | None = None) -> CallToolResult:
    """A ``CallToolResult`` whose structured content is ``result`` on every call.

    Like every answer of this server, it passes through
    :func:`~memory_ls.core.text.without_lone_surrogates`: a path from a folder
    whose name is not UTF-8 must not stop the SDK from writing it.
    """
    result = without_lone_surrogates(result)
    shown = result_text(result) if text is None else without_lone_surrogates(text)
    return CallToolResult(
        content=[TextContent(type="text", text=shown)],
        structured_content=dict(result),
        is_error=bool(result.get("error")),
    )


def run_tool(runtime: MemoryRuntime, action: object, args: Mapping[str, object]) -> MemoryResult:
    """One ``memory`` tool call: only add, update, forget and list get through."""
    if not isinstance(action, str) or action not in TOOL_ACTIONS:
        scope, _ = check_scope(args.get("scope"))
        name = action if isinstance(action, str) else ""
        return runtime.result(name, scope, error=ACTION_MESSAGE)
    return runtime.run(action, args)


def failure(
    runtime: MemoryRuntime, action: object, args: Mapping[str, object], exc: Exception
) -> MemoryResult:
    """The error result for an unexpected failure, with the notes if they can be read."""
    name = action if isinstance(action, str) else ""
    scope, _ = check_scope(args.get("scope"))
    message = f"memory-ls failed: {exc}"
    try:
        return runtime.result(name, scope, error=message)
    except Exception:
        log.exception("the notes could not be read either")
        return {
            "action": name,
            "scope": scope,
            "project": [],
            "global": [],
            "changed": False,
            "error": message,
        }


# -- the server ---------------------------------------------------------------


def client_name(ctx: Context | None) -> str:
    """Who is calling: the client's ``clientInfo.name`` (``mcp`` when it gave none)."""
    from memory_ls.core.inbox import clean_by

    try:
        params = ctx.session.client_params if ctx is not None else None
    except (AttributeError, LookupError, ValueError):
        params = None
    name = params.client_info.name if params is not None else None
    return clean_by(name, "mcp")


def build_tool(runtime: MemoryRuntime, review: bool = False) -> Tool:
    """The ``memory`` tool with SPEC §11's exact input and output schemas.

    With ``review``, add, update and forget become proposals (SPEC §12).
    """

    def memory(
        action: RawArg = None,  # type: ignore[assignment]
        text: RawArg = None,  # type: ignore[assignment]
        to: RawArg = None,  # type: ignore[assignment]
        scope: RawArg = None,  # type: ignore[assignment]
        ctx: Context | None = None,
    ) -> ToolResult:
        args: dict[str, object] = {"text": text, "to": to, "scope": scope}
        shown: str | None = None
        try:
            if review and action in PROPOSED_ACTIONS:
                from memory_ls.store.review import Review

                result, shown = Review(runtime).propose(action, args, client_name(ctx))
            else:
                result = run_tool(runtime, action, args)
        except Exception as exc:  # never a bare SDK error: always a MemoryResult
            log.exception("the memory tool failed")
            result, shown = failure(runtime, action, args, exc), None
        return tool_result(result, shown)

    tool = Tool.from_function(
        memory,
        name=TOOL_NAME,
        title="Memory",
        description=TOOL_DESCRIPTION + (REVIEW_DESCRIPTION if review else ""),
        annotations=ToolAnnotations(
            title="Memory",
            read_only_hint=False,
            destructive_hint=True,
            idempotent_hint=True,
            open_world_hint=False,
        ),
        structured_output=True,
    )
    tool.parameters = INPUT_SCHEMA
    tool.fn_metadata.output_schema = memory_result_schema()
    return tool


def build_server(runtime: MemoryRuntime, review: bool = False) -> MCPServer[Any]:
    """The MCP server: the ``memory`` tool and the four resources (five with ``review``).

    Every request asks the runtime afresh; the runtime re-reads a store whose
    stamp changed, so nothing is cached here.
    """
    server: MCPServer[Any] = MCPServer(
        name="memory-ls",
        version=__version__,
        log_level="WARNING",
        instructions=(
            "Durable memory for coding agents: read memory://recall for the saved notes, "
            "and use the memory tool to add, update, forget or list them."
        ),
        tools=[build_tool(runtime, review)],
    )

    resources: list[tuple[str, str, Callable[[], str]]] = [
        (
            "recall",
            "The recall body injected before each run (empty when there is none).",
            lambda: runtime.inject()["body"] or "",
        ),
        (
            "project",
            "The project's notes, one '- ' line each (none for an untrusted project).",
            lambda: notes_text(runtime, "project"),
        ),
        ("global", "The global notes, one '- ' line each.", lambda: notes_text(runtime, "global")),
        (
            "doctor",
            "The doctor's report: stores, trust, configuration and the recall plan.",
            runtime.doctor_text,
        ),
    ]
    if review:
        resources.append(
            (
                "inbox",
                "The proposals waiting for a person's review, both scopes (SPEC §12).",
                lambda: inbox_text(runtime),
            )
        )
    for name, description, read in resources:
        server.resource(
            f"memory://{name}", name=name, description=description, mime_type="text/plain"
        )(_written_as_utf8(read))
    return server


def _written_as_utf8(read: Callable[[], str]) -> Callable[[], str]:
    """``read``, its text passed through :func:`without_lone_surrogates` (see :func:`tool_result`)."""

    def text() -> str:
        return without_lone_surrogates(read())

    return text


def notes_text(runtime: MemoryRuntime, scope: Scope) -> str:
    """A scope's notes as ``- <note>`` lines."""
    return "\n".join(f"- {note}" for note in runtime.notes(scope))


def inbox_text(runtime: MemoryRuntime) -> str:
    """Both inboxes' waiting proposals as text (an untrusted project's text withheld)."""
    from memory_ls.core.inbox import listing_text
    from memory_ls.store.review import Review

    return listing_text(Review(runtime).listing()[0])


# -- stdio: every line answered ------------------------------------------------


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def read_line(line: str) -> tuple[str | None, JSONRPCError | None]:
    """What the SDK should read for one line from the client, or the error that answers it.

    The SDK's stdio transport drops, without a word, a line it cannot parse or
    validate. Read here first: a lone surrogate escape (``"\\ud800"``) is read as
    U+FFFD, as the language server does; a number beyond a float's range
    (``1e999``) as the largest float (:func:`finite_json_float`), so the line is
    still JSON and ``{"text": 1e999}`` gets the tool's ``text is required.``
    like any other number; a line that is not JSON gets a
    ``ParseError`` and a request that is not valid JSON-RPC an ``InvalidRequest``
    (``InvalidParams`` when only its params are wrong), with its id, or ``null``
    when the id itself is unusable (SPEC §11). A blank line, a bad notification
    and a bad response get neither.
    """
    if not line.strip():
        return None, None
    try:
        parsed = json.loads(line, parse_constant=_refuse_constant, parse_float=finite_json_float)
        data = without_lone_surrogates(parsed)
        text = json.dumps(data, ensure_ascii=False, allow_nan=False)
    except (ValueError, RecursionError) as exc:
        return None, _error(None, PARSE_ERROR, f"Parse error: {exc}")
    if not isinstance(data, dict):
        return None, _error(None, INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 message")
    is_request = "id" in data and "method" in data
    try:
        message = jsonrpc_message_adapter.validate_python(data, by_name=False)
    except ValidationError:
        message = None
    # A request whose id is not usable validates as a notification: it must not pass.
    if message is not None and not (is_request and isinstance(message, JSONRPCNotification)):
        return text, None
    if not is_request:
        if "method" in data or "result" in data or "error" in data:
            log.warning("ignored an invalid notification or response: %.200r", data)
            return None, None
        return None, _error(None, INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 message")
    msg_id = data["id"]
    if isinstance(msg_id, bool) or not isinstance(msg_id, (str, int)):  # MCP: never null
        return None, _error(
            None, INVALID_REQUEST, "Invalid request: the id must be a string or an integer"
        )
    if data.get("jsonrpc") != "2.0" or not isinstance(data["method"], str):
        return None, _error(
            msg_id,
            INVALID_REQUEST,
            'Invalid request: "jsonrpc" must be "2.0" and "method" a string',
        )
    # The envelope is right, so what failed is the params: an MCP request's params are an object.
    return None, _error(msg_id, INVALID_PARAMS, "Invalid params: params must be an object")


def _error(msg_id: str | int | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=msg_id, error=ErrorData(code=code, message=message))


class AnsweredLines:
    """The client's lines as the SDK's stdio transport reads them, each through :func:`read_line`.

    Errors go to the transport's write stream, which exists only once the
    transport runs: :meth:`attach` hands it over.
    """

    def __init__(self, source: AsyncIterator[str]) -> None:
        self.source = source
        self.ready = anyio.Event()
        self.send: Callable[[SessionMessage], Awaitable[None]] | None = None

    def attach(self, send: Callable[[SessionMessage], Awaitable[None]]) -> None:
        """Send errors with ``send`` from now on."""
        self.send = send
        self.ready.set()

    def __aiter__(self) -> AnsweredLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line, error = read_line(await self.source.__anext__())
            if line is not None:
                return line
            if error is not None:
                await self.ready.wait()
                assert self.send is not None
                # The session may have ended (stdin closed) with the error still to send.
                with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                    await self.send(SessionMessage(error))


async def serve_stdio(server: MCPServer[Any]) -> None:
    """``MCPServer.run_stdio_async``, with every line from the client read by :func:`read_line`.

    The SDK offers no public way to run an ``MCPServer`` on other streams, so this
    repeats its three lines, through its low-level server. Given its input, the SDK
    no longer points fd 0 at the null device while serving: nothing in memory-ls
    reads stdin or starts a process that could.
    """
    stdin = anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    lines = AnsweredLines(aiter(stdin))
    lowlevel = server._lowlevel_server
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
        lines.attach(write_stream.send)
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


# -- entry point --------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="memory-ls mcp",
        description="Serve the memory tool and recall resources over MCP (stdio).",
    )
    parser.add_argument(
        "--project", metavar="DIR", default=".", help="the project (default: the current directory)"
    )
    parser.add_argument(
        "--agent-dir",
        metavar="DIR",
        default=None,
        help="the agent dir of the global store (default: $PI_CODING_AGENT_DIR or ~/.pi/agent)",
    )
    trust = parser.add_mutually_exclusive_group()
    trust.add_argument(
        "--trusted",
        dest="trusted",
        action="store_const",
        const=True,
        default=None,
        help="trust the project: its notes are read, recalled and written",
    )
    trust.add_argument(
        "--untrusted",
        dest="trusted",
        action="store_const",
        const=False,
        help="do not trust the project: only global memory is used",
    )
    parser.add_argument("--read-only", action="store_true", help="refuse every change (plan modes)")
    parser.add_argument(
        "--review",
        action="store_true",
        help="add, update and forget become proposals a person accepts or rejects "
        "(memory-ls inbox / accept / reject)",
    )
    args = parser.parse_args(argv)
    if not Path(args.project).expanduser().is_dir():
        why = unfollowable(Path(args.project).expanduser()) or "is not a directory"
        parser.error(f"--project {why}: {args.project}")
    return args


def _only_interrupts(exc: BaseException | None) -> bool:
    """Whether ``exc`` is Ctrl-C: a ``KeyboardInterrupt``, or a group holding only those."""
    if isinstance(exc, KeyboardInterrupt):
        return True
    if isinstance(exc, BaseExceptionGroup):
        _, rest = exc.split(KeyboardInterrupt)
        return rest is None
    return False


class _QuietInterrupt(logging.Filter):
    """Drops asyncio's "unhandled exception during shutdown" report of a task that Ctrl-C
    ended (it depends on where the signal lands); the one line the user sees is main's."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and _only_interrupts(record.exc_info[1]))


def main(argv: list[str] | None = None) -> int:
    """Run the MCP server on stdio until the client closes stdin."""
    args = parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="memory-ls mcp: %(levelname)s %(message)s"
    )
    logging.getLogger("asyncio").addFilter(_QuietInterrupt())
    runtime = MemoryRuntime(
        # A `--project` in a `.pi` that leads out names that `.pi`'s project, as written.
        Path(real_path(project_start(Path(args.project).expanduser()))),
        agent_dir=args.agent_dir,
        trusted=args.trusted,
        read_only=args.read_only,
    )
    log.info("project store %s, global store %s", runtime.paths["project"], runtime.paths["global"])
    anyio.run(serve_stdio, build_server(runtime, args.review))
    return 0


if __name__ == "__main__":
    sys.exit(main())
