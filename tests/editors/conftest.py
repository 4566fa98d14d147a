"""Shared fixtures for the real-editor tests (Neovim, Emacs, VS Code, the grammar).

Each test needs a real tool installed by ``.ci/install-editors.sh``. Locally a
missing tool skips its test with the reason; under ``CI=true`` it fails instead,
so CI can never go green by skipping.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO

import pytest

from tests.conftest import Workspace

REPO = Path(__file__).resolve().parents[2]
EDITORS = REPO / "editors"
TOOLS = Path(os.environ.get("MEMORY_LS_EDITOR_TOOLS", "/opt/memory-ls-editors"))
ARTIFACTS = REPO / "tests" / "artifacts"

LONG_NOTE = "remember " + " ".join(f"detail{i:03d}" for i in range(60))  # > 500 characters
PROJECT_NOTES = [
    "use pnpm, not npm",
    "🎉 ship on fridays is fine",
    "tests need DATABASE_URL",
    "🎉 Ship on Fridays is fine.",  # near-duplicate of the emoji note: `duplicate`
    LONG_NOTE,  # `too-long`
]
GLOBAL_NOTES = ["prefer ripgrep over grep", "write commit messages in the imperative"]
DUPLICATE_LINE = 5  # 0-based line of "🎉 Ship on Fridays is fine."
EMOJI_DUPLICATE = PROJECT_NOTES[3]


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def require(condition: object, reason: str) -> None:
    """Skip locally when a tool is missing; fail under CI=true."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"{reason} (CI=true: editor tests may not skip; run .ci/install-editors.sh)")
    pytest.skip(reason)


def memory_ls_bin() -> Path | None:
    """The `memory-ls` executable: $MEMORY_LS_BIN, the running venv's, or PATH's."""
    env = os.environ.get("MEMORY_LS_BIN")
    if env:
        return Path(env)
    beside = Path(sys.executable).parent / "memory-ls"
    if beside.exists():
        return beside
    found = shutil.which("memory-ls")
    return Path(found) if found else None


_SERVER_OK: dict[str, str | None] = {}


def _read_message(stream: IO[bytes]) -> dict[str, object]:
    length = 0
    while True:
        line = stream.readline()
        if not line:
            raise EOFError("the server closed stdout")
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    return json.loads(stream.read(length))  # type: ignore[no-any-return]


def _probe_server(binary: Path) -> str | None:
    """Start `memory-ls serve`, send `initialize`, and wait for its answer."""
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, HOME=home, PI_CODING_AGENT_DIR=str(Path(home) / "agent"))
        proc = subprocess.Popen(
            [str(binary), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=home,
        )
        assert proc.stdin is not None and proc.stdout is not None
        answer: list[object] = []

        def read() -> None:
            try:
                assert proc.stdout is not None
                while True:
                    message = _read_message(proc.stdout)
                    if message.get("id") == 1:
                        answer.append(message)
                        return
            except Exception as error:
                answer.append(error)

        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"processId": None, "rootUri": None, "capabilities": {}},
            }
        ).encode()
        try:
            proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            proc.stdin.flush()
        except OSError as error:
            proc.kill()
            return f"`memory-ls serve` did not read its input: {error}"
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(60)
        proc.kill()
        _, stderr = proc.communicate(timeout=10)
        if not answer:
            return "`memory-ls serve` did not answer `initialize` within 60 s"
        if isinstance(answer[0], Exception) or "result" not in answer[0]:  # type: ignore[operator]
            return f"`memory-ls serve` failed to initialize: {answer[0]!r} {stderr.decode(errors='replace')[-800:]}"
        return None


def server_problem() -> str | None:
    """Why `memory-ls serve` cannot run here, or None when it can."""
    if "problem" in _SERVER_OK:
        return _SERVER_OK["problem"]
    binary = memory_ls_bin()
    problem = (
        "memory-ls is not installed (pip install -e .)" if binary is None else _probe_server(binary)
    )
    _SERVER_OK["problem"] = problem
    return problem


def require_server() -> Path:
    problem = server_problem()
    require(problem is None, problem or "")
    binary = memory_ls_bin()
    assert binary is not None
    return binary


def run_headless(
    command: list[str], cwd: Path, env: dict[str, str], limit: int = 150
) -> subprocess.CompletedProcess[str]:
    """Run a headless editor under coreutils' ``timeout`` (Neovim 0.7 hangs on a Lua
    error in headless mode), with no stdin, capturing its output."""
    timeout = shutil.which("timeout")
    if timeout:
        command = [timeout, "-k", "5", str(limit), *command]
    return subprocess.run(
        command,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=limit + 20,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def workspace(workspace: Workspace) -> Workspace:
    """The shared workspace, filled for the editors: its project store holds a duplicate
    and an over-long note, its global store two notes, its home the XDG folders."""
    (workspace.root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    workspace.write("project", PROJECT_NOTES)
    workspace.write("global", GLOBAL_NOTES)
    for sub in (".config", ".cache", ".local/share", ".local/state", "tmp"):
        (workspace.home / sub).mkdir(parents=True, exist_ok=True)
    return workspace


@pytest.fixture
def editor_env(workspace: Workspace) -> dict[str, str]:
    """An editor's environment: the workspace's, without the running editor's own state,
    with XDG and ``TMPDIR`` under the tmp home, and the tools on ``PATH``."""
    home = workspace.home
    binary = memory_ls_bin()
    path_entries = [str(binary.parent)] if binary else []
    path_entries += [str(TOOLS / "bin"), os.environ.get("PATH", "/usr/bin:/bin")]
    env = {
        key: value
        for key, value in workspace.env().items()
        if not key.startswith(("XDG_", "NVIM", "VIM", "EMACS", "VSCODE_"))
    }
    env.update(
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_STATE_HOME=str(home / ".local/state"),
        TMPDIR=str(home / "tmp"),
        PATH=os.pathsep.join(path_entries),
        LANG="C.UTF-8",
        LC_ALL="C.UTF-8",
    )
    return env
