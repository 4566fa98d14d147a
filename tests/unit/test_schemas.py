"""The published JSON Schemas match the types the code uses, and the real results match them.

Results are checked against the *published* files in ``schemas/`` (the ones the VS Code
client's TypeScript types are generated from), with a JSON Schema validator. Every
result shape is closed (``additionalProperties: false``), so a key the server adds or
renames without changing its model fails here instead of in an editor.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from memory_ls.schemas import SCHEMAS, render
from memory_ls.server.settings import SECTION, Settings, parse_settings
from memory_ls.server.settings_model import SettingsModel
from memory_ls.store.git import sync
from tests.conftest import Workspace

ROOT = Path(__file__).resolve().parents[2]
RESULTS = (
    "memory-result",
    "inject-result",
    "path-info",
    "reload-result",
    "doctor-report",
    "doctor-result",
    "sync-result",
    "import-result",
    "export-result",
    "inbox-result",
    "inbox-counts",
    "review-result",
    "reveal-result",
)


def published(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(
        (ROOT / "schemas" / f"{name}.schema.json").read_text(encoding="utf-8")
    )
    return schema


def validate(name: str, value: object) -> None:
    """Raise unless ``value`` matches the published schema ``name`` (as JSON on the wire)."""
    Draft202012Validator(published(name)).validate(json.loads(json.dumps(value)))


def objects(schema: object) -> list[dict[str, Any]]:
    """Every object schema (one with ``properties``) inside ``schema``."""
    found: list[dict[str, Any]] = []
    if isinstance(schema, dict):
        if "properties" in schema:
            found.append(schema)
        for value in schema.values():
            found += objects(value)
    elif isinstance(schema, list):
        for value in schema:
            found += objects(value)
    return found


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_published_schema_is_current(name: str) -> None:
    path = ROOT / "schemas" / f"{name}.schema.json"
    assert path.read_text(encoding="utf-8") == render(name), f"{path} is stale: run `make schemas`"


def test_every_shape_that_crosses_a_boundary_is_published() -> None:
    assert set(SCHEMAS) == {*RESULTS, "settings"}
    assert {p.name for p in (ROOT / "schemas").glob("*.schema.json")} == {
        f"{name}.schema.json" for name in SCHEMAS
    }


@pytest.mark.parametrize("name", RESULTS)
def test_result_shapes_are_closed(name: str) -> None:
    found = objects(published(name))
    assert found
    for schema in found:
        assert schema.get("additionalProperties") is False, schema.get("title")


def test_memory_result_schema_shape() -> None:
    schema = published("memory-result")
    assert schema["required"] == ["action", "scope", "project", "global", "changed"]
    assert schema["properties"]["scope"]["enum"] == ["project", "global"]
    assert set(schema["properties"]) >= {"entry", "to", "existing", "error"}


def test_real_results_validate(workspace: Workspace) -> None:
    workspace.write("global", "- g\n")
    rt = workspace.runtime()
    validate("memory-result", rt.run("add", {"text": "x"}))
    validate("memory-result", rt.run("add", {"text": "X."}))  # existing
    validate("memory-result", rt.run("update", {"text": "x", "to": "y"}))
    validate("memory-result", rt.run("forget", {"text": "nope"}))  # error
    validate("memory-result", rt.list())
    validate("inject-result", rt.inject())
    validate("path-info", rt.path_info())
    validate("sync-result", sync("global", rt.agent_dir, rt.paths["global"]))  # refused
    with pytest.raises(ValidationError):
        validate("memory-result", {"action": "add", "scope": "team"})


def test_review_results_validate(workspace: Workspace) -> None:
    from memory_ls.store.review import Review

    workspace.write("project", "- a\n")
    review = Review(workspace.runtime())
    proposed, _ = review.propose("add", {"text": "x"}, "cli")
    validate("memory-result", proposed)
    validate("memory-result", review.propose("update", {"text": "a", "to": "b"}, "cli")[0])
    validate("memory-result", review.propose("add", {"text": "x"}, "cli")[0])  # already proposed
    validate("inbox-result", review.listing()[0])
    validate("inbox-counts", review.counts())
    validate("review-result", review.accept([proposed["proposal"]["id"]]))
    validate("review-result", review.accept(["deadbeef"]))
    validate("review-result", review.reject(None))


def test_reload_result_after_an_on_disk_change_matches_the_schema(
    workspace: Workspace,
) -> None:
    workspace.write("project", "- a\n- b\n")
    workspace.write("global", "- g\n")
    rt = workspace.runtime()
    rt.list()
    workspace.write("project", "- b\n- c\n")
    workspace.write("global", "- g\n- changed outside\n")
    result = rt.reload_result()
    validate("reload-result", result)
    assert result["changed"] is True and result["action"] == "reload"
    assert result["project"] == ["b", "c"]
    assert result["reloaded"]["project"] == {"added": ["c"], "removed": ["a"]}
    assert result["reloaded"]["global"] == {"added": ["changed outside"], "removed": []}
    unchanged = rt.reload_result()
    validate("reload-result", unchanged)
    assert unchanged["changed"] is False
    # The shape the VS Code client once assumed is not a reload result.
    with pytest.raises(ValidationError):
        validate("reload-result", {"changed": True, "project": {"added": [], "removed": []}})


def test_doctor_report_and_result_match_their_schemas(workspace: Workspace) -> None:
    long_note = "x" * 501
    workspace.write(
        "project",
        f"- use pnpm\n- Use pnpm.\n-\n- a\u200bb\n- bell\x07\n- {long_note}\n- shared\n",
    )
    workspace.write("global", "- shared\n")
    (workspace.root / ".pi" / "bytefly.json").write_text('{"memory": {"maxInjectBytes": "x"}}')
    for trusted in (True, False):
        rt = workspace.runtime(trusted=trusted)
        report = rt.doctor_report()
        validate("doctor-report", report)
        result = rt.doctor_result()
        validate("doctor-result", result)
        assert result["text"] == rt.doctor_text()
        assert {k: v for k, v in result.items() if k != "text"} == report
    trusted_report = workspace.runtime().doctor_report()
    assert trusted_report["project"]["duplicates"] and trusted_report["crossScopeDuplicates"]
    assert trusted_report["config"]["sources"]
    with pytest.raises(ValidationError):
        validate("doctor-result", trusted_report)  # the LSP command's result carries `text`


def test_import_and_export_results_match_their_schemas(workspace: Workspace) -> None:
    rt = workspace.runtime()
    validate("import-result", rt.import_notes(["a", "A.", "x" * 501]))
    validate("import-result", workspace.runtime(trusted=False).import_notes(["b"]))
    target = workspace.root / "AGENTS.md"
    validate("export-result", rt.export_to(target, check=True))
    validate("export-result", rt.export_to(target))
    target.write_text("<!-- memory-ls:end -->\n")
    refused = rt.export_to(target)
    assert "error" in refused
    validate("export-result", refused)
    with pytest.raises(ValidationError):
        validate("import-result", {"added": [], "skipped": [], "refused": ["no reason"]})


def test_settings_schema_matches_what_the_server_reads() -> None:
    schema = published("settings")
    sample = {
        "agentDir": "/tmp/agent",
        "trusted": True,
        "readOnly": False,
        "severity": {"duplicate": "off", "similar": "hint"},
        "similarThreshold": 90,
    }
    validate("settings", sample)
    settings, problems = parse_settings({SECTION: sample})
    assert problems == []
    assert settings.model_dump(by_alias=True) == sample
    # The server's plain record and the published model hold the same keys and defaults.
    assert set(schema["properties"]) == set(Settings().model_dump(by_alias=True))
    assert SettingsModel().model_dump(by_alias=True) == Settings().model_dump(by_alias=True)
    with pytest.raises(ValidationError):
        validate("settings", {"severity": {"duplicate": "loud"}})
