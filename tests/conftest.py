"""Shared fixtures: a throw-away project and agent dir, so no test touches the real home."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memory_ls.core.models import Scope
from memory_ls.store.runtime import MemoryRuntime


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


@dataclass
class Workspace:
    """A git project (``.git/`` folder, no ``.pi/`` yet) and an agent dir."""

    root: Path
    agent_dir: Path

    @property
    def project_store(self) -> Path:
        return self.root / ".pi" / "memory.md"

    @property
    def global_store(self) -> Path:
        return self.agent_dir / "memory.md"

    def store(self, scope: Scope) -> Path:
        return self.project_store if scope == "project" else self.global_store

    def write(self, scope: Scope, content: str | bytes) -> Path:
        """Write a store's raw content (creating its folder)."""
        path = self.store(scope)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8") if isinstance(content, str) else content
        path.write_bytes(data)
        return path

    def read(self, scope: Scope) -> bytes:
        return self.store(scope).read_bytes()

    def runtime(self, trusted: bool | None = True, read_only: bool = False) -> MemoryRuntime:
        return MemoryRuntime(
            self.root, agent_dir=str(self.agent_dir), trusted=trusted, read_only=read_only
        )


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    """A tmp project with an empty ``.git/`` folder and a separate tmp agent dir."""
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    agent = tmp_path / "agent"
    agent.mkdir()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    return Workspace(root.resolve(), agent.resolve())
