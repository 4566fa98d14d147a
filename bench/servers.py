"""The language servers under test and how to start each one.

- ``memory-ls``: ``.venv/bin/memory-ls serve`` (override the command line with
  ``BENCH_MEMORY_LS_CMD``, e.g. to run the harness against a stub);
- ``rumdl``: ``bench/.peers/venv/bin/rumdl server --no-config`` (PyPI);
- ``vscode-md``: vscode-markdown-languageserver (npm) behind ``bench/peers/vscode_md_proxy.mjs``,
  which answers its ``markdown/parse`` requests with markdown-it tokens;
- ``pygls-min``: ``bench/peers/minimal_pygls.py``, the minimal pygls 2 server of BENCH-NOTES
  (whole-file recheck per edit, duplicate warnings);
- ``publish-floor``: ``bench/peers/floor_publish.py`` serving memory-ls's own publish of a
  keystroke on the store (:mod:`bench.floor` captures it; ``bench.run`` adds it per store).

Peers are installed by ``bench/setup.sh``; a missing one is skipped with a reason.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
PEERS = BENCH / ".peers"
VENV_BIN = REPO / ".venv" / "bin"

# Settings VS Code sends the markdown server (its defaults, with validation on).
VSCODE_MD_SETTINGS: dict[str, Any] = {
    "markdown": {
        "server": {"log": "off"},
        "preferredMdPathExtensionStyle": "auto",
        "suggest": {"paths": {"enabled": True, "includeWorkspaceHeaderCompletions": "never"}},
        "occurrencesHighlight": {"enabled": False},
        "validate": {
            "enabled": True,
            "referenceLinks": {"enabled": "warning"},
            "fragmentLinks": {"enabled": "warning"},
            "fileLinks": {"enabled": "warning", "markdownFragmentLinks": "inherit"},
            "ignoredLinks": [],
            "unusedLinkDefinitions": {"enabled": "hint"},
            "duplicateLinkDefinitions": {"enabled": "warning"},
        },
    }
}


@dataclass(frozen=True)
class ServerSpec:
    """How to start one server and drive it."""

    name: str
    argv: list[str]
    mode: Literal["push", "pull"] = "push"
    is_memory_ls: bool = False
    init_options: dict[str, Any] | None = None
    # Sent with workspace/didChangeConfiguration after `initialized` (if not None).
    settings: dict[str, Any] | None = None
    # Answers to workspace/configuration, per section.
    configuration: dict[str, Any] = field(default_factory=dict)
    rss_exclude_root: bool = False
    # The bare server, without a proxy: cold start is measured on this when set.
    cold_start_argv: list[str] | None = None
    missing: str | None = None  # why it cannot run here, or None
    note: str = ""


def python_for_pygls() -> str:
    """An interpreter that has pygls 2 (the project's venv, else this one)."""
    candidate = VENV_BIN / "python"
    return str(candidate) if candidate.exists() else sys.executable


def memory_ls() -> ServerSpec:
    override = os.environ.get("BENCH_MEMORY_LS_CMD")
    if override:
        return ServerSpec(
            name="memory-ls",
            argv=shlex.split(override),
            is_memory_ls=True,
            init_options={"trusted": True},
            note=f"command overridden by BENCH_MEMORY_LS_CMD: {override}",
        )
    exe = VENV_BIN / "memory-ls"
    missing = None
    if not exe.exists():
        missing = f"{exe} not found (pip install -e . first)"
    else:
        server_modules = [
            p for p in (REPO / "memory_ls" / "server").glob("*.py") if p.name != "__init__.py"
        ]
        probe = subprocess.run(
            [python_for_pygls(), "-c", "import memory_ls.cli"],
            capture_output=True,
            text=True,
            cwd=REPO,
            check=False,
        )
        if probe.returncode != 0:
            last = (probe.stderr.strip().splitlines() or ["import failed"])[-1]
            missing = f"memory-ls CLI not importable yet: {last}"
        elif not server_modules:
            missing = "memory_ls/server/ has no server module yet"
    return ServerSpec(
        name="memory-ls",
        argv=[str(exe), "serve"],
        is_memory_ls=True,
        init_options={"trusted": True},
        missing=missing,
    )


def rumdl() -> ServerSpec:
    exe = PEERS / "venv" / "bin" / "rumdl"
    found = str(exe) if exe.exists() else shutil.which("rumdl")
    return ServerSpec(
        name="rumdl",
        argv=[found or str(exe), "server", "--no-config"],
        missing=None if found else "rumdl not installed (run bench/setup.sh)",
        note="Rust markdown linter (~50 rules); push diagnostics (it also offers pull)",
    )


def vscode_md() -> ServerSpec:
    node_modules = PEERS / "node" / "node_modules"
    server_main = (
        node_modules / "vscode-markdown-languageserver" / "dist" / "node" / "workerMain.js"
    )
    node = shutil.which("node")
    missing = None
    if node is None:
        missing = "node not found"
    elif not (node_modules / "vscode-markdown-languageserver" / "package.json").exists():
        missing = "vscode-markdown-languageserver not installed (run bench/setup.sh)"
    return ServerSpec(
        name="vscode-md",
        argv=[
            node or "node",
            str(BENCH / "peers" / "vscode_md_proxy.mjs"),
            "--node-modules",
            str(node_modules),
        ],
        mode="pull",
        init_options={"markdownFileExtensions": ["md"]},
        settings=VSCODE_MD_SETTINGS,
        rss_exclude_root=True,
        cold_start_argv=[node or "node", str(server_main), "--stdio"],
        missing=missing,
        note="pull diagnostics; markdown/parse answered by a Node proxy running markdown-it",
    )


def pygls_min(with_commands: bool = False) -> ServerSpec:
    argv = [python_for_pygls(), str(BENCH / "peers" / "minimal_pygls.py")]
    if with_commands:
        argv.append("--with-commands")
    return ServerSpec(
        name="pygls-min",
        argv=argv,
        note="minimal pygls 2 server: whole-file recheck per edit, duplicate warnings",
    )


def all_servers() -> list[ServerSpec]:
    return [memory_ls(), rumdl(), vscode_md(), pygls_min()]
