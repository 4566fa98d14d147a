"""Static checks of the VS Code extension's manifest and sources (no editor needed)."""

from __future__ import annotations

import json
import re
from typing import Any

from .conftest import REPO

CLIENT = REPO / "vscode-client"


def manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CLIENT / "package.json").read_text(encoding="utf-8"))
    return data


def test_commands_have_their_own_ids() -> None:
    commands = {c["command"] for c in manifest()["contributes"]["commands"]}
    assert commands == {
        "memoryLs.browse", "memoryLs.addNote", "memoryLs.forgetNote", "memoryLs.showDoctor",
        "memoryLs.showRecall", "memoryLs.openProject", "memoryLs.openGlobal", "memoryLs.reload",
        "memoryLs.clear", "memoryLs.restart", "memoryLs.syncGlobal",
        "memoryLs.importNotes", "memoryLs.exportAgents",
        "memoryLs.reviewInbox",
        "memoryLs.setupServer",
    }  # fmt: skip
    sources = "\n".join(p.read_text(encoding="utf-8") for p in (CLIENT / "src").glob("*.ts"))
    # The language client registers the server's memory.* commands; registering them again fails.
    assert not re.search(r"registerCommand\(\s*['\"]memory\.", sources)
    for command in commands:
        assert f"'{command}'" in sources, f"{command} is contributed but never registered"


def test_import_and_export_commands_are_titled_as_the_spec_names_them() -> None:
    titles = {
        c["command"]: f"{c['category']}: {c['title']}"
        for c in manifest()["contributes"]["commands"]
    }
    assert titles["memoryLs.importNotes"] == "Memory: Import notes…"
    assert titles["memoryLs.exportAgents"] == "Memory: Export to AGENTS.md…"
    # The client sends instruction files to the server, for export-stale.
    client = (CLIENT / "src" / "client.ts").read_text(encoding="utf-8")
    assert "'**/{AGENTS,CLAUDE,GEMINI}.md'" in client


def test_every_setting_is_described() -> None:
    properties = manifest()["contributes"]["configuration"]["properties"]
    for key in (
        "serverCommand",
        "pythonPath",
        "agentDir",
        "readOnly",
        "severity",
        "similarThreshold",
    ):
        assert f"memoryLs.{key}" in properties
    for name, spec in properties.items():
        assert spec.get("markdownDescription") or spec.get("description"), name
    severity = properties["memoryLs.severity"]["properties"]
    assert {"duplicate", "too-long", "similar", "not-injected"} <= set(severity)
    for spec in severity.values():
        assert spec["enum"] == ["error", "warning", "information", "hint", "off"]


def test_activation_and_trust() -> None:
    data = manifest()
    assert data["activationEvents"], "explicit activationEvents"
    assert "workspaceContains:.pi/memory.md" in data["activationEvents"]
    untrusted = data["capabilities"]["untrustedWorkspaces"]
    assert untrusted["supported"] == "limited"
    assert "memoryLs.serverCommand" in untrusted["restrictedConfigurations"]
    settings = (CLIENT / "src" / "settings.ts").read_text(encoding="utf-8")
    assert "vscode.workspace.isTrusted" in settings
    extension = (CLIENT / "src" / "extension.ts").read_text(encoding="utf-8")
    assert "onDidGrantWorkspaceTrust" in extension


def test_typescript_is_strict_5x() -> None:
    tsconfig = json.loads((CLIENT / "tsconfig.json").read_text(encoding="utf-8"))
    assert tsconfig["compilerOptions"]["strict"] is True
    assert manifest()["devDependencies"]["typescript"].lstrip("~^").startswith("5.")


def test_vsix_carries_the_server_wheel() -> None:
    """The package script bundles the wheel into dist/server/, and .vscodeignore lets it in;
    the extension looks for it there (SPEC §16: the .vsix alone is enough)."""
    scripts = manifest()["scripts"]
    assert "bundle-wheel.mjs" in scripts["package"]
    assert scripts["package"].index("bundle-wheel") < scripts["package"].index("vsce package")
    assert "!dist/server/*.whl" in (CLIENT / ".vscodeignore").read_text(encoding="utf-8").split()
    setup = (CLIENT / "src" / "serverSetup.ts").read_text(encoding="utf-8")
    assert "'dist', 'server'" in setup
    assert "onCommand:memoryLs.setupServer" in manifest()["activationEvents"]
