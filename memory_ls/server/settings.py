"""The server's settings: one typed model, camelCase on the wire (SPEC §7 Settings).

Settings come from ``initializationOptions`` and the ``memoryLs`` section of
``workspace/configuration``. Each value is checked on its own: an invalid one
is reported (once, by the caller) and replaced by its default, so a typo never
stops the server.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from memory_ls.core.checks import CODES
from memory_ls.core.config import describe_json_value
from memory_ls.core.similar import DEFAULT_THRESHOLD

SECTION = "memoryLs"
"""The ``workspace/configuration`` section (and optional key in ``initializationOptions``)."""

CLIENT_KEYS = frozenset({"serverCommand", "pythonPath", "statusBar", "trace"})
"""Keys of the ``memoryLs`` section that belong to the VS Code client, not the server."""

SeverityName = Literal["error", "warning", "information", "hint", "off"]


class Settings(BaseModel):
    """Everything a client can configure."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    agent_dir: str | None = Field(default=None, description="Pi's agent dir (global store).")
    trusted: bool | None = Field(
        default=None, strict=True, description="Explicit trust decision for the project."
    )
    read_only: bool = Field(
        default=False, strict=True, description="Refuse every change (plan modes)."
    )
    severity: dict[str, SeverityName] = Field(
        default_factory=dict, description="Severity per diagnostic code, or off."
    )
    similar_threshold: float = Field(
        default=DEFAULT_THRESHOLD, ge=0, le=100, description="Score (0-100) for `similar` hints."
    )


_FIELDS = {(info.alias or name): name for name, info in Settings.model_fields.items()}


def parse_settings(raw: object, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """Read ``raw`` over ``base``: valid keys win, invalid ones are reported and skipped."""
    values: dict[str, Any] = (base or Settings()).model_dump()
    problems: list[str] = []
    if raw is None:
        return Settings(**values), problems
    if isinstance(raw, Mapping) and isinstance(raw.get(SECTION), Mapping):
        raw = raw[SECTION]
    if not isinstance(raw, Mapping):
        problems.append(f"memoryLs settings must be an object, not {type(raw).__name__}; ignored.")
        return Settings(**values), problems
    for key, value in raw.items():
        name = _FIELDS.get(key) or (key if key in Settings.model_fields else None)
        if name is None:
            if key != SECTION and key not in CLIENT_KEYS:
                problems.append(f"Unknown setting memoryLs.{key}; ignored.")
            continue
        if value is None or (name == "agent_dir" and value == ""):
            continue  # unset (a client's null or empty default): the layer below stands
        if name == "severity":
            values["severity"] = _severities(value, values["severity"], problems)
            continue
        try:
            checked = Settings.model_validate({name: value})
        except ValidationError as exc:
            reason = exc.errors()[0].get("msg", "invalid")
            problems.append(
                f"Invalid value {_shown(value)} for memoryLs.{key} ({reason}); using the default."
            )
            values[name] = Settings.model_fields[name].get_default(call_default_factory=True)
            continue
        values[name] = getattr(checked, name)
    return Settings(**values), problems


def _shown(value: object) -> str:
    """A value for a message: a number briefly (``1e999`` arrives as ``inf``; 10**400
    has 401 digits), anything else as Python writes it."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return describe_json_value(value)
    return repr(value)


def _severities(value: object, current: dict[str, str], problems: list[str]) -> dict[str, str]:
    if not isinstance(value, Mapping):
        problems.append("memoryLs.severity must be an object of code: level; ignored.")
        return dict(current)
    out: dict[str, str] = dict(current)  # per code over the layer below
    levels = ("error", "warning", "information", "hint", "off")
    for code, level in value.items():
        if code not in CODES:
            problems.append(f"Unknown diagnostic code {code!r} in memoryLs.severity; ignored.")
        elif level is None:
            continue
        elif level not in levels:
            out.pop(str(code), None)
            problems.append(
                f"Invalid severity {_shown(level)} for {code} (one of {', '.join(levels)}); "
                "using the default."
            )
        else:
            out[str(code)] = str(level)
    return out
