"""Settings through a real server (SPEC §7 Settings): ``initializationOptions`` and
``workspace/configuration`` merged, null values, invalid values reported once, per-code
severity."""

from __future__ import annotations

import asyncio

from lsprotocol import types as lsp


async def test_settings_severity_and_threshold(start, workspace):
    workspace.write("project", ["one", "One.", "tab\there"])
    s = await start(
        "visual-studio-code",
        init_options={"severity": {"duplicate": "error", "bogus": "hint"}, "similarThreshold": 500},
        configuration={"severity": {"control-characters": "off", "duplicate": "error"}},
    )
    uri = s.open(workspace.project_store)
    ds = await s.codes(uri, "duplicate")
    assert next(d for d in ds if d.code == "duplicate").severity == lsp.DiagnosticSeverity.Error
    assert not [d for d in ds if d.code == "control-characters"]
    logs = " ".join(m.message for m in s.client.log_messages)
    assert "bogus" in logs and "similarThreshold" in logs
    # change the configuration: re-pulled on didChangeConfiguration
    s.client.set_configuration({"severity": {"duplicate": "off"}}, section="memoryLs")
    s.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    await s.wait_for(
        uri,
        lambda ds: (
            not [d for d in ds if d.code == "duplicate"]
            and bool([d for d in ds if d.code == "control-characters"])
        ),
    )
    # a trust change through settings
    s.client.set_configuration({"trusted": False}, section="memoryLs")
    s.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    await s.codes(uri, "untrusted")


async def test_null_settings_from_configuration_keep_the_layer_below(start, workspace):
    s = await start(
        "visual-studio-code",
        init_options={"trusted": False},
        configuration={
            "agentDir": None,
            "trusted": None,
            "readOnly": None,
            "severity": None,
            "similarThreshold": None,
        },
    )
    r = await s.command("memory.path")
    assert r["trusted"] is False
    logs = [m.message for m in s.client.log_messages]
    assert not any("settings" in m for m in logs), logs


async def test_read_only_from_configuration(start, workspace):
    s = await start("neovim", configuration={"readOnly": True})
    for cmd, arg in [
        ("memory.add", {"text": "x"}),
        ("memory.update", {"text": "x", "to": "y"}),
        ("memory.forget", {"text": "x"}),
        ("memory.merge", {"text": "x", "other": "z", "to": "y"}),
        ("memory.move", {"text": "x"}),
        ("memory.clear", {}),
    ]:
        r = await s.command(cmd, arg)
        assert r["error"] == "memory-ls is read-only: changes are refused.", (cmd, r)
    assert s.asked == []


async def test_invalid_setting_reported_once_and_replaced(start, workspace):
    workspace.write("project", ["a", "a"])
    s = await start(
        "visual-studio-code",
        configuration={"readOnly": "yes", "severity": {"duplicate": "loud"}},
    )
    uri = s.open(workspace.project_store)
    found = await s.codes(uri, "duplicate")
    assert next(d for d in found if d.code == "duplicate").severity == 2
    s.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    await asyncio.sleep(0.3)
    r = await s.command("memory.add", {"text": "ok"})
    assert "error" not in r
    logs = [m.message for m in s.client.log_messages if "readOnly" in m.message]
    assert len(logs) == 1, logs


async def test_severity_off_and_override(start, workspace):
    workspace.write("project", ["a", "a", "tab\there"])
    s = await start(
        "visual-studio-code",
        init_options={"severity": {"duplicate": "off", "control-characters": "error"}},
    )
    uri = s.open(workspace.project_store)
    found = await s.codes(uri, "control-characters")
    assert "duplicate" not in {d.code for d in found}
    assert next(d for d in found if d.code == "control-characters").severity == 1


async def test_severity_merges_per_code_and_client_keys_are_quiet(start, workspace):
    workspace.write("project", ["a", "a", "tab\there"])
    s = await start(
        "visual-studio-code",
        init_options={"severity": {"duplicate": "error"}},
        configuration={
            "severity": {"control-characters": "hint"},
            "serverCommand": ["memory-ls", "serve"],
            "pythonPath": "",
            "agentDir": "",
            "statusBar": True,
            "trace": {"server": "off"},
        },
    )
    uri = s.open(workspace.project_store)
    found = await s.wait_for(
        uri,
        lambda ds: any(
            d.code == "control-characters" and d.severity == lsp.DiagnosticSeverity.Hint for d in ds
        ),
    )
    assert next(d for d in found if d.code == "duplicate").severity == 1
    r = await s.command("memory.path")
    assert r["global"] == str(workspace.global_store)  # an empty agentDir is "not set"
    assert not [m.message for m in s.client.log_messages if "settings" in m.message]
