"""Ctrl-C: every verb stops quietly with exit status 130 (``memory_ls.__main__.main``).

Each test starts a real process, waits until it is really at work (an ``add``
blocked on the store's lock, a server that answered ``initialize``), then sends
it SIGINT as a terminal's Ctrl-C would.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import tomllib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import Workspace
from tests.lock_holder import waits_on

REPO = Path(__file__).resolve().parents[2]
WAIT = 30.0
QUIET = "memory-ls: interrupted\n"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGINT and flock are POSIX")


def start(workspace: Workspace, command: Sequence[str]) -> subprocess.Popen[bytes]:
    # A lock wait longer than the test, so the writer is still waiting when Ctrl-C comes.
    return subprocess.Popen(
        list(command),
        cwd=workspace.root,
        env={**workspace.env(), "MEMORY_LS_LOCK_TIMEOUT": "120"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def interrupt(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    """Send Ctrl-C's signal; the exit status and everything written to stderr."""
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("the process did not stop on SIGINT") from None
    return proc.returncode, err.decode("utf-8", "replace")


@contextmanager
def held_lock(folder: Path) -> Iterator[None]:
    """Hold the lock every writer of the store in ``folder`` takes (store/files.py: the folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def console_script() -> Path:
    """The installed ``memory-ls`` script beside this Python (``pip install -e .``)."""
    script = Path(sys.executable).parent / "memory-ls"
    if not script.exists():
        if os.environ.get("CI") == "true":
            raise AssertionError(f"no memory-ls console script at {script}")
        pytest.skip("memory-ls is not installed beside this Python")
    return script


def test_the_console_script_runs_the_interrupt_handling_main() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["memory-ls"] == "memory_ls.__main__:main"


@pytest.mark.parametrize("how", ["python -m", "console script"])
def test_ctrl_c_while_add_waits_for_the_lock(workspace: Workspace, how: str) -> None:
    workspace.write("project", ["kept"])
    before = workspace.read("project")
    program = [sys.executable, "-m", "memory_ls"] if how == "python -m" else [str(console_script())]
    with held_lock(workspace.project_store.parent):
        proc = start(workspace, [*program, "add", "never written"])
        assert waits_on(proc.pid, workspace.project_store.parent), "the add did not wait"
        assert proc.poll() is None, "the add did not wait for the lock"
        code, err = interrupt(proc)
    assert (code, err) == (130, QUIET)
    assert workspace.read("project") == before
    assert sorted(p.name for p in workspace.project_store.parent.iterdir()) == ["memory.md"]


def lsp_frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def test_ctrl_c_stops_serve_after_initialize(workspace: Workspace) -> None:
    proc = start(workspace, [sys.executable, "-m", "memory_ls", "serve"])
    assert proc.stdin is not None and proc.stdout is not None
    initialize = {"processId": None, "rootUri": None, "capabilities": {}}
    proc.stdin.write(
        lsp_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize})
    )
    proc.stdin.flush()
    headers = {}
    while (line := proc.stdout.readline().strip()) != b"":
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    answer = json.loads(proc.stdout.read(int(headers[b"content-length"])))
    assert answer["id"] == 1 and "capabilities" in answer["result"]
    assert interrupt(proc) == (130, QUIET)


def test_ctrl_c_stops_mcp_after_initialize(workspace: Workspace) -> None:
    proc = start(
        workspace, [sys.executable, "-m", "memory_ls", "mcp", "--project", str(workspace.root)]
    )
    assert proc.stdin is not None and proc.stdout is not None
    initialize = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    }
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize}
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    assert answer["id"] == 1 and "serverInfo" in answer["result"]
    assert interrupt(proc) == (130, QUIET)


def test_asyncio_s_shutdown_report_of_a_ctrl_c_task_is_dropped() -> None:
    """Where Ctrl-C lands decides whether asyncio also reports the MCP task it ended (a
    group holding KeyboardInterrupt): that report is dropped, any other error kept."""
    import logging

    from memory_ls.mcp_server import _QuietInterrupt

    def record(exc: BaseException) -> logging.LogRecord:
        return logging.LogRecord("asyncio", logging.ERROR, "", 0, "x", None, (type(exc), exc, None))

    quiet = _QuietInterrupt()
    assert not quiet.filter(record(BaseExceptionGroup("g", [KeyboardInterrupt()])))
    assert not quiet.filter(record(KeyboardInterrupt()))
    assert quiet.filter(record(BaseExceptionGroup("g", [KeyboardInterrupt(), ValueError()])))
    assert quiet.filter(record(ValueError()))


def test_ctrl_c_that_a_library_turns_into_another_error_still_ends_quietly(
    workspace: Workspace,
) -> None:
    """Ctrl-C landing in anyio's cancel-scope bookkeeping (``mcp`` at the wrong moment)
    surfaced as a RuntimeError in an exception group: a traceback and exit status 1."""
    script = (
        "import memory_ls.__main__ as entry, memory_ls.cli as cli\n"
        "def run(argv):\n"
        "    try:\n"
        "        entry._on_sigint(2, None)\n"
        "    except KeyboardInterrupt as exc:\n"
        "        raise BaseExceptionGroup('a task group', [RuntimeError('cancel scope')]) from exc\n"
        "cli.main = run\n"
        "entry.main([])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=workspace.env(), capture_output=True, timeout=60
    )
    assert (done.returncode, done.stderr.decode()) == (130, QUIET)


INTERRUPTED_AT = {
    # `import signal`, which `main` ran before its `try` (every verb but the quick ones).
    "import signal": (
        "import builtins\n"
        "real = builtins.__import__\n"
        "def importing(name, *args, **kwargs):\n"
        "    if name == 'signal':\n"
        "        raise KeyboardInterrupt\n"
        "    return real(name, *args, **kwargs)\n"
        "builtins.__import__ = importing\n"
        "entry.main(['check'])\n"
    ),
    # The last flush of a quick verb's output, which `main` ran after its `try`.
    "the last flush": (
        "import sys\n"
        "class Stdout:\n"  # Ctrl-C comes once, during the first flush
        "    pressed = False\n"
        "    def write(self, text): return len(text)\n"
        "    def flush(self):\n"
        "        if not Stdout.pressed:\n"
        "            Stdout.pressed = True\n"
        "            raise KeyboardInterrupt\n"
        "cli.main = lambda argv: 0\n"
        "sys.argv = ['memory-ls', 'path']\n"
        "sys.stdout = Stdout()\n"
        "entry.main()\n"
    ),
    # A second Ctrl-C while `main` flushes the output on its way out after the first.
    "the goodbye": (
        "import sys\n"
        "class Stdout:\n"
        "    def write(self, text): return len(text)\n"
        "    def flush(self): raise KeyboardInterrupt\n"
        "def interrupted(argv): raise KeyboardInterrupt\n"
        "cli.main = interrupted\n"
        "sys.stdout = Stdout()\n"
        "entry.main(['check'])\n"
    ),
}


@pytest.mark.parametrize("where", INTERRUPTED_AT)
def test_ctrl_c_before_and_after_the_verb_runs_ends_quietly(
    workspace: Workspace, where: str
) -> None:
    """Ctrl-C can come at any moment of ``main``, not only while the verb runs: arriving
    in ``import signal`` or the last flush, it gave a Python traceback; so did a second
    one while the output was flushed after the first."""
    script = "import memory_ls.__main__ as entry, memory_ls.cli as cli\n" + INTERRUPTED_AT[where]
    done = subprocess.run(
        [sys.executable, "-c", script], env=workspace.env(), capture_output=True, timeout=60
    )
    assert (done.returncode, done.stderr.decode()) == (130, QUIET)


@pytest.mark.parametrize(
    "fmt", [["--json"], ["--format", "sarif"], []], ids=["json", "sarif", "text"]
)
def test_ctrl_c_while_check_writes_its_findings_leaves_the_whole_document(
    workspace: Workspace, fmt: list[str]
) -> None:
    """A JSON or SARIF document cut in the middle breaks whoever parses it: Ctrl-C that
    comes while ``check`` writes takes effect once the document is out, whole."""
    workspace.write("project", ["use pnpm"] * 4000)  # 0.5 MB or more of findings: pipefuls
    expected = workspace.cli("check", *fmt).stdout
    assert len(expected.encode()) > 4 * 65536
    proc = start(workspace, [sys.executable, "-m", "memory_ls", "check", *fmt])
    assert proc.stdout is not None
    # The writing has begun (os.read: nothing kept back in a reader's buffer), and the
    # pipe fills up behind it.
    first = os.read(proc.stdout.fileno(), 1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=WAIT)
    assert (proc.returncode, err.decode()) == (130, QUIET)
    assert (first + out).decode() == expected
