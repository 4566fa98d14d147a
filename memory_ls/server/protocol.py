"""The wire: stdio framing, reading every message, and writing plain JSON (SPEC §7 "Bad requests").

:class:`FramedStdin` (and :class:`FramedStream` for ``--tcp``) keep pygls' loop safe
from a ``Content-Length`` that lies; :class:`MemoryProtocol` answers every request, however bad; and
:func:`send_json` is the one place a message built as plain JSON is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import json
import logging
import os
import re
import stat
import sys
import threading
from collections.abc import Awaitable, Callable, Generator
from json.encoder import encode_basestring_ascii
from typing import Any, BinaryIO

import attrs
import cattrs
import cattrs.v
from cattrs import Converter
from lsprotocol import types as lsp
from pygls.exceptions import (
    FeatureNotificationError,
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
    JsonRpcServerNotInitialized,
)
from pygls.feature_manager import is_thread_function
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCProtocol,
    JsonRPCRequestMessage,
    LanguageServerProtocol,
    lsp_method,
)
from pygls.protocol.json_rpc import MsgId

from memory_ls.core.text import without_lone_surrogates

log = logging.getLogger("memory_ls.server")

CLIENT_TIMEOUT = 5.0
"""Seconds to wait for the client's answer to a request of the server's."""


MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""A message body over this size is refused unread (VS Code itself keeps larger files from servers)."""
MAX_HEADER_LINE = 64 * 1024
"""Header lines are read in pieces of at most this size, so junk without line breaks stays bounded."""
HEADER_TAIL = 64
"""The last bytes of a piece of junk without a line break kept for the next read: a header
may begin there (it would be cut in two, and lost, between two pieces)."""
OVERSIZED = "memoryLsOversized"
"""Key of the stand-in body :class:`FramedStdin` returns for a message it refused unread."""
BAD_FRAMING = "memoryLsBadFraming"
"""Key of the stand-in body returned for a message whose ``Content-Length`` is no length."""
_LENGTH_NAME = b"content-length:"
_MAX_DIGITS = 18
"""More digits than this (leading zeros aside) is over :data:`MAX_MESSAGE_BYTES` whatever
they say; Python refuses to read more than 4,300 of them as an ``int``, which ended the server."""


class _Framing:
    """The header rules both framed readers apply before pygls' loop sees a line.

    pygls recognises only ``Content-Length: <digits>\\r\\n`` and reads the digits with
    ``int``: a header with a lower-case name, two spaces or a line feed alone was not
    recognised (its message was lost without an answer), and one of more than 4,300
    digits raised out of the loop (the server ended). Here a ``Content-Length`` header
    is handed on in pygls' form; one that is no length (negative, not a number, too
    many digits) or contradicts another in the same message is handed on as the length
    of a small stand-in body, which :class:`MemoryProtocol` answers with an error (the
    real body's bytes are then skipped as junk up to the next header).
    """

    def __init__(self) -> None:
        self._carry = b""
        """The tail of junk without a line break, read again in front of the next piece."""
        self._declared: bytes | None = None
        """The ``Content-Length`` of the message whose headers are being read."""
        self._standin: bytes | None = None
        """The body to give pygls instead of reading one (a refused message)."""

    def _piece(self, line: bytes) -> bytes:
        """``line`` (as read, at most :data:`MAX_HEADER_LINE` bytes) as pygls should see it."""
        if self._carry:
            line, self._carry = self._carry + line, b""
        if not line.endswith(b"\n"):
            if len(line) < MAX_HEADER_LINE:
                return line  # the end of the stream
            # Junk without a line break: its tail may hold the start of a header.
            self._carry = line[-HEADER_TAIL:]
            return b"junk"
        if not line.strip():
            self._declared = None  # the end of a message's headers
            return line
        at = line.lower().rfind(_LENGTH_NAME)
        if at < 0:
            return line
        value = line[at + len(_LENGTH_NAME) :].strip(b" \t\r\n")
        if not value.isdigit():
            if at > 0:
                return line  # junk that happens to hold the words: not a header
            shown = value[:40].decode("ascii", "replace")
            return self._refuse({BAD_FRAMING: f"Content-Length {shown!r} is not a length"})
        digits = value.lstrip(b"0") or b"0"
        declared, self._declared = self._declared, digits
        if declared is not None and declared != digits and at == 0:
            return self._refuse({BAD_FRAMING: "two different Content-Length headers"})
        if len(digits) > _MAX_DIGITS:
            size = f"{digits[:12].decode()}… ({len(digits)} digits)"
            return self._refuse({OVERSIZED: size})
        return b"Content-Length: %d\r\n" % int(digits)

    def _refuse(self, standin: dict[str, str]) -> bytes:
        self._standin = json.dumps(standin).encode()
        return b"Content-Length: %d\r\n" % len(self._standin)

    def _instead(self, size: int) -> bytes | None:
        """The stand-in body to return for a body of ``size`` bytes, if it is not read."""
        standin, self._standin = self._standin, None
        if standin is not None:
            return standin
        if size > MAX_MESSAGE_BYTES:
            return json.dumps({OVERSIZED: size}).encode()
        return None


class FramedStdin(_Framing):
    """Standard input for pygls' stdio loop, safe from a ``Content-Length`` that lies.

    pygls reads a header line with ``readline`` and then exactly ``Content-Length``
    bytes with ``read``. Read as it is, a length that is too large makes it allocate
    that much at once (a ``MemoryError`` that ends the server), and one that is too
    small leaves the rest of the body in front of the next header, so that header is
    never recognised and every later message is lost. Here a header that follows junk
    on the same line is found again, and a body over :data:`MAX_MESSAGE_BYTES` is not
    read: pygls gets a small stand-in that :class:`MemoryProtocol` answers with an
    error, and the body's bytes are then skipped as junk up to the next header
    (:class:`_Framing` has the rest of the rules).
    """

    def __init__(self, stream: BinaryIO) -> None:
        super().__init__()
        self.stream = stream

    def readline(self) -> bytes:
        """The next header line, starting at its ``Content-Length`` when junk came first."""
        return self._piece(self.stream.readline(MAX_HEADER_LINE))

    def read(self, size: int) -> bytes:
        """A message body of ``size`` bytes, or the stand-in for one not to read."""
        instead = self._instead(size)
        return instead if instead is not None else self.stream.read(size)


class FramedStream(_Framing):
    """:class:`FramedStdin` for a network connection (``serve --tcp``): pygls' loop reads
    an :class:`asyncio.StreamReader` as it is, so a ``Content-Length`` that lies, or a
    header line longer than the reader's limit (which raised and ended the server),
    would cost every later message. The same rules as on stdio apply here."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        super().__init__()
        self.reader = reader

    async def readline(self) -> bytes:
        """The next header line, starting at its ``Content-Length`` when junk came first;
        junk without a line break comes back in pieces (never a blank line)."""
        try:
            line = await self.reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:  # the end of the stream
            line = exc.partial
        except asyncio.LimitOverrunError as exc:
            # Drop what was looked at but its last bytes, where a header may begin.
            await self.reader.readexactly(max(1, exc.consumed - HEADER_TAIL))
            return b"junk"
        return self._piece(line)

    async def readexactly(self, size: int) -> bytes:
        """A message body of ``size`` bytes, the stand-in for one not to read, or ``b""``
        when the client went away in the middle of it (pygls' loop then ends, as at the
        end of a header: the exception it raised left the server running without a client)."""
        instead = self._instead(size)
        if instead is not None:
            return instead
        try:
            return await self.reader.readexactly(size)
        except asyncio.IncompleteReadError:
            return b""


class _OneClient:
    """The one client a network server serves: the first connection; another while it
    lasts is refused at once (pygls gave it the server's writer, so the first client's
    answers went to the second); the server ends with it, however it ends."""

    def __init__(self, ls: LanguageServer) -> None:
        self.ls = ls
        self.serving = False
        self.stop = threading.Event()
        ls._stop_event = self.stop

    async def serve(
        self, refuse: Callable[[], Awaitable[object]], run: Callable[[], Awaitable[object]]
    ) -> None:
        """Run the connection's loop, or refuse it when another is being served."""
        if self.serving:
            log.warning("refused a second connection: memory-ls serves one client")
            await refuse()
            return
        self.serving = True
        try:
            await run()
        finally:
            self.ls.shutdown()  # type: ignore[no-untyped-call]

    def run_forever(self, start: Callable[[], Awaitable[Any]]) -> None:
        """Start the listening server and serve until the client's connection ends."""

        async def main() -> None:
            server = await start()
            self.ls._server = server
            async with server:
                await server.serve_forever()

        with contextlib.suppress(asyncio.CancelledError):
            asyncio.run(main())


def _is_pipe(stream: BinaryIO, output: BinaryIO) -> bool:
    """Whether ``stream`` is a pipe or a socket (how an editor starts a server: libuv,
    which Neovim uses, gives it a socket), which the event loop can read itself.

    Not when it is also ``output``, the file the server writes to (socat's ``EXEC:``,
    inetd and systemd's ``Accept=yes`` give one socket as both): the loop puts what it
    reads in non-blocking mode, which for one socket is its writes' mode too, and a
    message larger than the socket's buffer was then cut short in the middle.
    """
    try:
        read, written = os.fstat(stream.fileno()), os.fstat(output.fileno())
    except (OSError, ValueError):
        return False
    if (read.st_dev, read.st_ino) == (written.st_dev, written.st_ino):
        return False
    return stat.S_ISFIFO(read.st_mode) or stat.S_ISSOCK(read.st_mode)


PIPE_BYTES = 1024 * 1024
"""What a pipe on stdin or stdout is widened to (Linux's default ceiling for a process),
else a half or a quarter of it: a 256 KB ``didOpen`` (or publish) then goes through in
one write instead of 64 KiB rounds between the two processes (0.9 -> 0.55 ms median
for the 4500 store's ``didOpen``, and 2.5-4.6 -> 0.8-1.5 ms p90 on the loaded machine)."""


def _widen(stream: BinaryIO) -> None:
    """Let a pipe hold :data:`PIPE_BYTES`, or as much of it as the system allows."""
    with contextlib.suppress(OSError, ValueError, AttributeError, ImportError):
        fd = stream.fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return
        import fcntl

        for size in (PIPE_BYTES, PIPE_BYTES // 2, PIPE_BYTES // 4):
            try:
                fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
                return
            except PermissionError:  # over /proc/sys/fs/pipe-max-size: try less
                continue


async def _serve_stream(
    ls: LanguageServer, stop: threading.Event, reader: asyncio.StreamReader
) -> None:
    """pygls' message loop over ``reader``, with :class:`FramedStream`'s rules, until
    ``stop`` is set or the stream ends (stdio on a pipe, and each TCP connection)."""
    from pygls.io_ import run_async

    await run_async(
        stop_event=stop,
        reader=FramedStream(reader),
        protocol=ls.protocol,
        logger=log,
        error_handler=ls.report_server_error,
    )


def start_stdio(ls: LanguageServer) -> None:
    """Serve the client on standard input and output.

    A pipe is read by the event loop itself, through :class:`FramedStream`: pygls'
    stdio reader hands each header line and each body to a worker thread and back,
    three round trips per message, about 0.5 ms of a 4 ms keystroke. Anything else (a
    file, a terminal, which the loop cannot watch, and which must not be left in
    non-blocking mode, or the very socket the server writes to: :func:`_is_pipe`) is
    read as pygls reads it, through :class:`FramedStdin`.
    """
    from pygls.io_ import StdoutWriter

    stdin = sys.stdin.buffer
    if not _is_pipe(stdin, sys.stdout.buffer):
        ls.start_io(stdin=FramedStdin(stdin))  # type: ignore[arg-type]
        return
    stop = ls._stop_event = threading.Event()
    _widen(stdin)
    _widen(sys.stdout.buffer)
    ls.protocol.set_writer(StdoutWriter(sys.stdout.buffer))

    # The loop reads a copy of the descriptor and makes it non-blocking, which the pipe
    # itself keeps: put back when the server ends, for whoever else holds that pipe.
    pipe = os.fdopen(os.dup(stdin.fileno()), "rb", buffering=0)

    async def main() -> None:
        reader = asyncio.StreamReader(limit=MAX_HEADER_LINE)
        loop = asyncio.get_running_loop()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        await _serve_stream(ls, stop, reader)

    try:
        asyncio.run(main())
    except BrokenPipeError:
        log.error("the connection to the client is lost: the server ends")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        ls.shutdown()  # type: ignore[no-untyped-call]
        with contextlib.suppress(OSError, ValueError):
            os.set_blocking(stdin.fileno(), True)


def start_tcp(ls: LanguageServer, host: str, port: int) -> None:
    """Serve one client on ``host:port`` (pygls' ``start_tcp``, with the framing of
    :class:`FramedStream`, and :class:`_OneClient`'s rules)."""

    one = _OneClient(ls)

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async def refuse() -> None:
            writer.close()

        async def run() -> None:
            ls.protocol.set_writer(writer)
            await _serve_stream(ls, one.stop, reader)

        await one.serve(refuse, run)

    one.run_forever(lambda: asyncio.start_server(connection, host, port))


def start_ws(ls: LanguageServer, host: str, port: int) -> None:
    """Serve one client on ``ws://host:port`` (pygls' ``start_ws``, but taking messages
    up to :data:`MAX_MESSAGE_BYTES`: the ``websockets`` default of 1 MiB closed the
    connection, and so ended the server, on the first large ``didOpen``), with
    :class:`_OneClient`'s rules."""
    from pygls.io_ import run_websocket
    from websockets.asyncio.server import ServerConnection, serve

    one = _OneClient(ls)

    async def connection(websocket: ServerConnection) -> None:
        async def refuse() -> None:
            await websocket.close(1013, "memory-ls serves one client")

        async def run() -> None:
            await run_websocket(
                stop_event=one.stop,
                websocket=websocket,
                protocol=ls.protocol,
                logger=log,
                error_handler=ls.report_server_error,
            )

        await one.serve(refuse, run)

    one.run_forever(lambda: serve(connection, host, port, max_size=MAX_MESSAGE_BYTES))


_RESPONSE_TYPES: dict[type, bool] = {}


def _is_response(cls: type) -> bool:
    """Whether ``cls`` is a JSON-RPC response type (pygls' or an lsprotocol one)."""
    known = _RESPONSE_TYPES.get(cls)
    if known is None:
        fields = {f.name for f in attrs.fields(cls)} if attrs.has(cls) else set()
        known = _RESPONSE_TYPES[cls] = fields == {"id", "result", "jsonrpc"}
    return known


def _valid_id(value: object) -> bool:
    # JSON-RPC allows null and fractions too, but an LSP id is an integer or a string.
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _camel(path: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), path)


_LONG_NUMBER_RE = re.compile(r"\d{40,}")


def _describe(exc: BaseException, expected: type | None) -> str:
    # A number too large for a float (1e999) is read as infinity, which no int holds.
    if isinstance(exc, OverflowError):
        return "a number out of range"
    # lsprotocol's own checks (negative positions, out-of-range integers) say it best,
    # with a number of 400 digits cut short.
    if isinstance(exc, ValueError) and expected is None:
        text = str(exc).rstrip(".")
        return _LONG_NUMBER_RE.sub(lambda m: m.group()[:12] + "…", text)
    return cattrs.v.format_exception(exc, expected)


def unreadable(exc: BaseException) -> str:
    """Why a message could not be read into its type, naming each field (camelCase, as sent)."""
    problems = cattrs.transform_error(exc, path="", format_exception=_describe)
    described = (_camel(p).replace(" @ .", " at ", 1).removesuffix(" @ ") for p in problems)
    return "; ".join(described) or str(exc)


class MemoryProtocol(LanguageServerProtocol):
    """pygls' protocol, with every request answered, and minus its copy of open documents.

    **Every request gets a response** (SPEC §7 "Bad requests"). pygls drops a
    request whose params do not fit lsprotocol's types (it logs the error and the
    client waits forever), drops requests after ``shutdown``, and runs them before
    ``initialize``. Here pygls' object hook leaves requests and notifications as
    plain JSON and :meth:`handle_message`, which sees only whole messages, reads
    them: a request that cannot be read gets ``InvalidParams`` (naming the fields)
    or ``InvalidRequest`` with its id (``null`` when the id itself is unusable);
    a notification that cannot be read is logged and ignored. A body that is not
    JSON gets a ``ParseError`` from :meth:`MemoryServer.report_server_error`.

    pygls also keeps every open document and re-splits its whole text on each
    incremental change; memory-ls keeps its own per-line state instead, so the
    built-in handlers only pass the notifications on.
    """

    def __init__(self, server: LanguageServer, converter: Converter) -> None:
        # Before cattrs compiles any reader: its own reading of a ``str`` field is str(),
        # which made a didChange's ``"text": null`` a buffer holding "None".
        converter.register_structure_hook(str, _strict_str)
        super().__init__(server, converter)
        self.initialize_received = False
        self.exit_code = 0
        """What ``serve`` returns: 1 after an ``exit`` that came without ``shutdown`` (LSP)."""
        self.lists = ListJson()
        """The JSON of the last long lists of notes answered, to answer the next ones from."""
        self.shutdown_id: MsgId | None = None
        """The id of the ``shutdown`` request, once one came."""
        self.shutdown_answered = False
        """Whether the answer to ``shutdown`` is written: no notification is after it
        (:meth:`_send_data`, :func:`send_encoded`)."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        """Leave requests and notifications as JSON for :meth:`handle_message`.

        This is the object hook of pygls' ``json.loads``: it runs on every object,
        innermost first, so it cannot tell a message from an object inside one.
        Responses from the client still go to pygls; one it cannot read fails the
        request that waits for it at once, instead of leaving it to time out.
        """
        if "method" in data:
            return data
        if "jsonrpc" in data and "result" not in data and "error" not in data:
            return data  # neither a request nor a response: :meth:`_junk` answers it
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if not ("result" in data and _valid_id(data.get("id"))):
                raise
            problem = unreadable(exc.__cause__ or exc)
            message = f"the client's answer to request {data['id']} could not be read: {problem}"
            error = lsp.ResponseError(code=JsonRpcInvalidParams.CODE, message=message)
            return lsp.ResponseErrorMessage(id=data["id"], error=error)

    def _serialize_message(self, data: Any) -> Any:
        """What ``json.dumps`` writes for ``data``, an object it cannot write itself.

        A response whose result is a plain ``dict`` (a ``MemoryResult``, which holds
        every note of both stores: 4,500 strings on a big store) is written as it
        is: cattrs would walk each of its values only to return them unchanged, a
        millisecond per ``memory.add``. An object nested in it that ``json`` cannot
        write (an lsprotocol type) still comes back here and is unstructured then.
        Anything else is pygls' own way.
        """
        if type(getattr(data, "result", None)) is dict and _is_response(type(data)):
            return {"id": data.id, "result": data.result, "jsonrpc": data.jsonrpc}
        return super()._serialize_message(data)

    def _send_data(self, data: Any) -> None:
        """Write ``data`` as pygls does; a response with a plain ``dict`` result, faster.

        Such a response (a ``MemoryResult``) is encoded by :func:`encode_response`,
        which writes the long lists of notes it holds from their last encoding
        (:class:`ListJson`): the same bytes as pygls' ``json.dumps``, in a tenth of
        the time (0.8-1.3 ms a ``memory.add`` on 4,500 notes). Anything it cannot
        write, and every other message, goes pygls' way, which reports the failure.

        Once ``shutdown`` is answered, no notification is written (a publish that a
        background pass or a timer makes then): the answer is the last thing a client
        has to read before its ``exit``. Answers, and requests, still are.
        """
        if self.shutdown_answered and _is_notification(data):
            log.debug("not sent after the answer to shutdown: %.100r", _method(data))
            return
        if type(getattr(data, "result", None)) is dict and _is_response(type(data)):
            try:
                body = encode_response(
                    data.id, data.result, data.jsonrpc, self._serialize_message, self.lists
                )
            except Exception:  # pygls' own way writes it, or reports why it cannot
                log.debug("a response left to pygls' encoding", exc_info=True)
            else:
                _write_encoded(self, body)
                return
        super()._send_data(data)
        if (
            self.shutdown_id is not None
            and _method(data) is None
            and _field(data, "id") == self.shutdown_id
        ):
            # The last message a client that asked to shut down has to read: it may
            # stop reading now, and a publish (of a large store: more than a socket or
            # a pipe holds) written then would block the server for good, with the
            # client's ``exit`` unread behind it.
            self.shutdown_answered = True

    def handle_message(self, message: Any) -> None:
        """Read a request or notification and pass it on; answer or log one that cannot be served."""
        if not attrs.has(type(message)):  # plain JSON: a request, a notification or junk
            message = self._read(message)
            if message is None:
                return
        method = getattr(message, "method", None)
        if method == lsp.EXIT:
            self.exit_code = 0 if self._shutdown else 1
        elif method == lsp.INITIALIZE:
            self.initialize_received = True
        if method is None:  # a response to a request of the server's
            super().handle_message(message)
            return
        # What pygls' own dispatch does for a request or notification, whose checks
        # (the version, after shutdown) :meth:`_problem` made already: it tells the kind
        # by ``isinstance`` against runtime-checkable protocols, ~50 µs a message.
        context = contextvars.copy_context()
        if hasattr(message, "id"):
            context.run(self._handle_request, message.id, method, message.params)
        elif method in _FORWARDED and (handler := self._forwarded(method)) is not None:
            context.run(self._notify, handler, message.params)
        else:
            context.run(self._handle_notification, method, message.params)

    def _forwarded(self, method: str) -> Callable[[Any], object] | None:
        """The server's own handler of a document notification whose built-in handler
        (below) only passes it on, when it runs in the loop, there and then."""
        handler = self.fm.features.get(method)
        threaded = is_thread_function(handler)  # type: ignore[no-untyped-call]
        if handler is None or inspect.iscoroutinefunction(handler) or threaded:
            return None
        return handler  # type: ignore[no-any-return]

    def _notify(self, handler: Callable[[Any], object], params: Any) -> None:
        """Run a document notification's handler, as pygls would, without pygls' round.

        pygls runs the built-in generator below through two futures, a callback queued
        on the loop, two ``uuid4`` and its ``isinstance`` checks, and keeps each
        notification's future in ``_request_futures`` for good: one a keystroke, which
        ``shutdown`` then walked (a day of typing, tens of thousands). The handler
        (``document_sync``'s, which logs its own failures) is called directly; a
        failure that escapes it is reported as pygls reports it.
        """
        try:
            handler(params)
        except Exception:
            error = JsonRpcInternalError.of(sys.exc_info())  # type: ignore[no-untyped-call]
            self._server._report_server_error(error, FeatureNotificationError)

    def _read(self, data: object) -> Any:
        """The typed message in ``data``, or ``None`` once a bad one is answered or logged."""
        if not isinstance(data, dict) or "method" not in data:
            self._junk(data)
            return None
        method, is_request, msg_id = data["method"], "id" in data, data.get("id")
        try:
            problem = self._problem(data)
            if problem is None:
                message_type = self.get_message_type(method)
                if message_type is lsp.DidChangeTextDocumentNotification:
                    changed = _did_change(data)
                    if changed is not None:
                        return changed
                elif message_type is lsp.DidOpenTextDocumentNotification:
                    opened = _did_open(data)
                    if opened is not None:
                        return opened
                if message_type is None:  # unknown: pygls answers MethodNotFound
                    message_type = JsonRPCRequestMessage if is_request else JsonRPCNotification
                    data = {"params": None, **data}  # pygls' fallback types require the field
                return self._converter.structure(without_lone_surrogates(data), message_type)
        except RecursionError:
            problem = JsonRpcInvalidRequest("the message is nested too deeply")
        except Exception as exc:
            problem = JsonRpcInvalidParams(f"Invalid params for {method}: {unreadable(exc)}")
        if is_request:
            self._answer(msg_id if _valid_id(msg_id) else None, problem)
        else:
            log.info("ignored %.100r: %s", method, problem.message)
            report = getattr(self._server, "log", None)
            if report is not None and self.initialize_received and not self._shutdown:
                report(f"memory-ls: ignored {method!r:.100}: {problem.message}")
        return None

    def _problem(self, data: dict[str, Any]) -> JsonRpcException | None:
        """What makes the request or notification ``data`` unservable, before its params are read."""
        method = data["method"]
        if "id" in data and not _valid_id(data["id"]):
            return JsonRpcInvalidRequest("the id must be an integer or a string")
        if data.get("jsonrpc") != JsonRPCProtocol.VERSION:
            return JsonRpcInvalidRequest('"jsonrpc" must be "2.0"')
        if not isinstance(method, str):
            return JsonRpcInvalidRequest("the method must be a string")
        # LSP's order: initialize first, once; nothing but exit after shutdown.
        if self._shutdown and method != lsp.EXIT:
            return JsonRpcInvalidRequest("the server is shutting down: only exit is accepted")
        if method == lsp.INITIALIZE and self.initialize_received:
            return JsonRpcInvalidRequest("initialize was already received")
        if not self.initialize_received and method not in (lsp.INITIALIZE, lsp.EXIT):
            return JsonRpcServerNotInitialized("the server is not initialized: send initialize")
        message_type = self.get_message_type(method)
        if message_type is None:
            return None
        if "id" in data and "id" not in attrs.fields_dict(message_type):
            return JsonRpcInvalidRequest(f"{method} is a notification: it takes no id")
        params = data.get("params")
        if params is not None and not isinstance(params, dict):
            kind = type(params).__name__
            return JsonRpcInvalidParams(f"Invalid params for {method}: not an object ({kind})")
        return None

    def _junk(self, data: object) -> None:
        """Answer what is neither a request nor a notification (a response is only logged)."""
        if isinstance(data, dict) and OVERSIZED in data:
            size = data[OVERSIZED]
            problem = f"the message of {size} bytes is over the limit of {MAX_MESSAGE_BYTES} bytes"
            self._answer(None, JsonRpcInvalidRequest(f"{problem}; it was skipped"))
        elif isinstance(data, dict) and isinstance(data.get(BAD_FRAMING), str):
            problem = f"{data[BAD_FRAMING]}: the message was skipped"
            self._answer(None, JsonRpcInvalidRequest(problem))
        elif isinstance(data, dict) and ("result" in data or "error" in data):
            log.warning("ignored a response that is not JSON-RPC 2.0: %.200r", data)
        elif isinstance(data, dict) and _valid_id(data.get("id")):
            msg_id: MsgId = data["id"]
            # An id without a method: a request that lost its method (JSON-RPC answers
            # it with its id, which is known) or a response without its result.
            future = self._request_futures.pop(msg_id, None)
            problem = "a message with an id needs a method (or, as an answer, a result)"
            if future is not None and not future.done():
                future.set_exception(JsonRpcInvalidParams(f"the client's answer: {problem}"))
            else:
                self._answer(msg_id, JsonRpcInvalidRequest(problem))
        else:
            self._answer(None, JsonRpcInvalidRequest("not a JSON-RPC 2.0 request"))

    def _answer(self, msg_id: MsgId | None, error: JsonRpcException) -> None:
        # Plain JSON: pygls' ResponseErrorMessage would drop an ``"id": null``.
        answer = {"code": error.code, "message": error.message}
        if error.data is not None:
            answer["data"] = error.data
        send_json(self, {"jsonrpc": JsonRPCProtocol.VERSION, "id": msg_id, "error": answer})

    def answer_unparsable(self, error: Exception) -> None:
        """A body that is not JSON: ``ParseError`` (its id cannot be known, so ``null``)."""
        self._answer(None, JsonRpcParseError(f"Parse error: {error}"))

    @lsp_method(lsp.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        """pygls' ``shutdown``: cancel the requests in flight but this one, then refuse all
        but ``exit``. pygls walks the dict of requests while it cancels them, and cancelling
        a generator handler's (``workspace/executeCommand``'s) runs its callback at once,
        which removes it from that dict: ``shutdown`` failed with an internal error while a
        command waited for the client, and ``exit`` then ended with 1."""
        if (handler := self.fm.features.get(lsp.SHUTDOWN)) is not None:
            yield handler, args, None
        current = self.shutdown_id = self.msg_id
        running: list[asyncio.Task[Any]] = []
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current and not future.done():
                future.cancel()
                if isinstance(future, asyncio.Task):  # a request of the client's
                    running.append(future)
        self._shutdown = True
        from memory_ls.server.commands import finishing  # the server's; loaded by now

        running.extend(task for task in finishing() if task not in running)
        # A command that had begun its write runs to its end (commands.in_thread): answer
        # shutdown only after it has answered, or the client's exit, which follows this
        # answer, ends the server with the write done and its answer never sent.
        if running:
            yield _settled, (running,), None

    @lsp_method(lsp.WORKSPACE_EXECUTE_COMMAND)
    async def lsp_workspace__execute_command(  # type: ignore[override]
        self, params: lsp.ExecuteCommandParams
    ) -> Any:
        """pygls' ``workspace/executeCommand``, as one task: the request's own.

        pygls runs a command as a second task behind a generator's future, and
        ``$/cancelRequest`` cancels only that future: the client was told "canceled" at
        once while the command ran on and wrote. Here a cancel reaches the command, which
        decides (``commands.in_thread``): stopped before it commits, answered after.
        Every command's handler takes its arguments as ``*args`` (no conversion to do).
        """
        handler = self.fm.commands.get(params.command)
        if handler is None:
            raise JsonRpcInvalidParams.of(
                ValueError(f"Command name {params.command!r} is not defined")
            )
        return await handler(*(params.arguments or ()))

    @lsp_method(lsp.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(
        self, params: lsp.DidOpenTextDocumentParams
    ) -> Generator[Any, Any, None]:
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: lsp.DidChangeTextDocumentParams
    ) -> Generator[Any, Any, None]:
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(
        self, params: lsp.DidCloseTextDocumentParams
    ) -> Generator[Any, Any, None]:
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None


_FORWARDED = frozenset(
    {lsp.TEXT_DOCUMENT_DID_OPEN, lsp.TEXT_DOCUMENT_DID_CHANGE, lsp.TEXT_DOCUMENT_DID_CLOSE}
)
"""Notifications whose built-in handler (``lsp_text_document__did_*`` below) only calls
the server's: :meth:`MemoryProtocol.handle_message` calls that directly."""
_OPEN_KEYS = {"jsonrpc", "method", "params"}
_ITEM_KEYS = {"uri", "languageId", "version", "text"}


async def _settled(tasks: list[asyncio.Task[Any]]) -> None:
    """Wait until every task in ``tasks`` has ended (each answers its own request)."""
    await asyncio.wait(tasks)


def _strict_str(value: object, _type: object) -> str:
    """cattrs' reading of a ``str`` field: a JSON string, or an error naming what came."""
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _did_open(data: dict[str, Any]) -> lsp.DidOpenTextDocumentNotification | None:
    """A well-formed ``didOpen`` read without cattrs, or ``None`` for cattrs to read.

    cattrs writes and compiles a type's reading code the first time it reads one
    (1-5 ms: the first open paid for it) and walks the message again each time.
    This reads the one shape an editor sends (no key missing or extra, each of the
    right JSON type) into the same objects; lsprotocol's own checks (a version out of
    range) still run in their constructors. Anything else, valid or not, is left to
    cattrs, which reads it or says what is wrong with it, as before
    (``tests/server/test_protocol.py`` compares the two).
    """
    params = data.get("params")
    if data.keys() != _OPEN_KEYS or type(params) is not dict or params.keys() != {"textDocument"}:
        return None
    item = params["textDocument"]
    if type(item) is not dict or item.keys() != _ITEM_KEYS:
        return None
    uri, language, version, text = item["uri"], item["languageId"], item["version"], item["text"]
    if not (type(uri) is type(language) is type(text) is str and type(version) is int):
        return None
    try:
        document = lsp.TextDocumentItem(
            uri=without_lone_surrogates(uri),
            language_id=without_lone_surrogates(language),
            version=version,
            text=without_lone_surrogates(text),
        )
        return lsp.DidOpenTextDocumentNotification(
            params=lsp.DidOpenTextDocumentParams(text_document=document),
            jsonrpc=data["jsonrpc"],
        )
    except (TypeError, ValueError):
        return None


_CHANGE_PARAMS_KEYS = {"textDocument", "contentChanges"}
_VERSIONED_KEYS = {"uri", "version"}
_RANGE_KEYS = {"start", "end"}
_POSITION_KEYS = {"line", "character"}
_PARTIAL_KEYS = {"range", "text"}
_PARTIAL_LENGTH_KEYS = {"range", "rangeLength", "text"}
_WHOLE_KEYS = {"text"}


def _position(data: object) -> lsp.Position | None:
    if type(data) is not dict or data.keys() != _POSITION_KEYS:
        return None
    line, character = data["line"], data["character"]
    if type(line) is not int or type(character) is not int:
        return None
    return lsp.Position(line=line, character=character)


def _content_change(
    data: object,
) -> lsp.TextDocumentContentChangePartial | lsp.TextDocumentContentChangeWholeDocument | None:
    """One well-formed ``contentChanges`` item, or ``None`` (see :func:`_did_change`)."""
    if type(data) is not dict or type(text := data.get("text")) is not str:
        return None
    keys = data.keys()
    if keys == _WHOLE_KEYS:
        return lsp.TextDocumentContentChangeWholeDocument(text=without_lone_surrogates(text))
    length = data.get("rangeLength")
    if not (keys == _PARTIAL_KEYS or (keys == _PARTIAL_LENGTH_KEYS and type(length) is int)):
        return None
    where = data["range"]
    if type(where) is not dict or where.keys() != _RANGE_KEYS:
        return None
    start, end = _position(where["start"]), _position(where["end"])
    if start is None or end is None:
        return None
    return lsp.TextDocumentContentChangePartial(
        range=lsp.Range(start=start, end=end),
        text=without_lone_surrogates(text),
        range_length=length,
    )


def _did_change(data: dict[str, Any]) -> lsp.DidChangeTextDocumentNotification | None:
    """A well-formed ``didChange`` read without cattrs, or ``None`` for cattrs to read.

    What :func:`_did_open` is for an open, for every keystroke: cattrs' reading walked
    the message twice (~60 µs of a keystroke's ~600 on a 4,500-note store) and compiled
    its reading code on the first change (~2 ms that the first keystroke after start-up
    waited for). The shape an editor sends (no key missing or extra, each of the right
    JSON type; a change with or without ``rangeLength``, or the whole text) becomes the
    same objects; lsprotocol's own checks run in their constructors; anything else is
    cattrs' to read or to refuse (``tests/server/test_protocol.py`` compares the two).
    """
    params = data.get("params")
    if data.keys() != _OPEN_KEYS or type(params) is not dict:
        return None
    if params.keys() != _CHANGE_PARAMS_KEYS:
        return None
    document, changes = params["textDocument"], params["contentChanges"]
    if (
        type(document) is not dict
        or document.keys() != _VERSIONED_KEYS
        or type(changes) is not list
    ):
        return None
    uri, version = document["uri"], document["version"]
    if type(uri) is not str or type(version) is not int:
        return None
    try:
        read = tuple(map(_content_change, changes))
        if any(change is None for change in read):
            return None
        return lsp.DidChangeTextDocumentNotification(
            params=lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(
                    version=version, uri=without_lone_surrogates(uri)
                ),
                content_changes=read,  # type: ignore[arg-type]
            ),
            jsonrpc=data["jsonrpc"],
        )
    except (TypeError, ValueError):
        return None


def send_json(protocol: JsonRPCProtocol, message: dict[str, Any]) -> None:
    """Write ``message``, a JSON-RPC message already built as plain JSON, to the client.

    Two kinds of message are built that way: diagnostics, because building
    lsprotocol objects and unstructuring them costs more than the analysis
    itself (the speed issue wants them cheaper still), and the answers to bad
    requests, because pygls' ``ResponseErrorMessage`` drops an ``"id": null``.
    pygls has no public call for such a message, so this is the one use of its
    private ``_send_data`` (which frames and writes any JSON-serialisable
    value; :class:`MemoryProtocol` overrides it only for responses);
    ``tests/e2e/test_bad_requests.py::test_send_json_frames_a_message_through_a_pipe``
    fails if pygls changes it.
    """
    protocol._send_data(message)


LONG_LIST = 32
"""A list of strings at least this long is encoded through :class:`ListJson`."""


class ListJson:
    """The JSON of the last few long lists of strings written, to write the next ones from.

    Every ``MemoryResult`` carries every note of both stores, and an ``add``
    answers with the list it answered last time and one note more: the list is
    compared with the kept ones (item by item: the same string objects, so mostly
    pointer comparisons) and only the notes past the longest kept prefix are
    encoded. The text is the one :func:`json.dumps` writes (``", "`` between
    items, ASCII only); a kept list is a copy, so a list changed in place after it
    was written is compared as it is now, never served from what it was.
    """

    def __init__(self, keep: int = 4) -> None:
        self.keep = keep
        self._kept: list[tuple[list[str], str]] = []
        """(a copy of the list, its JSON), the most recently used first."""

    def encode(self, items: list[Any]) -> str:
        """``json.dumps(items)``, from a kept encoding when one is a prefix of ``items``."""
        best, size = -1, -1
        for i, (kept, _) in enumerate(self._kept):
            n = len(kept)
            if size < n <= len(items) and items[:n] == kept:
                best, size = i, n
        if best >= 0:
            text = self._kept.pop(best)[1]
            more = items[size:]
            if not more:
                self._kept.insert(0, (list(items), text))
                return text
            if _all_strings(more):
                tail = ", ".join(map(encode_basestring_ascii, more))
                text = f"{text[:-1]}, {tail}]" if size else f"[{tail}]"
                self._kept.insert(0, (list(items), text))
                return text
        text = json.dumps(items)  # raises for what json cannot write: pygls' way then
        if _all_strings(items):
            self._kept.insert(0, (list(items), text))
            del self._kept[self.keep :]
        return text


def _all_strings(items: list[Any]) -> bool:
    """Whether every item is exactly a ``str``: only such lists are kept, so a list is
    compared with a kept one as strings compare (a subclass's ``==`` could say anything)."""
    return all(t is str for t in set(map(type, items)))


def encode_response(
    msg_id: Any,
    result: dict[Any, Any],
    jsonrpc: Any,
    default: Callable[[Any], Any],
    lists: ListJson,
) -> bytes:
    """The bytes pygls writes for a response with the plain ``dict`` ``result``.

    ``json.dumps(response, default=default)`` of ``{"id", "result", "jsonrpc"}``, as
    :meth:`MemoryProtocol._serialize_message` hands it to json, with each long list
    of strings in ``result`` written by ``lists``. Raises what ``json.dumps`` raises,
    and ``TypeError`` for a key that is not a string.
    """
    parts = ['{"id": ', json.dumps(msg_id), ', "result": {']
    for n, (key, value) in enumerate(result.items()):
        if type(key) is not str:
            raise TypeError(f"a key json would convert: {key!r}")
        if n:
            parts.append(", ")
        parts.append(encode_basestring_ascii(key))
        parts.append(": ")
        if type(value) is list and len(value) >= LONG_LIST:
            parts.append(lists.encode(value))
        else:
            parts.append(json.dumps(value, default=default))
    parts.append('}, "jsonrpc": ')
    parts.append(json.dumps(jsonrpc))
    parts.append("}")
    return "".join(parts).encode("ascii")


_writes: set[asyncio.Future[Any]] = set()
"""Writes of an asynchronous transport still under way (a task must be referenced)."""


def _field(data: Any, name: str) -> Any:
    """The field ``name`` of a message, plain JSON or an object (``None`` when it has none)."""
    return data.get(name) if isinstance(data, dict) else getattr(data, name, None)


def _method(data: Any) -> Any:
    return _field(data, "method")


def _is_notification(data: Any) -> bool:
    """Whether ``data`` is a notification: a method and no id (neither a request nor a response)."""
    has_id = "id" in data if isinstance(data, dict) else hasattr(data, "id")
    return _method(data) is not None and not has_id


def send_encoded(protocol: JsonRPCProtocol, *parts: bytes) -> None:
    """Write one JSON-RPC notification already encoded as JSON, given as ``parts``
    that joined are its body, to the client; nothing once ``shutdown`` is answered
    (:attr:`MemoryProtocol.shutdown_answered`).
    """
    if getattr(protocol, "shutdown_answered", False):
        log.debug("not sent after the answer to shutdown: a notification already encoded")
        return
    _write_encoded(protocol, *parts)


def _write_encoded(protocol: JsonRPCProtocol, *parts: bytes) -> None:
    """Write one JSON-RPC message already encoded as JSON, given as ``parts`` that
    joined are its body, to the client.

    Framed as pygls frames what it sends (``_send_data``: the ``Content-Length``
    header unless the transport has none, then the body), for a message whose JSON
    was joined from cached pieces (a publish of diagnostics that mostly did not
    change): header and pieces are joined once, into what is written in one call.
    The body must be ASCII-only JSON, as :func:`json.dumps` writes it.
    """
    writer = protocol.writer
    if writer is None:
        log.error("Unable to send data, no available transport!")
        return
    if protocol._include_headers:
        header = (
            f"Content-Length: {sum(map(len, parts))}\r\n"
            f"Content-Type: {protocol.CONTENT_TYPE}; charset={protocol.CHARSET}\r\n\r\n"
        )
        body = b"".join((header.encode("ascii"), *parts))
    else:
        body = b"".join(parts)
    try:
        res = writer.write(body)
        # The WebSocket writer's: kept until it is done (stdio's write returns None).
        if res is not None and inspect.isawaitable(res):
            task = asyncio.ensure_future(res)
            _writes.add(task)
            task.add_done_callback(_writes.discard)
    except BrokenPipeError:
        log.exception("Error sending data. BrokenPipeError")
        raise
    except Exception as error:
        log.exception("Error sending data")
        protocol._server._report_server_error(error, JsonRpcInternalError)
