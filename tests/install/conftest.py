"""Helpers of the installation tests: run a process outside the checkout, and the first
message of each server (LSP ``initialize`` with Content-Length framing, MCP ``initialize``
as one JSON line) against an installed program."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[2]


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def outside_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """An environment in which nothing points back into the checkout or its venv."""
    base = dict(os.environ if env is None else env)
    for key in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP"):
        base.pop(key, None)
    venv_bin = str(REPO / ".venv" / "bin")
    base["PATH"] = os.pathsep.join(
        entry for entry in base.get("PATH", "/usr/bin:/bin").split(os.pathsep) if entry != venv_bin
    )
    return base


def run(
    command: Sequence[str],
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run a command with no stdin, its output captured; a hang fails the test."""
    return subprocess.run(
        list(command),
        cwd=cwd or Path("/"),
        env=outside_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _exchange(
    command: Sequence[str],
    cwd: Path,
    env: dict[str, str],
    payload: bytes,
    read: Any,
    what: str,
    timeout: float = 60,
) -> dict[str, Any]:
    """Start ``command``, write ``payload``, and return the answer ``read`` finds (id 1)."""
    proc = subprocess.Popen(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    answer: list[Any] = []

    def reader() -> None:
        try:
            assert proc.stdout is not None
            answer.append(read(proc.stdout))
        except Exception as error:
            answer.append(error)

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    proc.stdin.write(payload)
    proc.stdin.flush()
    thread.join(timeout)
    proc.kill()
    _, stderr = proc.communicate(timeout=10)
    assert answer, f"{what} did not answer initialize within {timeout} s: {stderr[-1500:]!r}"
    message = answer[0]
    assert isinstance(message, dict) and "result" in message, (
        f"{what} failed to initialize: {message!r} {stderr[-1500:]!r}"
    )
    result: dict[str, Any] = message["result"]
    return result


def _read_lsp(stream: IO[bytes]) -> dict[str, Any]:
    while True:
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
        message: dict[str, Any] = json.loads(stream.read(length))
        if message.get("id") == 1:
            return message


def _read_mcp(stream: IO[bytes]) -> dict[str, Any]:
    while True:
        line = stream.readline()
        if not line:
            raise EOFError("the server closed stdout")
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == 1:
            return message


def lsp_initialize(command: Sequence[str], cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """The ``initialize`` result of the language server ``command`` starts."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "rootUri": cwd.as_uri(), "capabilities": {}},
        }
    ).encode()
    payload = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    return _exchange(command, cwd, env, payload, _read_lsp, " ".join(command))


def mcp_initialize(command: Sequence[str], cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """The ``initialize`` result of the MCP server ``command`` starts (stdio transport)."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "memory-ls-tests", "version": "0"},
        },
    }
    payload = json.dumps(request).encode() + b"\n"
    return _exchange(command, cwd, env, payload, _read_mcp, " ".join(command))
