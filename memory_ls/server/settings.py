"""The server's settings: one typed record, camelCase on the wire (SPEC §7 Settings).

Settings come from ``initializationOptions`` and the ``memoryLs`` section of
``workspace/configuration``. Each value is checked on its own: an invalid one
is reported (once, by the caller) and replaced by its default, so a typo never
stops the server.

No pydantic here (issue 11: ``serve`` imports only what the edit path needs). A
value of the type the schema asks for (a string, a boolean, a number from 0 to
100) is taken as it is; any other value is judged by the pydantic model in
:mod:`memory_ls.server.settings_model`, imported then, exactly as before: the
same values are accepted (``"70.5"`` included), the same reasons given.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from memory_ls.core.checks import CODES
from memory_ls.core.config import describe_json_value, json_type_name
from memory_ls.core.similar import DEFAULT_THRESHOLD

SECTION = "memoryLs"
"""The ``workspace/configuration`` section (and optional key in ``initializationOptions``)."""

CLIENT_KEYS = frozenset({"serverCommand", "pythonPath", "statusBar", "trace"})
"""Keys of the ``memoryLs`` section that belong to the VS Code client, not the server."""

SeverityName = Literal["error", "warning", "information", "hint", "off"]


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a client can configure (the schema: ``SettingsModel``)."""

    agent_dir: str | None = None
    """Pi's agent dir (global store)."""
    trusted: bool | None = None
    """Explicit trust decision for the project."""
    read_only: bool = False
    """Refuse every change (plan modes)."""
    severity: dict[str, SeverityName] = field(default_factory=dict)
    """Severity per diagnostic code, or off."""
    similar_threshold: float = DEFAULT_THRESHOLD
    """Score (0-100) for `similar` hints."""

    def model_dump(self, *, by_alias: bool = False) -> dict[str, Any]:
        """The settings as a dict (camelCase keys with ``by_alias``), as pydantic's would be."""
        values = asdict(self)
        return {ALIASES[k]: v for k, v in values.items()} if by_alias else values


ALIASES = {
    "agent_dir": "agentDir",
    "trusted": "trusted",
    "read_only": "readOnly",
    "severity": "severity",
    "similar_threshold": "similarThreshold",
}
"""Field name -> its camelCase key on the wire (pydantic's ``to_camel``)."""

_FIELDS = {alias: name for name, alias in ALIASES.items()}

_DEFAULTS = asdict(Settings())


def _taken_as_is(name: str, value: object) -> bool:
    """Whether ``value`` is valid for ``name`` and the model would keep it unchanged.

    Only these values skip the model; ``tests/server/test_settings.py`` holds this
    to the model's own verdict on every kind of value.
    """
    if name == "agent_dir":
        return type(value) is str and "\x00" not in value
    if name in ("trusted", "read_only"):
        return type(value) is bool
    if name == "similar_threshold":
        # int -> float as the model converts it; a bool, a huge int or NaN goes to the model.
        if type(value) is float:
            return math.isfinite(value) and 0 <= value <= 100
        return type(value) is int and 0 <= value <= 100
    return False


def _checked(name: str, value: object) -> tuple[object, str | None]:
    """``value`` as the field holds it, or ``None`` and why the model refused it."""
    if _taken_as_is(name, value):
        return (float(value) if name == "similar_threshold" else value), None  # type: ignore[arg-type]
    from pydantic import ValidationError

    from memory_ls.server.settings_model import SettingsModel

    try:
        checked = SettingsModel.model_validate({name: value})
    except ValidationError as exc:
        return None, str(exc.errors()[0].get("msg", "invalid"))
    return getattr(checked, name), None


MAX_PROBLEMS = 20
"""At most this many problems are told of one reading; the rest are counted in one more
line (a client that sends 100,000 unknown codes must not get 100,000 log messages)."""


def parse_settings(raw: object, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """Read ``raw`` over ``base``: valid keys win, invalid ones are reported and skipped."""
    settings, problems = _parse(raw, base)
    if len(problems) > MAX_PROBLEMS:
        more = len(problems) - MAX_PROBLEMS
        problems = [*problems[:MAX_PROBLEMS], f"{more} more problems in memoryLs; ignored."]
    return settings, problems


def _parse(raw: object, base: Settings | None) -> tuple[Settings, list[str]]:
    values: dict[str, Any] = asdict(base or Settings())
    problems: list[str] = []
    if raw is None:
        return Settings(**values), problems
    if isinstance(raw, Mapping) and SECTION in raw and raw[SECTION] is not None:
        # {"memoryLs": {...}}: the section itself; what lies beside it is not read.
        problems.extend(
            f"Setting {_name(key)} beside the memoryLs object; ignored."
            for key in raw
            if key != SECTION and key not in CLIENT_KEYS
        )
        raw = raw[SECTION]
    if not isinstance(raw, Mapping):
        problems.append(f"memoryLs settings must be an object, not {json_type_name(raw)}; ignored.")
        return Settings(**values), problems
    for key, value in raw.items():
        name = _FIELDS.get(key) or (key if key in ALIASES else None)
        if name is None:
            if key != SECTION and key not in CLIENT_KEYS:
                problems.append(f"Unknown setting memoryLs.{_name(key)}; ignored.")
            continue
        if key != ALIASES[name] and ALIASES[name] in raw:
            # Both spellings: the wire's (camelCase) wins, as in the model.
            problems.append(f"memoryLs.{key} is also given as {ALIASES[name]}; {key} ignored.")
            continue
        if value is None or (name == "agent_dir" and value == ""):
            continue  # unset (a client's null or empty default): the layer below stands
        if name == "severity":
            values["severity"] = _severities(value, values["severity"], problems)
            continue
        checked, reason = _checked(name, value)
        if reason is not None:
            problems.append(
                f"Invalid value {shown_value(value)} for memoryLs.{_name(key)} ({reason}); "
                "using the default."
            )
            values[name] = _DEFAULTS[name]
            continue
        values[name] = checked
    return Settings(**values), problems


_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = 4
_SHORT.maxlevel = 3


def shown_value(value: object) -> str:
    """A value for a message: a number briefly (``1e999`` arrives as ``inf``; 10**400
    has 401 digits), anything else as Python writes it, cut short (a megabyte of text or
    a list nested a thousand deep is shown by its start)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return describe_json_value(value)
    return _SHORT.repr(value)


def _name(key: object) -> str:
    """A client's key (or code) for a message, cut short."""
    text = str(key)
    return text if len(text) <= 60 else text[:59] + "…"


def _severities(value: object, current: dict[str, str], problems: list[str]) -> dict[str, str]:
    if not isinstance(value, Mapping):
        problems.append("memoryLs.severity must be an object of code: level; ignored.")
        return dict(current)
    out: dict[str, str] = dict(current)  # per code over the layer below
    levels = ("error", "warning", "information", "hint", "off")
    for code, level in value.items():
        if code not in CODES:
            problems.append(
                f"Unknown diagnostic code {_SHORT.repr(code)} in memoryLs.severity; ignored."
            )
        elif level is None:
            continue
        elif level not in levels:
            out.pop(str(code), None)
            problems.append(
                f"Invalid severity {shown_value(level)} for {code} (one of {', '.join(levels)}); "
                "using the default."
            )
        else:
            out[str(code)] = str(level)
    return out
