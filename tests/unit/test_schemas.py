"""The published JSON Schemas match the types the code uses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from memory_ls.core.models import MemoryResult
from memory_ls.schemas import SCHEMAS, render

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_published_schema_is_current(name: str) -> None:
    published = ROOT / "schemas" / f"{name}.schema.json"
    assert published.read_text(encoding="utf-8") == render(name), (
        f"{published} is stale: run `make schemas`"
    )


def test_memory_result_schema_shape() -> None:
    schema = json.loads(render("memory-result"))
    assert schema["required"] == ["action", "scope", "project", "global", "changed"]
    assert schema["properties"]["scope"]["enum"] == ["project", "global"]
    assert set(schema["properties"]) >= {"entry", "to", "existing", "error"}


def test_a_real_result_validates(tmp_path: Path) -> None:
    from memory_ls.store.runtime import MemoryRuntime

    (tmp_path / ".git").mkdir()
    rt = MemoryRuntime(tmp_path, agent_dir=str(tmp_path / "agent"))
    adapter = TypeAdapter(MemoryResult)
    adapter.validate_python(rt.run("add", {"text": "x"}))
    adapter.validate_python(rt.run("forget", {"text": "nope"}))
    with pytest.raises(ValidationError):
        adapter.validate_python({"action": "add", "scope": "team"})
