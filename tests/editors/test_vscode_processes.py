"""The VS Code extension's server setup against hostile programs and a hostile PATH, in plain
Node (``vscode-client/src/processes.ts``: what ``serverSetup.ts`` runs to probe a Python and
find ``memory-ls``). Real programs, made here; no VS Code needed, so no code-server.

Each case broke before its fix: a ``memoryLs.pythonPath`` that ignores SIGTERM (or leaves a
child holding its output) kept the extension waiting forever; ``.`` on PATH, or a folder of an
untrusted workspace, could start a repository's own ``memory-ls``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .conftest import REPO, require

CLIENT = REPO / "vscode-client"
DRIVER = Path(__file__).parent / "processes_driver.mjs"


def program(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def build_module(tmp_path: Path) -> Path:
    """``processes.ts`` bundled as an ES module, as the extension's build bundles it."""
    require(shutil.which("node"), "node is not installed")
    esbuild = CLIENT / "node_modules" / ".bin" / "esbuild"
    require(esbuild.exists(), "the extension's npm packages are not installed")
    module = tmp_path / "processes.mjs"
    if not module.exists():
        built = subprocess.run(
            [str(esbuild), "src/processes.ts", "--bundle", "--platform=node", "--format=esm",
             f"--outfile={module}", "--log-level=warning"],
            cwd=CLIENT, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert built.returncode == 0, built.stderr
    return module


def start_cases(
    tmp_path: Path, cases: dict[str, dict[str, Any]], cwd: Path | None = None
) -> subprocess.Popen[str]:
    env = {**os.environ, "MODULE": build_module(tmp_path).as_uri(), "CASES": json.dumps(cases)}
    node = shutil.which("node")
    assert node is not None
    return subprocess.Popen(
        [node, str(DRIVER)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_cases(
    tmp_path: Path, cases: dict[str, dict[str, Any]], cwd: Path | None = None
) -> dict[str, Any]:
    proc = start_cases(tmp_path, cases, cwd)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    answers: dict[str, Any] = json.loads(out)
    return answers


def test_a_hostile_python_path_is_answered_within_the_timeout(tmp_path: Path) -> None:
    stubborn = program(tmp_path / "stubborn", "trap '' TERM\nwhile :; do sleep 1; done\n")
    holder = program(tmp_path / "holder", "sleep 60 &\necho 3.12\nexit 0\n")
    chatty = program(tmp_path / "chatty", "head -c 10000000 /dev/zero | tr '\\0' x\n")
    failing = program(tmp_path / "failing", "echo 3.12\nexit 1\n")
    weird = tmp_path / "a dir $(touch PWNED) 'q\"" / "python"
    program(weird, "echo 3.12\n")
    answers = run_cases(
        tmp_path,
        {
            # Ignores SIGTERM forever: execFile's timeout never answered.
            "stubborn": {"exec": str(stubborn), "args": ["-c", "x"], "timeout": 1500},
            # Leaves a child holding stdout: execFile waited for the pipe to close.
            "holder": {"exec": str(holder), "timeout": 1500},
            "chatty": {"exec": str(chatty), "timeout": 5000},
            "failing": {"exec": str(failing), "timeout": 5000},
            "weird": {"exec": str(weird), "timeout": 5000},
            "missing": {"exec": str(tmp_path / "nothing"), "timeout": 5000},
        },
    )
    assert not answers["stubborn"]["ok"] and answers["stubborn"]["ms"] < 5000
    assert answers["holder"]["ms"] < 5000 and answers["holder"]["stdout"].startswith("3.12")
    assert answers["chatty"]["stdoutLength"] <= 64 * 1024
    assert not answers["failing"]["ok"] and not answers["missing"]["ok"]
    # No shell: the path is a path, `$(...)` and quotes run nothing.
    assert answers["weird"]["ok"] and answers["weird"]["stdout"].strip() == "3.12"
    assert not list(tmp_path.rglob("PWNED")) and not (CLIENT / "PWNED").exists()


def test_path_lookup_skips_relative_entries_and_untrusted_folders(tmp_path: Path) -> None:
    repo = tmp_path / "cloned-repo"
    program(repo / "bin" / "memory-ls", "echo pwned\n")
    program(repo / "memory-ls", "echo pwned\n")
    real = program(tmp_path / "tools" / "memory-ls", "echo real\n")
    linked = tmp_path / "link-to-repo-bin"
    linked.symlink_to(repo / "bin", target_is_directory=True)
    path = os.pathsep.join([".", "bin", str(linked), str(repo / "bin"), str(tmp_path / "tools")])
    answers = run_cases(
        tmp_path,
        {
            "untrusted": {"find": "memory-ls", "untrusted": [str(repo)], "path": path},
            "trusted": {"find": "memory-ls", "untrusted": [], "path": path},
            "relative only": {"find": "memory-ls", "untrusted": [], "path": ".:bin"},
        },
        cwd=repo,  # where "." and "bin" would find the repository's memory-ls
    )
    # The repository's own memory-ls, also through a symlink, is not used untrusted.
    assert answers["untrusted"]["found"] == str(real)
    # Trusted, an absolute PATH entry is the user's choice; "." and "bin" never count.
    assert answers["trusted"]["found"] == str(linked / "memory-ls")
    assert answers["relative only"]["found"] is None


def test_two_windows_setting_up_at_once_take_turns(tmp_path: Path) -> None:
    """Each window made the same venv: one deleted the other's half-made venv mid-pip."""
    lock = tmp_path / "storage" / "server-venv.lock"
    log = tmp_path / "log"
    case = {"hold": {"lock": str(lock), "log": str(log), "holdMs": 1500}}
    build_module(tmp_path)
    windows = [start_cases(tmp_path, case) for _ in range(2)]
    for w in windows:
        _, err = w.communicate(timeout=60)
        assert w.returncode == 0, err
    events = log.read_text().split()
    # start a, end a, start b, end b: never both inside.
    assert [e for e in events if e in ("start", "end")] == ["start", "end", "start", "end"]
    assert events[1] == events[3] and events[5] == events[7]
    assert not lock.exists()


def test_a_lock_left_by_a_killed_window_is_taken_over(tmp_path: Path) -> None:
    lock = tmp_path / "server-venv.lock"
    lock.mkdir()
    gone = subprocess.Popen(["true"])  # its pid names no process once it has exited
    gone.wait()
    (lock / "owner").write_text(str(gone.pid))
    log = tmp_path / "log"
    answers = run_cases(tmp_path, {"hold": {"lock": str(lock), "log": str(log), "holdMs": 10}})
    assert answers["hold"]["ms"] < 5000 and "end" in log.read_text()


def test_an_interrupted_install_is_no_server(tmp_path: Path) -> None:
    venv = tmp_path / "server-venv"
    program(venv / "bin" / "python", "exit 0\n")  # `python -m venv` done, pip interrupted
    program(tmp_path / "done" / "bin" / "memory-ls", "exit 0\n")
    (tmp_path / "done" / "memory-ls-installed.json").write_text(
        json.dumps({"wheel": "memory_ls-0.1.0-py3-none-any.whl", "sha256": "ab", "python": "py"})
    )
    answers = run_cases(
        tmp_path,
        {"half": {"installed": str(venv)}, "done": {"installed": str(tmp_path / "done")}},
    )
    assert answers["half"]["installed"] is None
    assert answers["done"]["installed"]["sha256"] == "ab"


def test_cancelling_a_setup_step_of_a_hostile_python_answers(tmp_path: Path) -> None:
    """`python -m venv` by a pythonPath that ignores SIGTERM: Cancel sent SIGTERM and the
    setup waited for the process forever."""
    stubborn = program(
        tmp_path / "python", "trap '' TERM\necho making\nwhile :; do sleep 1; done\n"
    )
    quick = program(tmp_path / "quick", "echo done\nexit 3\n")
    answers = run_cases(
        tmp_path,
        {
            "cancelled": {"step": str(stubborn), "args": ["-m", "venv", "x"], "abortMs": 800},
            "finished": {"step": str(quick), "abortMs": 60_000},
        },
    )
    assert answers["cancelled"]["code"] == -1 and answers["cancelled"]["ms"] < 5000
    assert answers["cancelled"]["text"].startswith("making")
    assert answers["finished"]["code"] == 3 and answers["finished"]["text"] == "done\n"
