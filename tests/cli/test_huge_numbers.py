"""Numbers no float holds (``1e999``, an integer of 400 or 5000 digits) in every file and
argument the CLI reads: the usual problem or usage error, never a traceback.

The MCP and language-server entry points are in tests/mcp/test_bad_requests.py and
tests/e2e/test_bad_requests.py; the pure rules in tests/unit/test_config.py.
"""

from __future__ import annotations

import json

import pytest

from memory_ls.core.config import DEFAULT_MAX_INJECT_BYTES, MAX_INJECT_BYTES
from tests.conftest import Workspace

HUGE = ["1e999", "-1e999", "1" + "0" * 400, "1" + "0" * 5000, "1e99999999999999999999"]


def doctor(workspace: Workspace) -> dict[str, object]:
    r = workspace.cli("doctor", "--json")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    report: dict[str, object] = json.loads(r.stdout)
    return report


@pytest.mark.parametrize("literal", HUGE, ids=lambda t: t[:12])
def test_a_huge_max_inject_bytes_number_is_reported_and_the_default_kept(
    workspace: Workspace, literal: str
) -> None:
    config = workspace.agent_dir / "bytefly.json"
    config.write_text(f'{{"memory": {{"maxInjectBytes": {literal}}}}}')
    report = doctor(workspace)
    assert report["config"] == {  # type: ignore[comparison-overlap]
        "inject": True,
        "maxInjectBytes": DEFAULT_MAX_INJECT_BYTES,
        "sources": [
            {"path": str(config), "status": "used", "why": None},
            {
                "path": str(workspace.root / ".pi" / "bytefly.json"),
                "status": "missing",
                "why": None,
            },
        ],
        "problems": [report["config"]["problems"][0]],  # type: ignore[index]
    }
    (problem,) = report["config"]["problems"]  # type: ignore[index]
    assert problem.startswith(f"ignored memory.maxInjectBytes in {config}: ")
    assert problem.endswith(" is out of range") and len(problem) < 200
    injected = workspace.cli("inject", "--json")
    assert injected.returncode == 0, injected.stderr
    assert json.loads(injected.stdout)["maxInjectBytes"] == DEFAULT_MAX_INJECT_BYTES


def test_a_numeric_string_with_a_huge_exponent_clamps(workspace: Workspace) -> None:
    (workspace.agent_dir / "bytefly.json").write_text(
        '{"memory": {"maxInjectBytes": "1e99999999999999999999"}}'
    )
    report = doctor(workspace)
    assert report["config"]["maxInjectBytes"] == MAX_INJECT_BYTES  # type: ignore[index]
    assert report["config"]["problems"] == []  # type: ignore[index]
    for verb in ("list", "inject", "path"):
        r = workspace.cli(verb)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (verb, r.stderr)


def test_a_huge_number_in_trust_json_spoils_only_its_own_entry(workspace: Workspace) -> None:
    # The project holds a trust-requiring resource, so only trust.json can trust it.
    (workspace.root / ".pi").mkdir()
    (workspace.root / ".pi" / "settings.json").write_text("{}")
    entries = f'{{"{workspace.root}": true, "/elsewhere": {"1" * 5000}, "/other": 1e999}}'
    (workspace.agent_dir / "trust.json").write_text(entries)
    r = workspace.cli("path", "--json")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    info = json.loads(r.stdout)
    assert info["trusted"] is True and "rule: trust.json" in info["trustReason"]
    problems = doctor(workspace)["trust"]["problems"]  # type: ignore[index]
    assert [p.split(":")[0] for p in problems] == [
        "ignored entry '/elsewhere' in " + str(workspace.agent_dir / "trust.json"),
        "ignored entry '/other' in " + str(workspace.agent_dir / "trust.json"),
    ]


@pytest.mark.parametrize("port", ["99999999999999999999", "65536", "1" * 5000])
@pytest.mark.parametrize("transport", ["--tcp", "--ws"])
def test_serve_refuses_a_port_out_of_range(workspace: Workspace, transport: str, port: str) -> None:
    r = workspace.cli("serve", transport, f"127.0.0.1:{port}")
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert "error: the port must be 0 to 65535, got " in r.stderr
    assert len(r.stderr) < 400
