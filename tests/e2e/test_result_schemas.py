"""Every ``memory.*`` command's real result, from a real server, matches its published schema.

The VS Code client's result types are generated from the same files (``schemas/``), so a
result that matches here is one the client reads correctly; a command whose result changed
shape without its model (as ``memory.reload`` once did) fails here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

ROOT = Path(__file__).resolve().parents[2]


def validate(name: str, value: Any) -> None:
    schema = json.loads((ROOT / "schemas" / f"{name}.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator(schema).validate(value)


async def test_every_command_result_matches_its_schema(start, workspace):
    workspace.write("project", ["use pnpm", "Use pnpm.", "shared"])
    workspace.write("global", ["shared"])
    s = await start("visual-studio-code")
    for command, arg in (
        ("memory.add", {"text": "x"}),
        ("memory.add", {"text": "X."}),
        ("memory.update", {"text": "x", "to": "y"}),
        ("memory.merge", {"text": "y", "other": "shared", "to": "y; shared"}),
        ("memory.move", {"text": "y; shared"}),
        ("memory.forget", {"text": "absent"}),
        ("memory.list", {}),
        ("memory.clear", {"scope": "global"}),
    ):
        validate("memory-result", await s.command(command, arg))
    validate("path-info", await s.command("memory.path"))
    validate("inject-result", await s.command("memory.inject"))
    validate("sync-result", await s.command("memory.sync"))  # refused: no repository
    doctor = await s.command("memory.doctor")
    validate("doctor-result", doctor)
    assert doctor["project"]["duplicates"] and doctor["text"].startswith("memory-ls doctor")

    workspace.global_store.write_text("- changed outside\n", encoding="utf-8")
    reload = await s.command("memory.reload")
    validate("reload-result", reload)
    assert reload["changed"] is True
    assert reload["reloaded"]["global"] == {"added": ["changed outside"], "removed": []}

    # memory.reveal (an addition to SPEC §7): shown, and refused with its error.
    uri = s.open(workspace.project_store)
    where = {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 3}}
    validate("reveal-result", await s.command("memory.reveal", {"uri": uri, "range": where}))
    refused = await s.command("memory.reveal", {"uri": uri})
    validate("reveal-result", refused)
    assert refused["shown"] is False and refused["error"]
