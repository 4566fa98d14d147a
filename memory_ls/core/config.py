"""The effective configuration: the ``memory`` section of each ``bytefly.json`` (SPEC §5).

Pure: the store layer reads the files and hands over their text; this module
merges the layers, global first, then project, each valid key overriding the
layer below. Nothing here raises on bad input: a bad file or value is
skipped and reported in ``problems`` for the doctor.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from memory_ls.core.records import field, record
from memory_ls.core.text import compiled, display_path

TYPE_CHECKING = False  # not `typing`'s: the read verbs do without importing it (~3.5 ms)
if TYPE_CHECKING:
    # decimal is imported where a number is read or judged: `inject` without a
    # configuration file reads none (~1.5 ms of its start-up).
    from decimal import Decimal

    from memory_ls.core.models import SourceStatus

DEFAULT_MAX_INJECT_BYTES = 8192
MIN_INJECT_BYTES = 512
MAX_INJECT_BYTES = 32768

CONFIG_SECTION = "memory"


# A plain decimal number, as people write it: no hex, no underscores, no
# "NaN"/"Infinity" (float() would take all of those).
_NUMERIC = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_NUMBER_PARTS = r"([+-]?)([\d.]*)(?:[eE]([+-]?)\d+)?"


@record
class ConfigSource:
    """One configuration file and what became of it."""

    path: str
    status: SourceStatus
    why: str | None = None
    """Why the file was not used (``ignored``, ``skipped-untrusted``)."""


@record
class EffectiveConfig:
    """The configuration in force, and the files it came from.

    A dataclass, not a pydantic model: read-only CLI verbs must start fast.
    """

    inject: bool = True
    max_inject_bytes: int = DEFAULT_MAX_INJECT_BYTES
    sources: list[ConfigSource] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        """The wire form (camelCase)."""
        return {
            "inject": self.inject,
            "maxInjectBytes": self.max_inject_bytes,
            "sources": [{"path": s.path, "status": s.status, "why": s.why} for s in self.sources],
            "problems": list(self.problems),
        }


ConfigLayer = tuple[str, str | None] | ConfigSource
"""A layer for ``resolve_config``: ``(path, text or None when missing)``, or a
``ConfigSource`` already decided by the caller (an unreadable or skipped file)."""


def skipped_layer(path: str) -> ConfigSource:
    """The project layer of an untrusted project: not read at all."""
    return ConfigSource(
        path=path,
        status="skipped-untrusted",
        why="the project is untrusted, so its configuration is not read",
    )


def unreadable_layer(path: str, why: str) -> ConfigSource:
    """A layer whose file exists but could not be read (``why``: "is a directory")."""
    return ConfigSource(path=path, status="ignored", why=why)


def resolve_config(layers: Sequence[ConfigLayer]) -> EffectiveConfig:
    """Merge configuration layers, lowest first (global, then project).

    Each layer is ``(path, text)`` with ``text`` ``None`` for a missing file.
    A missing file, malformed JSON, a top level that is not an object or a
    ``memory`` section that is not an object leaves the layer out (reported
    in ``sources`` and, except for a missing file, in ``problems``).
    ``inject`` counts only as a JSON boolean; ``maxInjectBytes`` as a number
    or numeric string, rounded half up and clamped to 512..32768. A value
    that does not count keeps the layer below and is reported.
    """
    inject = True
    max_bytes = DEFAULT_MAX_INJECT_BYTES
    sources: list[ConfigSource] = []
    problems: list[str] = []
    for layer in layers:
        if isinstance(layer, ConfigSource):
            sources.append(layer)
            if layer.status == "ignored":
                problems.append(f"ignored {display_path(layer.path)}: {layer.why or 'unusable'}")
            continue
        path, text = layer
        if text is None:
            sources.append(ConfigSource(path=path, status="missing"))
            continue
        section, why = _memory_section(text)
        if section is None:
            sources.append(ConfigSource(path=path, status="ignored", why=why))
            problems.append(f"ignored {display_path(path)}: {why}")
            continue
        sources.append(ConfigSource(path=path, status="used"))
        if "inject" in section:
            value = section["inject"]
            if isinstance(value, bool):
                inject = value
            else:
                problems.append(
                    f"ignored {CONFIG_SECTION}.inject in {display_path(path)}: "
                    f"{describe_json_value(value)} is not a boolean"
                )
        if "maxInjectBytes" in section:
            value = section["maxInjectBytes"]
            number = inject_bytes_from(value)
            if number is not None:
                max_bytes = number
            else:
                why = "is out of range" if _numeric(value) else "is not a number"
                problems.append(
                    f"ignored {CONFIG_SECTION}.maxInjectBytes in {display_path(path)}: "
                    f"{describe_json_value(value)} {why}"
                )
    return EffectiveConfig(
        inject=inject, max_inject_bytes=max_bytes, sources=sources, problems=problems
    )


def exact_number(text: str) -> Decimal:
    """A JSON number (or numeric string) exactly as written, however large or small.

    ``float`` reads ``1e999`` as infinity and ``int`` refuses more than 4300
    digits; ``Decimal`` keeps both as the numbers they are. Its exponent has a
    limit too (about 10**18): past it, a number is ``±Infinity`` (a positive
    exponent) or zero (a negative one), which is where it lies for every
    comparison made here. ``text`` must be numeric (:data:`_NUMERIC`).
    """
    from decimal import Decimal, InvalidOperation

    try:
        return Decimal(text)
    except InvalidOperation:
        match = compiled(_NUMBER_PARTS).fullmatch(text)
        sign, digits, exponent_sign = match.groups() if match else ("", "0", "")
        if exponent_sign == "-" or not digits.strip("0."):
            return Decimal(f"{sign}0")
        return Decimal(f"{sign}Infinity")


def _numeric(value: object) -> bool:
    """Whether a ``maxInjectBytes`` value that gave no bytes was a number all the same."""
    from decimal import Decimal

    if isinstance(value, bool):
        return False
    return isinstance(value, int | float | Decimal) and value == value  # NaN is not one


def finite_json_float(text: str) -> float:
    """A JSON number with a fraction or exponent as a ``float``, never an infinity.

    For readers that must hand the value on as JSON (``json.dumps`` refuses an
    infinity): a number beyond the largest float becomes the largest float of
    its sign, so it stays a number (and a wrong type wherever a string is
    expected), and tiny ones become 0.0 as ``float`` makes them anyway.
    """
    import math  # imported where a number is judged: the read verbs seldom need it

    value = float(text)
    if math.isinf(value):
        return math.copysign(sys.float_info.max, value)
    return value


def without_infinities(value: object) -> object:
    """``value`` (decoded JSON) with every infinite or NaN float as ``null``.

    A client's ``1e999`` reaches Python as ``inf``; written back as it is, it
    would be ``Infinity``, which is not JSON (JavaScript's ``JSON.stringify``
    writes ``null`` for it, as this does). Unchanged values are returned as they are.
    """
    if isinstance(value, float):
        import math

        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        cleaned = {k: without_infinities(v) for k, v in value.items()}
        return value if all(cleaned[k] is value[k] for k in value) else cleaned
    if isinstance(value, list):
        items = [without_infinities(v) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def inject_bytes_from(value: object) -> int | None:
    """Turn a ``maxInjectBytes`` value into bytes, or ``None`` when it is not numeric.

    A number or a numeric string (whitespace around it ignored), rounded half
    up (1000.5 → 1001), clamped to 512..32768. Booleans, NaN and
    infinities are not numbers, and neither is a JSON number beyond the range
    of a float (``1e999``, an integer of 400 digits): a JSON reader (Pi's
    JavaScript, Python's ``float``) makes it an infinity, so it keeps the layer
    below and is reported as out of range. A numeric string is read exactly,
    so ``"1e999999999"`` is a large number and clamps to 32768.
    """
    from decimal import ROUND_FLOOR, Decimal

    if isinstance(value, bool):
        return None  # JSON true is not 1
    if isinstance(value, int):
        number = Decimal(value)
    elif isinstance(value, Decimal):
        if value.is_nan():
            return None
        number = value
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        number = Decimal(value)  # exact: 1000.5 stays 1000.5
    elif isinstance(value, str):
        text = value.strip()
        if not compiled(_NUMERIC).fullmatch(text):
            return None
        number = exact_number(text)
    else:
        return None
    limit = Decimal(sys.float_info.max)
    if not isinstance(value, str) and not limit.copy_negate() <= number <= limit:
        return None
    # Clamp before rounding: the bounds are integers, so the result is the same.
    if number <= MIN_INJECT_BYTES:
        return MIN_INJECT_BYTES
    if number >= MAX_INJECT_BYTES:
        return MAX_INJECT_BYTES
    return int((number + Decimal("0.5")).to_integral_value(rounding=ROUND_FLOOR))


def parse_json(text: str) -> tuple[object, str | None]:
    """Parse strict JSON text: ``(data, None)`` or ``(None, "malformed JSON (…)")``.

    A leading byte order mark is allowed; ``NaN`` and ``Infinity`` are not
    (they are not JSON, and Pi's parser rejects them). Every number is read
    exactly, as a ``Decimal`` (:func:`exact_number`): ``1e999`` and an integer
    of 5000 digits are numbers, not an infinity or a malformed file.
    """
    import json  # imported here: without a config or trust.json, `inject` reads no JSON

    try:
        data = json.loads(
            text.removeprefix("\ufeff"),
            parse_constant=_reject_constant,
            parse_float=exact_number,
            parse_int=exact_number,
        )
        return data, None
    except json.JSONDecodeError as exc:
        return None, f"malformed JSON ({exc.msg}: line {exc.lineno} column {exc.colno})"
    except ValueError as exc:  # a NaN/Infinity constant, an over-long integer
        return None, f"malformed JSON ({exc})"
    except RecursionError:
        return None, "malformed JSON (nested too deeply)"


def json_type_name(value: object) -> str:
    """Name a parsed JSON value's type for a message: ``"an array"``, ``"null"``."""
    from decimal import Decimal

    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float | Decimal):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def describe_json_value(value: object) -> str:
    """Show a parsed JSON value briefly for a message: ``'abc'``, ``true``, ``an object``.

    A number of 10**400 is shown by its first digits, not all 401 of them; one
    that overflowed (the language server's JSON reader makes ``1e999`` ``inf``)
    is ``Infinity``, what JavaScript (and so Pi) reads it as.
    """
    from decimal import Decimal

    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return repr(_clip(value))
    if isinstance(value, float | Decimal) and not (value == value and abs(value) != float("inf")):
        return "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, int):
        # str() of an int over 4300 digits raises; its size says enough.
        if value.bit_length() > 4000:
            return f"a number of about {int(value.bit_length() * 0.30103)} digits"
        return _clip(str(value))
    if isinstance(value, float | Decimal):
        return _clip(str(value))
    return json_type_name(value)


def _clip(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _memory_section(text: str) -> tuple[dict[str, object] | None, str | None]:
    """Return the file's ``memory`` section (``{}`` when absent), or ``None`` and why."""
    data, error = parse_json(text)
    if error is not None:
        return None, error
    if not isinstance(data, dict):
        return None, f"the top level is {json_type_name(data)}, not an object"
    section = data.get(CONFIG_SECTION, {})
    if not isinstance(section, dict):
        return None, f'the "{CONFIG_SECTION}" section is {json_type_name(section)}, not an object'
    return section, None


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")
