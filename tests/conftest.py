"""The one workspace every kind of test uses, and the one way to run the CLI as a process.

A :class:`Workspace` is a throw-away git project, agent dir and ``HOME`` under
``tmp_path``, so no test touches the real home. In-process tests use its
runtime; process tests (CLI, MCP, language server, editors) take its
:meth:`Workspace.env`, and :meth:`Workspace.cli` runs ``python -m memory_ls``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from memory_ls.core.models import Scope
from memory_ls.core.text import HEADER
from memory_ls.store.runtime import MemoryRuntime

CLI_TIMEOUT = 60.0
"""Seconds a CLI process may take before it is killed and its test fails."""


@pytest.fixture(autouse=True)
def _isolated_agent_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """Point ``PI_CODING_AGENT_DIR`` at a fresh folder for every test.

    Tests that care about the variable set it themselves (or pass ``env``); this
    only guarantees that a forgotten ``agent_dir=`` never reaches ``~/.pi/agent``.
    """
    folder = tmp_path_factory.mktemp("agent-default")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(folder))
    yield folder


def store_text(*notes: str) -> str:
    """A store file as a first write creates it: the header, a blank line, one bullet a note."""
    return HEADER + "\n\n" + "".join(f"- {note}\n" for note in notes)


def new_project(path: Path, *resources: str) -> Path:
    """A repository root at ``path`` (an empty ``.git/``), holding the given files (``{}``).

    ``resources`` are paths relative to the root, e.g. Pi's trust-requiring
    ``.pi/settings.json``.
    """
    (path / ".git").mkdir(parents=True)
    for name in resources:
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text("{}")
    return path


def isolated_env(agent_dir: Path, home: Path) -> dict[str, str]:
    """This process's environment with the agent dir and ``HOME`` pointed into tmp."""
    return {**os.environ, "PI_CODING_AGENT_DIR": str(agent_dir), "HOME": str(home)}


def run_cli(
    *args: str,
    cwd: Path,
    env: dict[str, str],
    stdin: str | None = None,
    timeout: float = CLI_TIMEOUT,
    python_flags: Sequence[str] = (),
    program: Sequence[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``python [python_flags] -m memory_ls ARGS`` as a real process.

    ``program`` replaces ``python [python_flags] -m memory_ls``, e.g. the
    ``memory-ls`` script of an installed wheel (``tests/install``). Its output is captured as text; its stdin is never a terminal (``stdin``
    is piped in, else it reads an empty file); after ``timeout`` seconds it is
    killed and ``subprocess.TimeoutExpired`` fails the test instead of hanging it.
    """
    command = (
        [*program] if program is not None else [sys.executable, *python_flags, "-m", "memory_ls"]
    )
    return subprocess.run(
        [*command, *args],
        cwd=cwd,
        env=env,
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@dataclass
class Workspace:
    """A git project (``.git/`` folder, no ``.pi/`` yet), an agent dir and a home."""

    root: Path
    agent_dir: Path
    home: Path

    @property
    def project_store(self) -> Path:
        return self.root / ".pi" / "memory.md"

    @property
    def global_store(self) -> Path:
        return self.agent_dir / "memory.md"

    def store(self, scope: Scope) -> Path:
        return self.project_store if scope == "project" else self.global_store

    def write(self, where: Scope | Path, content: str | bytes | Sequence[str]) -> Path:
        """Write a store (a scope, or any file's path), creating its folder.

        ``content`` is the raw text or bytes, or a list of notes written as
        :func:`store_text` lays them out.
        """
        path = where if isinstance(where, Path) else self.store(where)
        if isinstance(content, bytes):
            data = content
        elif isinstance(content, str):
            data = content.encode("utf-8")
        else:
            data = store_text(*content).encode("utf-8")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    def read(self, scope: Scope) -> bytes:
        return self.store(scope).read_bytes()

    def text(self, scope: Scope) -> str:
        """A store's content, decoded as UTF-8."""
        return self.read(scope).decode("utf-8")

    def runtime(self, trusted: bool | None = True, read_only: bool = False) -> MemoryRuntime:
        return MemoryRuntime(
            self.root, agent_dir=str(self.agent_dir), trusted=trusted, read_only=read_only
        )

    def env(self) -> dict[str, str]:
        """The environment of a process run on this workspace (never the real home)."""
        return isolated_env(self.agent_dir, self.home)

    def cli(
        self,
        *args: str,
        cwd: Path | None = None,
        stdin: str | None = None,
        timeout: float = CLI_TIMEOUT,
        python_flags: Sequence[str] = (),
        program: Sequence[str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """``memory-ls ARGS`` run in the project (or ``cwd``): see :func:`run_cli`."""
        return run_cli(
            *args,
            cwd=cwd or self.root,
            env=self.env(),
            stdin=stdin,
            timeout=timeout,
            python_flags=python_flags,
            program=program,
        )


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    """A tmp project with an empty ``.git/`` folder, a separate tmp agent dir and a tmp home.

    They are ``tmp_path``'s ``project``, ``agent`` and ``home``; the agent dir is
    also this process's ``PI_CODING_AGENT_DIR``.
    """
    root = new_project(tmp_path / "project")
    agent = tmp_path / "agent"
    agent.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    return Workspace(root.resolve(), agent.resolve(), home.resolve())
