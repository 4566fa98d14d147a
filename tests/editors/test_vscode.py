"""The VS Code extension in real VS Code: code-server 4.100.3 (VS Code 1.100) driven by
playwright-core in Debian's Chromium (tests/editors/vscode_driver.mjs).

Builds the .vsix, installs it into an isolated code-server profile, opens a workspace
whose .pi/memory.md holds a duplicate and an over-long note, and checks the Problems
panel, the duplicate's quick fix (on disk after save), the recall preview, Browse notes
(both scopes, forget one after a confirm) and the status bar. Screenshots go to
tests/artifacts/ (set MEMORY_LS_UPDATE_SCREENSHOT=1 to refresh docs/vscode-screenshot.png).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Workspace

from .conftest import ARTIFACTS, REPO, TOOLS, require, require_server

HERE = Path(__file__).parent
CLIENT = REPO / "vscode-client"
DRIVER = HERE / "vscode_driver.mjs"
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))


def code_server() -> Path | None:
    for candidate in (os.environ.get("MEMORY_LS_CODE_SERVER"), str(TOOLS / "bin" / "code-server")):
        if candidate and Path(candidate).exists():
            return Path(candidate)
    found = shutil.which("code-server")
    return Path(found) if found else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@functools.cache
def build_vsix() -> Path:
    """``npm run package``: typecheck, bundle the server's wheel, vsce (once per test run)."""
    npm = shutil.which("npm")
    assert npm is not None
    proc = subprocess.run(
        [npm, "run", "package", "--silent"],
        cwd=CLIENT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, (
        f"npm run package failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    vsix = CLIENT / "dist" / "memory-ls.vsix"
    assert vsix.exists()
    return vsix


def test_client_types_are_generated_from_the_published_schemas() -> None:
    """src/generated/schemas.ts is what the generator makes of schemas/ now, and no result
    shape is written by hand beside it (a hand copy of the reload result once crashed Reload)."""
    require(shutil.which("node"), "node is not installed")
    require(
        (CLIENT / "node_modules" / "json-schema-to-typescript").exists(),
        "the extension's npm packages are not installed (run .ci/install-editors.sh)",
    )
    check = subprocess.run(
        ["node", "scripts/generate-types.mjs", "--check"],
        cwd=CLIENT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    generated = (CLIENT / "src" / "generated" / "schemas.ts").read_text(encoding="utf-8")
    titles = [
        json.loads(path.read_text(encoding="utf-8"))["title"]
        for path in sorted((REPO / "schemas").glob("*.schema.json"))
    ]
    assert titles
    for title in titles:
        assert f"export interface {title} " in generated, title
    for source in sorted((CLIENT / "src").glob("*.ts")):
        text = source.read_text(encoding="utf-8")
        for title in [*titles, "ReloadResult", "StoreChange", "PathResult"]:
            assert f"interface {title} " not in text and f"type {title} =" not in text, (
                f"{source.name} defines {title} by hand: import it from ./generated/schemas"
            )


def bump_wheel(wheel: Path, out_dir: Path, version: str) -> Path:
    """A copy of ``wheel`` that is version ``version``: what an upgraded extension ships."""
    old = wheel.name.split("-")[1]
    target = out_dir / wheel.name.replace(f"-{old}-", f"-{version}-")
    records: list[str] = []
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            name = info.filename.replace(
                f"memory_ls-{old}.dist-info/", f"memory_ls-{version}.dist-info/"
            )
            data = src.read(info)
            if name.endswith("dist-info/RECORD"):
                continue
            if name == "memory_ls/__init__.py":
                data = data.replace(
                    f'__version__ = "{old}"'.encode(), f'__version__ = "{version}"'.encode()
                )
            elif name.endswith("dist-info/METADATA"):
                data = data.replace(f"Version: {old}\n".encode(), f"Version: {version}\n".encode())
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            records.append(f"{name},sha256={digest},{len(data)}")
            dst.writestr(name, data)
        record = f"memory_ls-{version}.dist-info/RECORD"
        dst.writestr(record, "\n".join([*records, f"{record},,"]) + "\n")
    return target


def wait_http(url: str, proc: subprocess.Popen[bytes], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"code-server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status < 500:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"code-server did not answer {url} within {timeout} s")


def dotfiles_remote(workspace: Workspace, env: dict[str, str], tmp_path: Path) -> Path:
    """Make the agent dir a git clone with an upstream (a bare remote), as for SPEC §14's sync."""
    require(shutil.which("git") is not None, "git is not installed (.ci/run installs it)")
    (workspace.home / ".gitconfig").write_text(
        "[user]\n\tname = Test User\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"
    )
    remote = tmp_path / "dotfiles.git"
    for args, cwd in (
        (["init", "-q", "--bare", str(remote)], tmp_path),
        (["init", "-q"], workspace.agent_dir),
        (["add", "-A"], workspace.agent_dir),
        (["commit", "-qm", "dotfiles"], workspace.agent_dir),
        (["remote", "add", "origin", str(remote)], workspace.agent_dir),
        (["push", "-qu", "origin", "main"], workspace.agent_dir),
    ):
        subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, check=True)
    return remote


BASE_SETTINGS: dict[str, object] = {
    "workbench.startupEditor": "none",
    "workbench.welcomePage.walkthroughs.openOnInstall": False,
    "workbench.tips.enabled": False,
    "workbench.enableExperiments": False,
    "security.workspace.trust.enabled": False,
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "extensions.ignoreRecommendations": True,
    "git.enabled": False,
    "chat.disableAIFeatures": True,
    "editor.accessibilitySupport": "off",
}


def require_code_server() -> Path:
    server = code_server()
    require(server is not None, "code-server is not installed; run .ci/install-editors.sh")
    require(
        CHROMIUM.exists(), f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)"
    )
    require(
        (HERE / "node_modules" / "playwright-core").exists(),
        "playwright-core is not installed in tests/editors/ (run .ci/install-editors.sh)",
    )
    require(
        (CLIENT / "node_modules" / ".bin" / "vsce").exists(),
        "the extension's npm packages are not installed (run .ci/install-editors.sh)",
    )
    assert server is not None
    return server


def drive_code_server(
    workspace: Workspace,
    env: dict[str, str],
    tmp_path: Path,
    settings: dict[str, object],
    scenario: str,
    trust: bool = False,
    driver_extra: dict[str, str] | None = None,
) -> tuple[dict[str, Any], str, str]:
    """Install the .vsix into a fresh code-server profile, open the workspace, and run the
    driver's ``scenario``; returns its report, the driver's stderr and code-server's log.
    ``trust``: workspace trust is on (the folder opens in restricted mode)."""
    server = require_code_server()
    vsix = build_vsix()
    user_data = tmp_path / "code-user-data"
    extensions = tmp_path / "code-extensions"
    (user_data / "User").mkdir(parents=True)
    (user_data / "User" / "settings.json").write_text(json.dumps(settings, indent=2))
    # Unix sockets (Chromium's singleton, VS Code's IPC) need short paths: a short TMPDIR.
    short_tmp = Path(tempfile.mkdtemp(prefix="mls-", dir="/tmp"))
    env = dict(env, TMPDIR=str(short_tmp))
    base = [str(server), "--user-data-dir", str(user_data), "--extensions-dir", str(extensions)]
    install = subprocess.run(
        [*base, "--install-extension", str(vsix)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    assert any(p.name.startswith("memory-ls.memory-ls-") for p in extensions.iterdir()), (
        install.stdout
    )

    port = free_port()
    log = (tmp_path / "code-server.log").open("wb")
    flags = [] if trust else ["--disable-workspace-trust"]
    proc = subprocess.Popen(
        [
            *base,
            "--auth",
            "none",
            "--bind-addr",
            f"127.0.0.1:{port}",
            "--disable-telemetry",
            "--disable-update-check",
            *flags,
            "--disable-getting-started-override",
            str(workspace.root),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # setsid: the whole process group is killed below
    )
    artifacts = ARTIFACTS / "vscode"
    result_file = tmp_path / "vscode.json"
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", proc)
        driver_env = dict(
            env,
            CODE_SERVER_URL=f"http://127.0.0.1:{port}",
            WORKSPACE=str(workspace.root),
            PROJECT_STORE=str(workspace.project_store),
            GLOBAL_STORE=str(workspace.global_store),
            RESULT_FILE=str(result_file),
            ARTIFACTS_DIR=str(artifacts),
            CHROMIUM=str(CHROMIUM),
            SCENARIO=scenario,
            USER_DATA_DIR=str(user_data),
            EXTENSIONS_DIR=str(extensions),
            **(driver_extra or {}),
        )
        command = ["node", str(DRIVER)]
        if shutil.which("timeout"):
            command = ["timeout", "-k", "10", "540", *command]
        driver = subprocess.run(
            command,
            cwd=HERE,
            env=driver_env,
            capture_output=True,
            text=True,
            timeout=570,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        log.close()
        shutil.rmtree(short_tmp, ignore_errors=True)

    server_log = (tmp_path / "code-server.log").read_text(errors="replace")[-3000:]
    # The extension's output channel (the setup's pip log among it), as code-server saved it.
    output = "".join(
        path.read_text(errors="replace") for path in sorted(user_data.glob("logs/**/*Memory*.log"))
    )
    server_log = f"{server_log}\n--- Memory output channel ---\n{output[-4000:]}"
    assert result_file.exists(), (
        f"driver wrote no report\n{driver.stdout[-3000:]}\n{driver.stderr[-3000:]}\n{server_log}"
    )
    report: dict[str, Any] = json.loads(result_file.read_text(encoding="utf-8"))
    (ARTIFACTS / "vscode").mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "vscode" / f"report-{scenario}.json").write_text(
        json.dumps(report, indent=2, ensure_ascii=False)
    )
    assert "failed" not in report, (
        f"{report['failed']}\nnotifications: {report.get('notifications')}\n"
        f"screenshots: {report['screenshots']}\n"
        f"{driver.stderr[-2000:]}\n{server_log}"
    )
    return report, driver.stderr, server_log


@pytest.mark.timeout(900)
def test_vscode_extension_in_code_server(
    workspace: Workspace, editor_env: dict[str, str], tmp_path: Path
) -> None:
    require_code_server()
    memory_ls = require_server()
    settings = dict(BASE_SETTINGS, **{"memoryLs.serverCommand": [str(memory_ls), "serve"]})
    remote = dotfiles_remote(workspace, editor_env, tmp_path)
    # The driver proposes from outside the editor with this CLI (the review inbox steps).
    report, _, _ = drive_code_server(
        workspace,
        editor_env,
        tmp_path,
        settings,
        "main",
        driver_extra={"MEMORY_LS": str(memory_ls)},
    )
    artifacts = ARTIFACTS / "vscode"

    assert any("duplicate" in row and "memory" in row for row in report["problems"]), report[
        "problems"
    ]
    assert any("too-long" in row for row in report["problems"]), report["problems"]
    assert "🎉 Ship on Fridays is fine." not in report["quickFix"]["fileAfter"]
    assert "🎉 ship on fridays is fine" in workspace.text("project")
    assert "[MEMORY]" in report["recall"]
    assert "use pnpm, not npm" in report["recall"]
    browse = report["browse"]
    assert "All · 4 project, 2 global" in browse["title"], browse["title"]
    assert any("prefer ripgrep over grep" in row and "global" in row for row in browse["rows"])
    assert any("use pnpm, not npm" in row and "project" in row for row in browse["rows"])
    assert "prefer ripgrep over grep" not in workspace.text("global")
    # (the reload step below rewrites this note on disk: check the file as the forget left it)
    assert "write commit messages in the imperative" in report["forget"]["globalAfter"]
    assert "4 project, 1 global" in report["forget"]["titleAfter"]
    assert "5 project, 2 global" in report["statusBar"]
    assert "4 project, 1 global" in report["statusBarAfter"]
    # Memory: Reload after a store changed on disk reports the change (it used to throw).
    assert "nothing changed" in report["reload"]["first"], report["reload"]
    assert "reloaded both stores: global +1 −1." in report["reload"]["message"], report["reload"]
    assert "WRITE COMMIT MESSAGES IN THE IMPERATIVE" in workspace.text("global")
    # Memory: Sync global store committed the changes above and pushed them (SPEC §14).
    assert report["sync"].startswith("Memory: Synced global memory with origin/main"), report[
        "sync"
    ]
    pushed = subprocess.run(
        ["git", "--git-dir", str(remote), "log", "-1", "--format=%s", "main"],
        env=editor_env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert pushed.startswith("memory: +1 -2 on "), pushed

    # SPEC §15: Memory: Export to AGENTS.md…, export-stale on it, Memory: Import notes….
    assert "<!-- memory-ls:begin" in report["export"]["file"], report["export"]
    assert "memory-ls block" in report["export"]["message"], report["export"]
    assert any("export-stale" in row for row in report["exportStale"]), report["exportStale"]
    assert "Imported 1, skipped 0, refused 0." in report["import"]["message"], report["import"]
    assert "- imported from gemini" in workspace.text("project")
    # Browse notes' edit, move and merge, each checked on disk as the action left it.
    edited = "tests need DATABASE_URL and REDIS_URL"
    assert f"- {edited}\n" in report["edit"]["projectAfter"]
    assert "- tests need DATABASE_URL\n" not in report["edit"]["projectAfter"]
    assert "- use pnpm, not npm\n" in report["move"]["globalAfter"]
    assert "use pnpm" not in report["move"]["projectAfter"]
    merged = f"- 🎉 ship on fridays is fine; {edited}\n"
    assert merged in report["merge"]["projectAfter"]
    assert "- 🎉 ship on fridays is fine\n" not in report["merge"]["projectAfter"]
    assert f"- {edited}\n" not in report["merge"]["projectAfter"]

    # The review inbox (SPEC §12): a proposal from outside, accepted from the notification,
    # then one accepted from Memory: Review inbox; each time the count goes back to zero.
    review = report["review"]
    assert "1 to review" in review["status"], review
    assert "Accept" in review["message"] and "Review" in review["message"], review
    assert "- run make lint before pushing" in workspace.text("project")
    assert any("add: prefer small commits" in row for row in report["reviewPick"]["rows"])
    assert "- prefer small commits" in workspace.text("project")
    assert not (workspace.root / ".pi" / "memory.inbox.jsonl").exists()
    review_shot = artifacts / "vscode-review.png"
    if (
        os.environ.get("MEMORY_LS_UPDATE_SCREENSHOT") == "1"
        or not (REPO / "docs" / "vscode-review.png").exists()
    ):
        shutil.copyfile(review_shot, REPO / "docs" / "vscode-review.png")

    screenshot = artifacts / "vscode-screenshot.png"
    assert screenshot.exists()
    docs_copy = REPO / "docs" / "vscode-screenshot.png"
    if os.environ.get("MEMORY_LS_UPDATE_SCREENSHOT") == "1" or not docs_copy.exists():
        shutil.copyfile(screenshot, docs_copy)


@pytest.mark.timeout(900)
def test_vscode_extension_sets_up_its_own_server(
    workspace: Workspace, editor_env: dict[str, str], tmp_path: Path
) -> None:
    """The .vsix alone is enough (SPEC §16): no memoryLs.serverCommand and no memory-ls on
    PATH, so the extension offers to set up a server; accepted, it makes a venv in its global
    storage with python3 (Debian's, >= 3.11), installs the wheel the .vsix carries (its
    dependencies from pip's configured index), and the diagnostics appear. The folder opens
    untrusted: adding a project note is refused; granting trust restarts the server, and the
    same add reaches the disk. Before that, a first install with pip pointed at no index
    fails with a message that says what to do and opens the log; "Memory: Set up server"
    then succeeds. Last the extension is upgraded in place (its wheel replaced by
    a newer version's) and the window reloaded: it reinstalls the newer wheel by itself."""
    require_code_server()
    path = os.pathsep.join([str(TOOLS / "bin"), "/usr/bin", "/bin"])
    assert shutil.which("memory-ls", path=path) is None, "memory-ls must not be on PATH here"
    python3 = shutil.which("python3", path=path)
    require(python3, "no python3 in /usr/bin (apt-get install python3 python3-venv)")
    vsix = build_vsix()
    with zipfile.ZipFile(vsix) as archive:
        wheels = [
            n
            for n in archive.namelist()
            if re.fullmatch(r"extension/dist/server/memory_ls-[^/]+\.whl", n)
        ]
    assert len(wheels) == 1, "the .vsix carries the server's wheel"

    # pip first finds no index (the setup must fail and say so); the driver then empties
    # this file and runs "Memory: Set up server", and pip uses its configured index again.
    pip_config = tmp_path / "pip.conf"
    pip_config.write_text("[global]\nno-index = true\nfind-links =\n")
    env = {k: v for k, v in editor_env.items() if k != "PIP_FIND_LINKS"}
    env.update(PATH=path, PIP_CONFIG_FILE=str(pip_config))
    settings = dict(
        BASE_SETTINGS,
        **{
            "security.workspace.trust.enabled": True,
            "security.workspace.trust.startupPrompt": "never",
            "security.workspace.trust.banner": "never",
        },
    )
    wheel_dir = tmp_path / "upgrade"
    wheel_dir.mkdir()
    with zipfile.ZipFile(vsix) as archive:
        (wheel_dir / "bundled.whl").write_bytes(archive.read(wheels[0]))
    bundled = wheel_dir / wheels[0].rsplit("/", 1)[1]
    (wheel_dir / "bundled.whl").rename(bundled)
    newer = bump_wheel(bundled, wheel_dir, "99.0.0")
    report, _, _ = drive_code_server(
        workspace,
        env,
        tmp_path,
        settings,
        "setup",
        trust=True,
        driver_extra={"UPGRADE_WHEEL": str(newer)},
    )

    storage = tmp_path / "code-user-data" / "User" / "globalStorage" / "memory-ls.memory-ls"
    venv = storage / "server-venv"
    assert (venv / "bin" / "memory-ls").exists(), sorted(p.name for p in storage.glob("*"))
    assert "home = /usr/bin" in (venv / "pyvenv.cfg").read_text()
    # The upgraded extension's wheel is what the private venv holds now.
    installed = subprocess.run(
        [str(venv / "bin" / "memory-ls"), "--version"], capture_output=True, text=True, check=False
    )
    assert installed.stdout.strip() == "memory-ls 99.0.0", installed.stdout + installed.stderr
    output = "".join(
        path.read_text(errors="replace")
        for path in sorted((tmp_path / "code-user-data").glob("logs/**/*Memory*.log"))
    )
    assert f"has {bundled.name}: reinstalling" in output, output[-3000:]
    assert any("duplicate" in row for row in report["upgraded"]["problems"])

    failed = report["failedInstall"]
    assert "pip could not install memory-ls" in failed["message"], failed
    assert "Memory: Set up server" in failed["message"], failed
    assert "Setting up memory-ls failed" in failed["log"]
    assert any("duplicate" in row for row in report["problems"]), report["problems"]
    assert any("too-long" in row for row in report["problems"]), report["problems"]
    assert "added before trust" not in report["untrusted"]["projectAfter"]
    assert "untrusted" in report["untrusted"]["message"].lower(), report["untrusted"]
    assert "trusted" in report["trust"]["message"]
    assert "- added after trust\n" in report["trusted"]["projectAfter"]
    assert "- added after trust\n" in workspace.text("project")
