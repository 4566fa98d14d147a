"""The three fronts agree: one action on one workspace through the CLI, the language
server and the MCP server gives the same ``MemoryResult`` and leaves the same bytes.

SPEC §3 promises a ``MemoryResult`` of "the same shape from every entry point" and
each rule at every entry point. Each case below lays out a workspace, runs one
action through the real ``memory-ls`` CLI (a process, ``--json``), the real
language server (``workspace/executeCommand memory.*``) and the real MCP server
(the ``memory`` tool), laying the workspace out afresh before each, and compares
what came back (``changed``, the notes, ``existing``, the exact ``error``, every
field) and the stores on disk afterwards (bytes, mode, what else their folders hold).

One server per front for the whole module: the MCP server serves the one project
it was started on, and the paths in messages must be the same for a byte-for-byte
comparison, so every case uses the same project and agent dir, emptied and laid out
again before each front's run. Every file laid out gets an mtime of its own, so a
long-running server's cache (keyed by mtime, size and inode) can never mistake one
case's store for another's. No front is told whether the project is trusted: all
three decide it from the files (SPEC §4 rules 2 and 3).

Where a front cannot express an input (a CLI argument is a string without NUL and
its scope is checked by argparse; the MCP tool has no merge, move or clear), the
cell is skipped with the reason, or its documented difference asserted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import stat
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from lsprotocol import types as lsp
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from pytest_lsp import LanguageClient, client_capabilities, make_test_lsp_client

from memory_ls.core.text import HEADER
from tests.conftest import Workspace, isolated_env, run_cli, store_text
from tests.e2e.conftest import uri_of

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 20.0
T = TypeVar("T")

NO_MCP = "the MCP tool has only add, update, forget and list (SPEC §11)"
NUL_ARGV = "a process argument cannot hold a NUL byte"
NOT_A_STRING = "a CLI argument is always a string"
LONE_SURROGATE_MCP = (
    "the SDK's client cannot send a lone surrogate (pydantic refuses to serialise it); "
    "tests/mcp/test_bad_requests.py sends the raw escape"
)


def _has_lone_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


# -- the fronts --------------------------------------------------------------------


class LoopThread:
    """An event loop in a thread of its own, so the module's two servers outlive each
    test and the tests stay plain functions."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = TIMEOUT) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


class LspFront:
    """``memory-ls serve`` (as VS Code declares itself), no trust decision given."""

    def __init__(self, loop: LoopThread, ws: Workspace, trusted: bool | None = None) -> None:
        self.loop = loop
        self.client: LanguageClient = make_test_lsp_client()
        self.asked: list[str] = []

        @self.client.feature(lsp.WORKSPACE_APPLY_EDIT)
        def apply_edit(params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
            return lsp.ApplyWorkspaceEditResult(applied=True)  # no buffer is open

        @self.client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
        def register(params: lsp.RegistrationParams) -> None:
            return None

        @self.client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
        def ask(params: lsp.ShowMessageRequestParams) -> lsp.MessageActionItem | None:
            self.asked.append(params.message)
            return lsp.MessageActionItem(title="Clear")  # `clear --yes`'s answer

        async def start() -> None:
            env = {**ws.env(), "PYTHONUNBUFFERED": "1"}
            await self.client.start_io(sys.executable, "-m", "memory_ls.server", env=env)
            await self.client.initialize_session(
                lsp.InitializeParams(
                    capabilities=client_capabilities("visual-studio-code"),
                    root_uri=uri_of(ws.root),
                    workspace_folders=[lsp.WorkspaceFolder(uri=uri_of(ws.root), name="project")],
                    initialization_options=None if trusted is None else {"trusted": trusted},
                )
            )
            await asyncio.sleep(0.1)

        loop.run(start())

    def command(self, action: str, args: dict[str, Any]) -> Any:
        return self.loop.run(
            self.client.workspace_execute_command_async(
                lsp.ExecuteCommandParams(command=f"memory.{action}", arguments=[args])
            )
        )

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.loop.run(self.client.shutdown_session(), 10)


class McpFront:
    """``memory-ls mcp --project ROOT`` through the SDK's client, no trust flag."""

    def __init__(
        self,
        loop: LoopThread,
        ws: Workspace,
        project: Path | None = None,
        trusted: bool | None = None,
        review: bool = False,
    ) -> None:
        self.loop = loop
        self.session: ClientSession | None = None
        ready: asyncio.Future[None] = loop.loop.create_future()
        self.stop: asyncio.Event | None = None

        async def serve() -> None:
            self.stop = asyncio.Event()
            params = StdioServerParameters(
                command=sys.executable,
                args=[
                    *("-m", "memory_ls.mcp_server", "--project", str(project or ws.root)),
                    *trust_flag(trusted),
                    *(["--review"] if review else []),
                ],
                env=ws.env(),
                cwd=str(REPO),
            )
            try:
                async with (
                    stdio_client(params) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    self.session = session
                    ready.set_result(None)
                    await self.stop.wait()
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
                raise

        # One task owns the session's context (anyio's scopes end where they began).
        self.task = asyncio.run_coroutine_threadsafe(serve(), loop.loop)

        async def started() -> None:
            await ready

        loop.run(started())

    def call(self, arguments: dict[str, Any]) -> Any:
        assert self.session is not None
        return self.loop.run(self.session.call_tool("memory", arguments))

    def read(self, uri: str) -> str:
        assert self.session is not None
        result = self.loop.run(self.session.read_resource(uri))
        [content] = result.contents
        return str(content.text)  # type: ignore[union-attr]

    def close(self) -> None:
        if self.stop is not None:
            self.loop.loop.call_soon_threadsafe(self.stop.set)
        with contextlib.suppress(Exception):
            self.task.result(10)


@dataclass
class Fronts:
    ws: Workspace
    outside: Path
    loop: LoopThread
    lsp: LspFront
    mcp: McpFront
    link: Path = Path()
    """A symlink to the project root, beside it."""
    elsewhere: dict[tuple[Path | None, bool | None, bool], McpFront] = field(default_factory=dict)
    """MCP servers started on another name of the project (``--project LINK``) or with
    a trust flag."""
    told: dict[bool, LspFront] = field(default_factory=dict)
    """Language servers told whether the project is trusted."""

    def mcp_on(
        self, project: Path | None, trusted: bool | None = None, review: bool = False
    ) -> McpFront:
        if project is None and trusted is None and not review:
            return self.mcp
        key = (project, trusted, review)
        if key not in self.elsewhere:
            self.elsewhere[key] = McpFront(self.loop, self.ws, project, trusted, review)
        return self.elsewhere[key]

    def lsp_told(self, trusted: bool | None) -> LspFront:
        if trusted is None:
            return self.lsp
        if trusted not in self.told:
            self.told[trusted] = LspFront(self.loop, self.ws, trusted)
        return self.told[trusted]


def trust_flag(trusted: bool | None) -> list[str]:
    """The CLI's and the MCP server's words for an explicit trust decision."""
    return [] if trusted is None else ["--trusted" if trusted else "--untrusted"]


@pytest.fixture(scope="module")
def fronts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fronts]:
    base = tmp_path_factory.mktemp("agree")
    root = base / "project"
    (root / ".git").mkdir(parents=True)
    for name in ("agent", "home", "outside"):
        (base / name).mkdir()
    ws = Workspace(root.resolve(), (base / "agent").resolve(), (base / "home").resolve())
    (base / "link").symlink_to(root, target_is_directory=True)
    loop = LoopThread()
    lsp_front = LspFront(loop, ws)
    mcp_front = McpFront(loop, ws)
    try:
        fr = Fronts(ws, (base / "outside").resolve(), loop, lsp_front, mcp_front, base / "link")
        yield fr
    finally:
        for server in [lsp_front, *fr.told.values()]:
            server.close()
        for front in [mcp_front, *fr.elsewhere.values()]:
            front.close()
        loop.close()


# -- the workspace of a case ---------------------------------------------------------

_mtime = [time.time_ns() - 10**12]


def _next_mtime() -> int:
    """A modification time no file of this module had before (1 ms apart)."""
    _mtime[0] += 1_000_000
    return _mtime[0]


Layout = Callable[[Workspace, Path], None]


def files(
    project: bytes | str | list[str] | None = None,
    glob: bytes | str | list[str] | None = None,
    *extra: str,
) -> Layout:
    """A layout: the project store, the global store (raw text, bytes or notes) and
    empty-object files at the project-relative paths ``extra`` (``.pi/settings.json``)."""

    def lay(ws: Workspace, outside: Path) -> None:
        if project is not None:
            ws.write("project", project)
        if glob is not None:
            ws.write("global", glob)
        for name in extra:
            (ws.root / name).parent.mkdir(parents=True, exist_ok=True)
            (ws.root / name).write_text("{}")

    return lay


def _empty(folder: Path) -> None:
    for child in folder.iterdir():
        if child.name == ".git" and folder.name == "project":
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def lay_out(fr: Fronts, layout: Layout) -> None:
    ws = fr.ws
    if ws.agent_dir.is_symlink() or ws.agent_dir.is_file():
        ws.agent_dir.unlink()
    ws.agent_dir.mkdir(exist_ok=True)
    for folder in (ws.root, ws.agent_dir, ws.home, fr.outside):
        _empty(folder)
    layout(ws, fr.outside)
    for folder in (ws.root, ws.agent_dir, fr.outside):
        if not folder.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(folder):
            for name in [*filenames, *dirnames]:
                os.utime(Path(dirpath, name), ns=(_next_mtime(),) * 2, follow_symlinks=False)


def _snapshot_path(path: Path) -> object:
    if path.is_symlink():
        return ("symlink", os.readlink(path), _snapshot_path_target(path))
    try:
        st = path.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:  # a folder on the way loops
        return ("unreachable", exc.errno)
    if not stat.S_ISREG(st.st_mode):  # a folder or a FIFO (never opened: it would block)
        return ("other", stat.S_IFMT(st.st_mode))
    return ("file", stat.S_IMODE(st.st_mode), path.read_bytes())


def _snapshot_path_target(path: Path) -> object:
    try:
        real = path.resolve()
    except (OSError, RuntimeError):  # a loop (pathlib raises RuntimeError for one)
        return None
    return real.read_bytes() if real.is_file() else None


def disk(fr: Fronts) -> dict[str, object]:
    """The stores and what their folders hold (no temporary or lock file left behind)."""
    ws = fr.ws
    out: dict[str, object] = {}
    for name, path in (("project", ws.project_store), ("global", ws.global_store)):
        out[name] = _snapshot_path(path)
    for name, folder in (("pi", ws.root / ".pi"), ("agent", ws.agent_dir), ("outside", fr.outside)):
        out[name + "/"] = sorted(os.listdir(folder)) if folder.is_dir() else None
    out["outside-files"] = {p.name: p.read_bytes() for p in fr.outside.rglob("*") if p.is_file()}
    for name, path in (
        ("project-inbox", ws.root / ".pi" / "memory.inbox.jsonl"),
        ("global-inbox", ws.agent_dir / "memory.inbox.jsonl"),
    ):
        found = _snapshot_path(path)
        if isinstance(found, tuple) and found[0] == "file":
            found = (*found[:2], _masked(found[2]))
        out[name] = found
    return out


_PER_RUN = re.compile(rb'"(id|at|by)": ?"[^"]*"')
_SEEDED = b"0123abcd"


def _masked(data: bytes) -> bytes:
    """An inbox's bytes with what differs from run to run (a new proposal's ``id``, ``at``
    and ``by``: the front's name) masked; the seeded proposal stays whole."""
    return b"\n".join(
        line if _SEEDED in line else _PER_RUN.sub(rb'"\1":"*"', line) for line in data.split(b"\n")
    )


# -- running one front ---------------------------------------------------------------


@dataclass
class Outcome:
    """What a front answered (``result``: the ``MemoryResult``; ``None`` when it had none)
    and the disk afterwards."""

    result: dict[str, Any] | None
    disk: dict[str, object]
    note: str = ""
    """How the front said it (its exit code, its text) — checked per front, not compared."""


def cli_argv(action: str, args: dict[str, Any]) -> list[str] | None:
    """The CLI's words for ``args``, or ``None`` when an argument cannot be one."""
    values = [v for v in args.values()]
    if any(not isinstance(v, str) for v in values):
        return None
    if any("\0" in v for v in values):
        return None
    argv = [action, "--json"]  # (a field the CLI has no option for is left out: ignored)
    if "scope" in args:
        argv.append(f"--scope={args['scope']}")
    if "to" in args:
        argv.append(f"--to={args['to']}")
    if action == "clear":
        argv.append("--yes")
    positional = [args[k] for k in ("text", "other") if k in args]
    return [*argv, "--", *positional]


def run_front(
    fr: Fronts, front: str, case: Case, place: Path | None = None, trusted: bool | None = None
) -> Outcome | str:
    """One front's outcome, or why it cannot run this case (skipped).

    ``place``: the project named by that path (``--project``, ``uri``, the MCP
    server's ``--project``) rather than by its root (the current directory, the
    workspace folder). ``trusted``: each front told so (``--trusted``, the
    ``trusted`` initialization option).
    """
    lay_out(fr, case.layout)
    if place is not None:
        place.mkdir(exist_ok=True)  # (a folder inside the project, emptied by lay_out)
    if front == "cli":
        argv = cli_argv(case.action, case.args)
        if argv is None:
            return NUL_ARGV if any(isinstance(v, str) for v in case.args.values()) else NOT_A_STRING
        if place is not None:
            argv.insert(1, f"--project={place}")
        argv[1:1] = trust_flag(trusted)
        done = run_cli(
            *argv,
            cwd=fr.ws.root if place is None else fr.outside,
            env=isolated_env(fr.ws.agent_dir, fr.ws.home),
        )
        if done.returncode == 2:  # a usage error: argparse's, no MemoryResult
            return Outcome(None, disk(fr), f"exit 2: {done.stderr.strip().splitlines()[-1]}")
        result = json.loads(done.stdout)
        assert done.returncode == (1 if "error" in result else 0), (done.returncode, result)
        return Outcome(result, disk(fr), f"exit {done.returncode}")
    if front == "lsp":
        args = case.args if place is None else {**case.args, "uri": uri_of(place)}
        answer = fr.lsp_told(trusted).command(case.action, args)
        return Outcome(_plain(answer), disk(fr))
    if case.action not in ("add", "update", "forget", "list"):
        return NO_MCP
    if any(isinstance(v, str) and _has_lone_surrogate(v) for v in case.args.values()):
        return LONE_SURROGATE_MCP
    called = fr.mcp_on(place, trusted).call({"action": case.action, **case.args})
    result = called.structured_content
    text = called.content[0].text
    error = result.get("error") if isinstance(result, dict) else None
    assert called.is_error == bool(error), (called.is_error, result)
    if error:
        assert text == f"Error: {error}", text
    return Outcome(result, disk(fr), text)


def _plain(value: Any) -> Any:
    """A result from pytest-lsp's client (attribute objects for JSON objects) as plain JSON."""
    if isinstance(value, (dict, list, str, int, float, bool)) or value is None:
        return json.loads(json.dumps(value, default=lambda o: o.__dict__))
    return json.loads(json.dumps(value, default=lambda o: vars(o)))


# -- the table -------------------------------------------------------------------------


@dataclass
class Case:
    id: str
    action: str
    args: dict[str, Any]
    layout: Layout = field(
        default_factory=lambda: files(["use pnpm, not npm", "tests need DATABASE_URL"])
    )
    expect: dict[str, Any] = field(default_factory=dict)
    """Fields every front's result must have (besides agreeing)."""
    cli_usage: bool = False
    """The CLI refuses it as a usage error (exit 2, documented in SPEC §8)."""
    xfail: dict[str, str] = field(default_factory=dict)
    """Fronts known to disagree, with why."""


NOTES = ["use pnpm, not npm", "tests need DATABASE_URL"]
HEADER_ONLY = HEADER + "\n"
BIDI = "abc\u202edef"
ZW = "a\u200bb"
ASTRAL_500 = "\U0001f600" * 250
ASTRAL_501 = "\U0001f600" * 250 + "x"
CAP = 262_144


def _big(size: int, crlf: bool = False) -> bytes:
    """A store of exactly ``size`` bytes."""
    head = (HEADER + "\n\n").encode()
    note = b"- " + b"n" * 97 + b"\n"  # 100 bytes
    body = head + note * ((size - len(head)) // 100)
    pad = size - len(body)
    return body + (b"- " + b"p" * (pad - 3) + b"\n" if pad >= 4 else b"\n" * pad)


def _symlinked_store(ws: Workspace, outside: Path) -> None:
    target = outside / "real.md"
    target.write_text(store_text(*NOTES))
    (ws.root / ".pi").mkdir()
    ws.project_store.symlink_to(target)


def _pi_outside(ws: Workspace, outside: Path) -> None:
    (outside / "memory.md").write_text(store_text(*NOTES))
    (ws.root / ".pi").symlink_to(outside, target_is_directory=True)


def _trust_json(trusted: bool) -> Layout:
    def lay(ws: Workspace, outside: Path) -> None:
        files(NOTES, ["a global note"])(ws, outside)
        (ws.agent_dir / "trust.json").write_text(json.dumps({str(ws.root): trusted}))

    return lay


def _pi_outside_with_global(ws: Workspace, outside: Path) -> None:
    _pi_outside(ws, outside)
    ws.write("global", ["a global note"])


def _untrusted_pi_outside(ws: Workspace, outside: Path) -> None:
    _pi_outside(ws, outside)
    (outside / "settings.json").write_text("{}")


def _pi_dangling(ws: Workspace, outside: Path) -> None:
    (ws.root / ".pi").symlink_to(outside / "gone", target_is_directory=True)


def _pi_dangling_inside(ws: Workspace, outside: Path) -> None:
    (ws.root / ".pi").symlink_to(ws.root / "gone", target_is_directory=True)


def _pi_file(ws: Workspace, outside: Path) -> None:
    (ws.root / ".pi").write_text("not a folder\n")


def _pi_loop(ws: Workspace, outside: Path) -> None:
    ws.write("global", ["a global note"])
    (ws.root / ".pi").symlink_to(".pi")


def _pi_two_link_loop(ws: Workspace, outside: Path) -> None:
    ws.write("global", ["a global note"])
    (ws.root / ".pi").symlink_to(".pj")
    (ws.root / ".pj").symlink_to(".pi")


def _store_loop(ws: Workspace, outside: Path) -> None:
    (ws.root / ".pi").mkdir()
    ws.project_store.symlink_to("memory.md")


def _hard_linked_store(ws: Workspace, outside: Path) -> None:
    """The project store is a hard link to the global one: one file, two names."""
    ws.write("global", NOTES)
    (ws.root / ".pi").mkdir()
    os.link(ws.global_store, ws.project_store)


def _hard_linked_elsewhere(ws: Workspace, outside: Path) -> None:
    """The global store has another name outside (a backup's hard link)."""
    files(NOTES, ["a global note"])(ws, outside)
    os.link(ws.global_store, outside / "backup.md")


def _store_folder(ws: Workspace, outside: Path) -> None:
    ws.project_store.mkdir(parents=True)


def _store_fifo(ws: Workspace, outside: Path) -> None:
    (ws.root / ".pi").mkdir()
    os.mkfifo(ws.project_store)


def _dangling_store(ws: Workspace, outside: Path) -> None:
    (ws.root / ".pi").mkdir()
    ws.project_store.symlink_to(outside / "gone.md")


def _symlinked_global(ws: Workspace, outside: Path) -> None:
    files(NOTES)(ws, outside)
    (outside / "global.md").write_text(store_text("g"))
    ws.global_store.symlink_to(outside / "global.md")


def _no_agent_dir(ws: Workspace, outside: Path) -> None:
    files(NOTES)(ws, outside)
    ws.agent_dir.rmdir()


def _agent_dir_file(ws: Workspace, outside: Path) -> None:
    files(NOTES)(ws, outside)
    ws.agent_dir.rmdir()
    ws.agent_dir.write_text("not a folder\n")


def _mode_600(ws: Workspace, outside: Path) -> None:
    files(NOTES)(ws, outside)
    ws.project_store.chmod(0o600)


def _trust_json_text(text: str, *extra: str) -> Layout:
    def lay(ws: Workspace, outside: Path) -> None:
        files(NOTES, None, *extra)(ws, outside)
        (ws.agent_dir / "trust.json").write_text(text.replace("%s", str(ws.root)))

    return lay


G = {"scope": "global"}

CASES: list[Case] = [
    # -- text inputs ------------------------------------------------------------------
    Case("add-blank", "add", {"text": ""}, expect={"error": "text is required."}),
    Case("add-whitespace", "add", {"text": " \t\u3000 "}, expect={"error": "text is required."}),
    Case(
        "add-controls-only",
        "add",
        {"text": "\x1b\x07\x7f\x85"},
        expect={"error": "text is required."},
    ),
    Case(
        "add-controls",
        "add",
        {"text": "a\x1bb\tc\r\nd"},
        expect={"changed": True, "entry": "a b c d"},
    ),
    Case("add-line-separator", "add", {"text": "one\u2028two"}, expect={"entry": "one two"}),
    Case("add-bidi", "add", {"text": BIDI}, expect={"changed": True, "entry": BIDI}),
    Case("add-zero-width", "add", {"text": ZW}, expect={"changed": True, "entry": ZW}),
    Case("add-zero-width-only", "add", {"text": "\u200b"}),
    Case("add-nul", "add", {"text": "a\x00b"}, expect={"entry": "a b"}),
    Case("add-dashes", "add", {"text": "--"}, expect={"entry": "--"}),
    Case("add-option-like", "add", {"text": "--scope=global"}, expect={"entry": "--scope=global"}),
    Case("add-dash", "add", {"text": "-"}, expect={"entry": "-"}),
    Case("add-json-flag", "add", {"text": "--json"}, expect={"entry": "--json"}),
    Case("add-bullet-text", "add", {"text": "- * nested"}, expect={"entry": "- * nested"}),
    Case("add-header-text", "add", {"text": HEADER}, expect={"entry": HEADER}),
    Case("add-500", "add", {"text": "x" * 500}, expect={"changed": True}),
    Case(
        "add-501",
        "add",
        {"text": "x" * 501},
        expect={"error": "text is longer than 500 characters."},
    ),
    Case("add-astral-500", "add", {"text": ASTRAL_500}, expect={"changed": True}),
    Case(
        "add-astral-501",
        "add",
        {"text": ASTRAL_501},
        expect={"error": "text is longer than 500 characters."},
    ),
    Case(
        "add-501-before-normalising",
        "add",
        {"text": " " + "x" * 500 + "  "},
        expect={"changed": True},
    ),
    Case(
        "add-near-duplicate",
        "add",
        {"text": "Use PNPM, not npm!!"},
        expect={"changed": False, "existing": "use pnpm, not npm"},
    ),
    Case(
        "add-global",
        "add",
        {"text": "a global note", **G},
        expect={"changed": True, "scope": "global"},
    ),
    Case("add-lone-surrogate", "add", {"text": "x\udcffy"}),
    Case("add-json-list-string", "add", {"text": "[1]"}, expect={"entry": "[1]"}),
    Case("add-json-null-string", "add", {"text": "null"}, expect={"entry": "null"}),
    Case("add-json-number-string", "add", {"text": "5"}, expect={"entry": "5"}),
    Case("add-json-object-string", "add", {"text": '{"a": 1}'}, expect={"entry": '{"a": 1}'}),
    Case("add-bool-text", "add", {"text": True}, expect={"error": "text is required."}),
    Case("add-object-text", "add", {"text": {"a": "b"}}, expect={"error": "text is required."}),
    Case(
        "add-null-scope",
        "add",
        {"text": "x", "scope": None},
        expect={"scope": "project", "changed": True},
    ),
    Case("add-unknown-field", "add", {"text": "x", "bogus": "y"}, expect={"changed": True}),
    Case("add-missing-text", "add", {}, cli_usage=True, expect={"error": "text is required."}),
    Case("add-int-text", "add", {"text": 5}, expect={"error": "text is required."}),
    Case("add-null-text", "add", {"text": None}, expect={"error": "text is required."}),
    Case("add-list-text", "add", {"text": ["a"]}, expect={"error": "text is required."}),
    Case(
        "add-unknown-scope",
        "add",
        {"text": "x", "scope": "Project"},
        cli_usage=True,
        expect={"error": "scope must be one of project, global."},
    ),
    Case(
        "add-empty-scope",
        "add",
        {"text": "x", "scope": ""},
        cli_usage=True,
        expect={"error": "scope must be one of project, global."},
    ),
    Case(
        "add-int-scope",
        "add",
        {"text": "x", "scope": 1},
        expect={"error": "scope must be one of project, global."},
    ),
    Case(
        "update-same",
        "update",
        {"text": "use pnpm, not npm", "to": "use pnpm, not npm"},
        expect={"changed": False},
    ),
    Case(
        "update-same-after-normalising",
        "update",
        {"text": "use pnpm, not npm", "to": " use  pnpm,\tnot npm "},
        expect={"changed": False},
    ),
    Case(
        "update-no-match",
        "update",
        {"text": "nope", "to": "x"},
        expect={"error": "No project memory note matches: nope"},
    ),
    Case(
        "update-no-match-bidi",
        "update",
        {"text": BIDI, "to": "x"},
        expect={"error": "No project memory note matches: abc\\u202edef"},
    ),
    Case(
        "update-to-501",
        "update",
        {"text": "use pnpm, not npm", "to": "y" * 501},
        expect={"error": "to is longer than 500 characters."},
    ),
    Case(
        "update-to-blank",
        "update",
        {"text": "use pnpm, not npm", "to": " "},
        expect={"error": "to is required."},
    ),
    Case(
        "update-to-dash",
        "update",
        {"text": "use pnpm, not npm", "to": "-b"},
        expect={"changed": True},
    ),
    Case(
        "update-to-dashes", "update", {"text": "use pnpm, not npm", "to": "--"}, expect={"to": "--"}
    ),
    Case(
        "update-to-option",
        "update",
        {"text": "use pnpm, not npm", "to": "--scope=global"},
        expect={"to": "--scope=global"},
    ),
    Case(
        "update-missing-to",
        "update",
        {"text": "use pnpm, not npm"},
        cli_usage=True,
        expect={"error": "to is required."},
    ),
    Case(
        "forget-twice-present",
        "forget",
        {"text": "dup"},
        layout=files(["dup", "keep", "dup"]),
        expect={"changed": True, "project": ["keep"]},
    ),
    Case(
        "forget-case-sensitive",
        "forget",
        {"text": "USE PNPM, NOT NPM"},
        expect={"error": "No project memory note matches: USE PNPM, NOT NPM"},
    ),
    Case(
        "forget-last-note",
        "forget",
        {"text": "only"},
        layout=files(["only"]),
        expect={"changed": True},
    ),
    Case(
        "merge-same",
        "merge",
        {"text": "use pnpm, not npm", "other": "use pnpm, not npm", "to": "x"},
        expect={"error": "text and other must be different notes."},
    ),
    Case(
        "merge-same-after-normalising",
        "merge",
        {"text": "use pnpm, not npm", "other": "use  pnpm, not npm ", "to": "x"},
        expect={"error": "text and other must be different notes."},
    ),
    Case(
        "merge",
        "merge",
        {
            "text": "use pnpm, not npm",
            "other": "tests need DATABASE_URL",
            "to": "pnpm; DATABASE_URL",
        },
        expect={"changed": True},
    ),
    Case(
        "merge-missing-other",
        "merge",
        {"text": "use pnpm, not npm", "to": "x"},
        cli_usage=True,
        expect={"error": "other is required."},
    ),
    Case("move-to-global", "move", {"text": "use pnpm, not npm"}, expect={"changed": True}),
    Case(
        "move-already-there",
        "move",
        {"text": "use pnpm, not npm"},
        layout=files(NOTES, ["Use pnpm, not npm."]),
        expect={"changed": True, "existing": "Use pnpm, not npm."},
    ),
    Case(
        "move-into-untrusted",
        "move",
        {"text": "a global note", **G},
        layout=files(NOTES, ["a global note"], ".pi/settings.json"),
        expect={
            "error": 'Project memory is unavailable for an untrusted project; use scope "global".',
            "project": [],
        },
    ),
    Case(
        "move-no-match",
        "move",
        {"text": "nope"},
        expect={"error": "No project memory note matches: nope"},
    ),
    # -- files --------------------------------------------------------------------------
    Case(
        "crlf-add",
        "add",
        {"text": "new"},
        layout=files(store_text(*NOTES).replace("\n", "\r\n")),
        expect={"changed": True},
    ),
    Case(
        "crlf-forget",
        "forget",
        {"text": "tests need DATABASE_URL"},
        layout=files(store_text(*NOTES).replace("\n", "\r\n") + "\r\n\r\n"),
        expect={"changed": True},
    ),
    Case(
        "crlf-update",
        "update",
        {"text": "use pnpm, not npm", "to": "use bun"},
        layout=files(store_text(*NOTES).replace("\n", "\r\n")),
        expect={"changed": True},
    ),
    Case(
        "mixed-endings-add",
        "add",
        {"text": "new"},
        layout=files("- a\r\n- b\n- c"),
        expect={"changed": True},
    ),
    Case(
        "no-final-newline-add",
        "add",
        {"text": "new"},
        layout=files(store_text(*NOTES).rstrip("\n")),
        expect={"changed": True},
    ),
    Case(
        "no-final-newline-forget",
        "forget",
        {"text": "tests need DATABASE_URL"},
        layout=files(store_text(*NOTES).rstrip("\n")),
        expect={"changed": True},
    ),
    Case(
        "header-only-add",
        "add",
        {"text": "new"},
        layout=files(HEADER_ONLY),
        expect={"changed": True},
    ),
    Case(
        "header-only-forget",
        "forget",
        {"text": "new"},
        layout=files(HEADER_ONLY),
        expect={"error": "No project memory note matches: new"},
    ),
    Case("header-only-clear", "clear", {}, layout=files(HEADER_ONLY), expect={"changed": False}),
    Case("empty-add", "add", {"text": "new"}, layout=files(""), expect={"changed": True}),
    Case(
        "whitespace-file-add",
        "add",
        {"text": "new"},
        layout=files(" \n\t\n\n"),
        expect={"changed": True},
    ),
    Case("missing-add", "add", {"text": "new"}, layout=files(), expect={"changed": True}),
    Case(
        "missing-forget",
        "forget",
        {"text": "new"},
        layout=files(),
        expect={"error": "No project memory note matches: new"},
    ),
    Case(
        "bom-add",
        "add",
        {"text": "new"},
        layout=files("\ufeff" + store_text(*NOTES)),
        expect={"changed": True},
    ),
    Case("bom-only-add", "add", {"text": "new"}, layout=files("\ufeff"), expect={"changed": True}),
    Case(
        "bom-forget-last",
        "forget",
        {"text": "only"},
        layout=files("\ufeff- only\n"),
        expect={"changed": True},
    ),
    Case(
        "bom-clear",
        "clear",
        {},
        layout=files("\ufeff" + store_text(*NOTES)),
        expect={"changed": True},
    ),
    Case(
        "invalid-utf8-add",
        "add",
        {"text": "new"},
        layout=files(store_text(*NOTES).encode() + b"- bad \xff\n"),
        expect={"changed": False},
    ),
    Case(
        "invalid-utf8-list", "list", {}, layout=files(store_text(*NOTES).encode() + b"- bad \xff\n")
    ),
    Case("invalid-utf8-global-list", "list", {}, layout=files(NOTES, b"- bad \xc3\n")),
    Case(
        "oversize-add",
        "add",
        {"text": "new"},
        layout=files(_big(CAP + 1)),
        expect={"changed": False},
    ),
    Case("oversize-list", "list", {}, layout=files(_big(CAP + 1))),
    Case("at-cap-add", "add", {"text": "new"}, layout=files(_big(CAP)), expect={"changed": False}),
    Case(
        "at-cap-forget",
        "forget",
        {"text": "n" * 97},
        layout=files(_big(CAP)),
        expect={"changed": True},
    ),
    Case(
        "symlinked-store-add",
        "add",
        {"text": "new"},
        layout=_symlinked_store,
        expect={"changed": False},
    ),
    Case("symlinked-store-list", "list", {}, layout=_symlinked_store),
    Case(
        "symlinked-store-global-add",
        "add",
        {"text": "new", **G},
        layout=_symlinked_store,
        expect={"changed": True},
    ),
    Case("pi-outside-add", "add", {"text": "new"}, layout=_pi_outside, expect={"changed": False}),
    Case("pi-outside-list", "list", {}, layout=_pi_outside),
    Case(
        "pi-outside-move-in", "move", {"text": "a global note", **G}, layout=_pi_outside_with_global
    ),
    Case(
        "pi-outside-dangling-add",
        "add",
        {"text": "new"},
        layout=_pi_dangling,
        expect={"changed": False},
    ),
    Case(
        "pi-dangling-inside-add",
        "add",
        {"text": "new"},
        layout=_pi_dangling_inside,
        expect={"changed": False},
    ),
    Case("pi-is-a-file-add", "add", {"text": "new"}, layout=_pi_file, expect={"changed": False}),
    Case("pi-loop-add", "add", {"text": "new"}, layout=_pi_loop, expect={"changed": False}),
    Case("pi-loop-list", "list", {}, layout=_pi_loop, expect={"global": ["a global note"]}),
    Case(
        "pi-loop-global-add", "add", {"text": "new", **G}, layout=_pi_loop, expect={"changed": True}
    ),
    Case(
        "pi-two-link-loop-add",
        "add",
        {"text": "new"},
        layout=_pi_two_link_loop,
        expect={"changed": False},
    ),
    Case("store-loop-add", "add", {"text": "new"}, layout=_store_loop, expect={"changed": False}),
    Case(
        "hard-linked-store-add",
        "add",
        {"text": "new"},
        layout=_hard_linked_store,
        expect={"changed": False, "project": []},
    ),
    Case(
        "hard-linked-store-global-add",
        "add",
        {"text": "new", **G},
        layout=_hard_linked_store,
        expect={"changed": False, "global": NOTES},
    ),
    Case(
        "hard-linked-store-list",
        "list",
        {},
        layout=_hard_linked_store,
        expect={"project": [], "global": NOTES},
    ),
    Case(
        "hard-linked-store-move-in",
        "move",
        {"text": NOTES[0], **G},
        layout=_hard_linked_store,
        expect={"changed": False},
    ),
    Case(
        "hard-linked-global-elsewhere-add",
        "add",
        {"text": "new", **G},
        layout=_hard_linked_elsewhere,
        expect={"changed": False, "global": ["a global note"]},
    ),
    Case(
        "store-is-a-folder-add",
        "add",
        {"text": "new"},
        layout=_store_folder,
        expect={"changed": False},
    ),
    Case(
        "store-is-a-fifo-add", "add", {"text": "new"}, layout=_store_fifo, expect={"changed": False}
    ),
    Case("store-is-a-fifo-list", "list", {}, layout=_store_fifo),
    Case(
        "dangling-store-add",
        "add",
        {"text": "new"},
        layout=_dangling_store,
        expect={"changed": False},
    ),
    Case(
        "symlinked-global-add",
        "add",
        {"text": "new", **G},
        layout=_symlinked_global,
        expect={"changed": False},
    ),
    Case("symlinked-global-list", "list", {}, layout=_symlinked_global),
    Case(
        "agent-dir-missing-add",
        "add",
        {"text": "new", **G},
        layout=_no_agent_dir,
        expect={"changed": True},
    ),
    Case("agent-dir-is-a-file-add", "add", {"text": "new", **G}, layout=_agent_dir_file),
    Case("agent-dir-is-a-file-list", "list", {}, layout=_agent_dir_file),
    Case("agent-dir-is-a-file-project-add", "add", {"text": "new"}, layout=_agent_dir_file),
    Case("mode-600-add", "add", {"text": "new"}, layout=_mode_600, expect={"changed": True}),
    Case(
        "trust-json-malformed-add",
        "add",
        {"text": "new"},
        layout=_trust_json_text("{not json"),
        expect={"changed": True},
    ),
    Case(
        "trust-json-null-untrusted-add",
        "add",
        {"text": "new"},
        layout=_trust_json_text('{"%s": null}', ".pi/mcp.json"),
        expect={"project": []},
    ),
    Case(
        "cr-only-add", "add", {"text": "new"}, layout=files("- a\r- b\r"), expect={"changed": True}
    ),
    Case(
        "unicode-space-file-add",
        "add",
        {"text": "new"},
        layout=files("\u3000\n\u2028"),
        expect={"changed": True},
    ),
    Case(
        "forget-normalised",
        "forget",
        {"text": " a\tb "},
        layout=files("- a  b\t\n* a b\n"),
        expect={"changed": True, "project": []},
    ),
    Case(
        "update-indented",
        "update",
        {"text": "a", "to": "b"},
        layout=files("  * a\n\t- a\n"),
        expect={"changed": True},
    ),
    Case(
        "untrusted-add",
        "add",
        {"text": "new"},
        layout=files(NOTES, None, ".pi/settings.json"),
        expect={
            "error": 'Project memory is unavailable for an untrusted project; use scope "global".',
            "project": [],
        },
    ),
    Case(
        "untrusted-list",
        "list",
        {},
        layout=files(NOTES, ["a global note"], ".pi/settings.json"),
        expect={"project": [], "global": ["a global note"]},
    ),
    Case(
        "untrusted-global-add",
        "add",
        {"text": "new", **G},
        layout=files(NOTES, None, ".agents/skills/x.md"),
        expect={"changed": True, "project": []},
    ),
    Case(
        "untrusted-forget-leaks-nothing",
        "forget",
        {"text": "use pnpm, not npm"},
        layout=files(NOTES, None, ".pi/settings.json"),
        expect={"project": []},
    ),
    Case(
        "trust-json-false-add",
        "add",
        {"text": "new"},
        layout=_trust_json(False),
        expect={"project": []},
    ),
    Case(
        "trust-json-true-add",
        "add",
        {"text": "new"},
        layout=_trust_json(True),
        expect={"changed": True},
    ),
    Case(
        "list-global",
        "list",
        dict(G),
        layout=files(NOTES, ["g"]),
        expect={"scope": "global"},
    ),
    Case(
        "list-unknown-scope",
        "list",
        {"scope": "nope"},
        cli_usage=True,
        expect={"error": "scope must be one of project, global."},
    ),
    Case(
        "list-int-scope",
        "list",
        {"scope": 7},
        expect={"error": "scope must be one of project, global."},
    ),
    Case(
        "untrusted-invalid-utf8-list",
        "list",
        {},
        layout=files(b"- secret \xff\n", ["g"], ".pi/settings.json"),
        expect={"project": [], "global": ["g"]},
    ),
    Case("untrusted-pi-outside-list", "list", {}, layout=_untrusted_pi_outside),
    Case(
        "add-huge",
        "add",
        {"text": "h" * 100_000},
        expect={"error": "text is longer than 500 characters."},
    ),
    Case("add-bom-char", "add", {"text": "\ufeff"}, layout=files("\ufeff")),
    Case(
        "merge-other-in-other-scope",
        "merge",
        {"text": "use pnpm, not npm", "other": "g", "to": "x"},
        layout=files(NOTES, ["g"]),
        expect={"error": "No project memory note matches: g"},
    ),
    Case(
        "clear",
        "clear",
        {},
        layout=files(store_text(*NOTES) + "prose\n\n\n\n- \n"),
        expect={"changed": True},
    ),
    Case(
        "clear-untrusted",
        "clear",
        {},
        layout=files(NOTES, None, ".pi/settings.json"),
        expect={"project": []},
    ),
]

FRONTS = ("cli", "lsp", "mcp")


def _param(case: Case) -> Any:
    marks = [
        pytest.mark.xfail(strict=True, reason=f"{front}: {why}")
        for front, why in case.xfail.items()
    ]
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_entry_points_agree(fronts: Fronts, case: Case) -> None:
    outcomes: dict[str, Outcome] = {}
    skipped: dict[str, str] = {}
    for front in FRONTS:
        got = run_front(fronts, front, case)
        if isinstance(got, str):
            skipped[front] = got
        else:
            outcomes[front] = got
    assert len(outcomes) >= 2, skipped
    results = {f: o.result for f, o in outcomes.items() if o.result is not None}
    for front, outcome in outcomes.items():
        if outcome.result is None:
            # SPEC §8: a usage error (exit 2) changes nothing.
            assert case.cli_usage and front == "cli", (front, outcome.note)
            lay_out(fronts, case.layout)
            assert outcome.disk == disk(fronts), "a usage error changed the disk"
    first, *rest = results
    for front in rest:
        assert results[front] == results[first], f"{first} and {front} disagree"
    disks = {f: o.disk for f, o in outcomes.items() if o.result is not None}
    for front in rest:
        assert disks[front] == disks[first], f"{first} and {front} left different disks"
    for key, value in case.expect.items():
        assert results[first].get(key) == value, (key, results[first])
    if "error" in results[first]:
        assert results[first]["changed"] is False


PLACES = {"subfolder-through-link": lambda fr: fr.link / "sub"}
"""Other names of the project (a folder inside it, through a symlink to it): each front
must pick the same project, and say the same."""

NAMED_CASES = [
    c
    for c in CASES
    if c.id
    in (
        "invalid-utf8-add",
        "symlinked-store-add",
        "pi-outside-add",
        "untrusted-add",
        "move-to-global",
    )
]


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in NAMED_CASES])
def test_a_project_named_otherwise_agrees(fronts: Fronts, case: Case, place: str) -> None:
    """The same project named through a symlink or by a folder inside it: every front picks
    that project and answers as it does when named by its root (paths in messages too)."""
    where = PLACES[place](fronts)
    plain = run_front(fronts, "cli", case)
    assert isinstance(plain, Outcome) and plain.result is not None
    for front in FRONTS:
        got = run_front(fronts, front, case, where)
        if isinstance(got, str):
            continue
        assert got.result == plain.result, f"{front} through {place}"
        assert got.disk == plain.disk, f"{front} through {place}"


TOLD_CASES = [
    c
    for c in CASES
    if c.id
    in (
        "untrusted-add",
        "untrusted-list",
        "trust-json-false-add",
        "move-into-untrusted",
    )
]


@pytest.mark.parametrize("trusted", [True, False], ids=["trusted", "untrusted"])
@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in TOLD_CASES])
def test_an_explicit_trust_decision_agrees(fronts: Fronts, case: Case, trusted: bool) -> None:
    """``--trusted``/``--untrusted`` (CLI, MCP) and ``initializationOptions.trusted`` (LSP)
    decide alike, over ``trust.json`` and Pi's resources (SPEC §4 rule 1)."""
    outcomes = {
        front: got
        for front in FRONTS
        if isinstance(got := run_front(fronts, front, case, trusted=trusted), Outcome)
    }
    first, *rest = outcomes
    assert outcomes[first].result is not None
    for front in rest:
        assert outcomes[front].result == outcomes[first].result, f"{first} and {front} disagree"
        assert outcomes[front].disk == outcomes[first].disk, f"{first} and {front} disagree"
    if not trusted:
        assert outcomes[first].result["project"] == []


# -- proposals (SPEC §12) ----------------------------------------------------------------


WAITING = (
    '{"id":"0123abcd","action":"add","text":"waiting note","by":"someone",'
    '"at":"2026-01-01T00:00:00Z"}\n'
)


def _inbox(text: str, scope_path: str = ".pi/memory.inbox.jsonl") -> Layout:
    def lay(ws: Workspace, outside: Path) -> None:
        files(NOTES)(ws, outside)
        (ws.root / scope_path).write_text(text)

    return lay


def _inbox_symlink(ws: Workspace, outside: Path) -> None:
    files(NOTES)(ws, outside)
    (outside / "inbox.jsonl").write_text(WAITING)
    (ws.root / ".pi" / "memory.inbox.jsonl").symlink_to(outside / "inbox.jsonl")


PROPOSALS = [
    Case(
        "propose-add",
        "add",
        {"text": "a\x1bnew\u200b note"},
        expect={"waiting": 1, "changed": False, "entry": "a new\u200b note"},
    ),
    Case("propose-add-near-duplicate", "add", {"text": "USE PNPM, NOT NPM."}),
    Case("propose-add-blank", "add", {"text": " \t"}, expect={"error": "text is required."}),
    Case("propose-add-astral-501", "add", {"text": ASTRAL_501}),
    Case("propose-update-no-match", "update", {"text": "nope", "to": "x"}),
    Case("propose-update", "update", {"text": "use pnpm, not npm", "to": "use bun"}),
    Case("propose-update-same", "update", {"text": "use pnpm, not npm", "to": "use pnpm, not npm"}),
    Case("propose-forget", "forget", {"text": "tests need DATABASE_URL"}),
    Case("propose-global", "add", {"text": "g", **G}),
    Case("propose-unknown-scope", "add", {"text": "x", "scope": "nope"}, cli_usage=True),
    Case("propose-untrusted", "add", {"text": "x"}, layout=files(NOTES, None, ".pi/settings.json")),
    Case(
        "propose-already-waiting",
        "add",
        {"text": "waiting  note"},
        layout=_inbox(WAITING),
        expect={"changed": False, "error": None},
    ),
    Case("propose-bad-inbox-line", "add", {"text": "x"}, layout=_inbox("not json\n" + WAITING)),
    Case("propose-inbox-symlink", "add", {"text": "x"}, layout=_inbox_symlink),
    Case("propose-invalid-utf8-store", "add", {"text": "x"}, layout=files(b"- bad \xff\n")),
]


def run_proposal(fr: Fronts, front: str, case: Case) -> Outcome:
    """``add|update|forget --propose``, ``memory.propose``, the tool under ``--review``."""
    lay_out(fr, case.layout)
    if front == "cli":
        argv = cli_argv(case.action, case.args)
        assert argv is not None
        argv[1:1] = ["--propose", "--by=agent"]
        done = run_cli(*argv, cwd=fr.ws.root, env=isolated_env(fr.ws.agent_dir, fr.ws.home))
        if done.returncode == 2:
            return Outcome(None, disk(fr), done.stderr)
        result = json.loads(done.stdout)
        assert done.returncode == (1 if "error" in result else 0), (done.returncode, result)
    elif front == "lsp":
        answer = fr.lsp.command("propose", {"action": case.action, "by": "agent", **case.args})
        result = _plain(answer)
    else:
        called = fr.mcp_on(None, review=True).call({"action": case.action, **case.args})
        result = called.structured_content
        assert called.is_error == bool(result.get("error")), result
    proposal = result.get("proposal")
    if isinstance(proposal, dict):
        assert re.fullmatch(r"[0-9a-f]{8}", proposal["id"]), proposal
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", proposal["at"]), proposal
        result["proposal"] = {**proposal, "id": "*", "at": "*", "by": "*"}
    return Outcome(result, disk(fr))


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in PROPOSALS])
def test_a_proposal_agrees(fronts: Fronts, case: Case) -> None:
    """A proposal (SPEC §12) through each front: the same result (its ``id``, ``at`` and
    ``by`` aside) and the same inbox on disk."""
    outcomes = {front: run_proposal(fronts, front, case) for front in FRONTS}
    results = {f: o for f, o in outcomes.items() if o.result is not None}
    if len(results) < len(outcomes):
        assert case.cli_usage and outcomes["cli"].result is None
    first, *rest = results
    for front in rest:
        assert results[front].result == results[first].result, f"{first} and {front} disagree"
        assert results[front].disk == results[first].disk, (
            f"{first} and {front} left different disks"
        )
    for key, value in case.expect.items():
        assert results[first].result.get(key) == value, (key, results[first].result)
    if "waiting" in case.expect:
        assert results[first].disk["project-inbox"] is not None


# -- accepting and rejecting (SPEC §12): the CLI and the language server ------------------

UPDATE_WAITING = (
    '{"id":"4567cdef","action":"update","text":"gone note","to":"x","by":"someone",'
    '"at":"2026-01-01T00:00:00Z"}\n'
)
ALREADY_WAITING = (
    '{"id":"89abcdef","action":"add","text":"use pnpm, not npm","by":"someone",'
    '"at":"2026-01-01T00:00:00Z"}\n'
)


@dataclass
class Review:
    id: str
    verb: str
    ids: list[str] | None = None
    """``None``: ``all``."""
    scope: Any = None
    text: Any = None
    to: Any = None
    layout: Layout = field(default_factory=lambda: _inbox(WAITING))
    xfail: str = ""
    cli_usage: bool = False
    """The CLI refuses it as a usage error (exit 2)."""


def _untrusted_inbox(ws: Workspace, outside: Path) -> None:
    _inbox(WAITING)(ws, outside)
    files(None, None, ".pi/settings.json")(ws, outside)


REVIEWS = [
    Review("accept-one", "accept", ["0123abcd"]),
    Review("accept-edit", "accept", ["0123abcd"], text="edited\tnote"),
    Review("accept-edit-blank", "accept", ["0123abcd"], text=" "),
    Review("accept-edit-501", "accept", ["0123abcd"], text="e" * 501),
    Review("accept-edit-to-of-an-add", "accept", ["0123abcd"], to="x"),
    Review("accept-unknown", "accept", ["deadbeef"]),
    Review("accept-empty-id", "accept", [""], cli_usage=True),
    Review(
        "reject-empty-id-among-ids",
        "reject",
        ["0123abcd", ""],
        cli_usage=True,
    ),
    Review("accept-twice-named", "accept", ["0123abcd", "0123abcd"]),
    Review("accept-all", "accept", None, layout=_inbox(WAITING + ALREADY_WAITING)),
    Review("accept-all-edit", "accept", None, text="x"),
    Review("accept-wrong-scope", "accept", ["0123abcd"], scope="global"),
    Review("accept-already-there", "accept", ["89abcdef"], layout=_inbox(ALREADY_WAITING)),
    Review("accept-update-gone", "accept", ["4567cdef"], layout=_inbox(UPDATE_WAITING)),
    Review(
        "accept-untrusted",
        "accept",
        ["0123abcd"],
        layout=_untrusted_inbox,
    ),
    Review("reject-one", "reject", ["0123abcd"]),
    Review("reject-all", "reject", None, layout=_inbox(WAITING + UPDATE_WAITING)),
    Review("reject-unknown", "reject", ["deadbeef"]),
]


def run_review(fr: Fronts, front: str, case: Review) -> Outcome:
    lay_out(fr, case.layout)
    if front == "cli":
        argv = [case.verb, "--json"]
        for name in ("scope", "text", "to"):
            if getattr(case, name) is not None:
                argv.append(f"--{name}={getattr(case, name)}")
        argv += ["--all"] if case.ids is None else ["--", *case.ids]
        done = run_cli(*argv, cwd=fr.ws.root, env=isolated_env(fr.ws.agent_dir, fr.ws.home))
        if done.returncode == 2:
            return Outcome(None, disk(fr), done.stderr)
        out = json.loads(done.stdout)
        assert done.returncode == (1 if "error" in out else 0), (done.returncode, out)
        return Outcome(out, disk(fr))
    arg: dict[str, Any] = {}
    if case.ids is None:
        arg["all"] = True
    elif len(case.ids) == 1:
        arg["id"] = case.ids[0]
    else:
        arg["ids"] = case.ids
    for name in ("scope", "text", "to"):
        if getattr(case, name) is not None:
            arg[name] = getattr(case, name)
    return Outcome(_plain(fr.lsp.command(case.verb, arg)), disk(fr))


def _review_param(case: Review) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_review_param(c) for c in REVIEWS])
def test_accepting_and_rejecting_agree(fronts: Fronts, case: Review) -> None:
    """``memory-ls accept|reject`` and ``memory.accept|reject`` (the MCP server has neither):
    the same result and the same stores and inboxes afterwards."""
    cli = run_review(fronts, "cli", case)
    server = run_review(fronts, "lsp", case)
    if case.cli_usage:
        assert cli.result is None, cli.result
        assert server.result is not None and server.result["error"]
        assert server.disk == cli.disk  # neither changed anything
        return
    assert cli.result is not None, cli.note
    assert server.result == cli.result
    assert server.disk == cli.disk


# -- recall (SPEC §6): `inject --json`, memory.inject, memory://recall ----------------------


def _config(text: str, *extra: str) -> Layout:
    def lay(ws: Workspace, outside: Path) -> None:
        files(NOTES + ["x" * 300] * 3, ["g \u202e bidi", "g2"], *extra)(ws, outside)
        (ws.agent_dir / "bytefly.json").write_text(text)

    return lay


RECALLS = {
    "plain": files(NOTES, ["g"]),
    "crlf-bom": files("\ufeff" + store_text(*NOTES).replace("\n", "\r\n"), ["g"]),
    "untrusted": files(NOTES, ["g"], ".pi/settings.json"),
    "nothing": files(),
    "inject-off": _config('{"memory": {"inject": false}}'),
    "small-budget": _config('{"memory": {"maxInjectBytes": "511.5"}}'),
    "bad-config": _config('{"memory": {"maxInjectBytes": "lots", "inject": "no"}}'),
    "project-config-untrusted": _config("{}", ".pi/settings.json", ".pi/bytefly.json"),
}


@pytest.mark.parametrize("layout", RECALLS)
def test_recall_agrees(fronts: Fronts, layout: str) -> None:
    """The recall body and its plan: ``inject --json`` (CLI), ``memory.inject`` (LSP) and
    ``memory://recall`` (MCP: the body alone, empty text for none)."""
    lay_out(fronts, RECALLS[layout])
    done = run_cli("inject", "--json", cwd=fronts.ws.root, env=fronts.ws.env())
    assert done.returncode == 0, done.stderr
    cli = json.loads(done.stdout)
    lay_out(fronts, RECALLS[layout])
    server = _plain(fronts.lsp.command("inject", {}))
    lay_out(fronts, RECALLS[layout])
    recall = fronts.mcp.read("memory://recall")
    assert server == cli
    assert recall == (cli["body"] or "")


def test_a_missing_project_is_refused_by_each_front_as_documented(fronts: Fronts) -> None:
    """SPEC §1: nothing creates a project. The CLI's ``--project`` is a usage error (exit 2);
    the language server's ``uri`` outside every folder gets the ``MemoryResult`` error."""
    lay_out(fronts, files(NOTES))
    missing = fronts.outside / "no" / "such"
    done = run_cli(
        "add", "--json", f"--project={missing}", "--", "x", cwd=fronts.ws.root, env=fronts.ws.env()
    )
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].endswith(f"--project is not a directory: {missing}")
    before = disk(fronts)
    answer = _plain(fronts.lsp.command("add", {"text": "x", "uri": uri_of(missing)}))
    assert answer["error"] == f"No such project directory: {missing}"
    assert answer["changed"] is False and answer["project"] == []
    assert disk(fronts) == before
    assert not (fronts.outside / "no").exists()
