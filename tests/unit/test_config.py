"""Configuration (SPEC §5): the ``memory`` section of each ``bytefly.json``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from memory_ls.core.config import (
    DEFAULT_MAX_INJECT_BYTES,
    MAX_INJECT_BYTES,
    MIN_INJECT_BYTES,
    EffectiveConfig,
    describe_json_value,
    finite_json_float,
    inject_bytes_from,
    parse_json,
    resolve_config,
    skipped_layer,
    without_infinities,
)
from memory_ls.store.config import load_config
from tests.conftest import Workspace


def memory(**section: object) -> str:
    return json.dumps({"memory": section})


# -- resolve_config (pure) ---------------------------------------------------------


def test_defaults_with_no_files() -> None:
    config = resolve_config([("/g/bytefly.json", None), ("/p/.pi/bytefly.json", None)])
    assert (config.inject, config.max_inject_bytes) == (True, DEFAULT_MAX_INJECT_BYTES)
    assert [s.status for s in config.sources] == ["missing", "missing"]
    assert config.problems == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1000.5, 1001),
        (1000.4999, 1000),
        (1000, 1000),
        ("1000.5", 1001),
        ("  2048 \n", 2048),
        ("1e3", 1000),
        ("+4096", 4096),
        (".5e4", 5000),
        (511.5, 512),
        (100, MIN_INJECT_BYTES),
        (-5, MIN_INJECT_BYTES),
        ("-1000.5", MIN_INJECT_BYTES),
        (0, MIN_INJECT_BYTES),
        (32768.4, MAX_INJECT_BYTES),
        (32767.5, MAX_INJECT_BYTES),
        (10**30, MAX_INJECT_BYTES),
        ("1e999999999", MAX_INJECT_BYTES),
        ("-1e999999999", MIN_INJECT_BYTES),
    ],
)
def test_max_inject_bytes_rounds_half_up_and_clamps(value: object, expected: int) -> None:
    assert inject_bytes_from(value) == expected
    config = resolve_config([("/g/bytefly.json", memory(maxInjectBytes=value))])
    assert config.max_inject_bytes == expected
    assert config.problems == []


@pytest.mark.parametrize(
    "value",
    [True, False, None, "abc", "", "   ", "0x100", "1_000", "NaN", "Infinity", "1e", [1], {}],
)
def test_non_numeric_max_inject_bytes_is_ignored(value: object) -> None:
    assert inject_bytes_from(value) is None
    config = resolve_config([("/g/bytefly.json", memory(maxInjectBytes=value))])
    assert config.max_inject_bytes == DEFAULT_MAX_INJECT_BYTES
    assert len(config.problems) == 1
    assert config.problems[0].startswith("ignored memory.maxInjectBytes in /g/bytefly.json: ")


def test_problem_message_for_a_non_numeric_string() -> None:
    config = resolve_config([("/a/bytefly.json", memory(maxInjectBytes="abc"))])
    assert config.problems == [
        "ignored memory.maxInjectBytes in /a/bytefly.json: 'abc' is not a number"
    ]


def test_nan_and_infinity_floats_are_not_numbers() -> None:
    assert inject_bytes_from(float("nan")) is None
    assert inject_bytes_from(float("inf")) is None
    # 1e400 overflows to inf when parsed: not a number either.
    config = resolve_config([("/g/bytefly.json", '{"memory": {"maxInjectBytes": 1e400}}')])
    assert config.max_inject_bytes == DEFAULT_MAX_INJECT_BYTES
    assert config.problems


@pytest.mark.parametrize("value", [1, 0, "true", "false", None, [True]])
def test_inject_only_counts_as_a_boolean(value: object) -> None:
    config = resolve_config(
        [("/g/bytefly.json", memory(inject=False)), ("/p/bytefly.json", memory(inject=value))]
    )
    assert config.inject is False
    assert len(config.problems) == 1
    assert "ignored memory.inject in /p/bytefly.json: " in config.problems[0]
    assert config.problems[0].endswith("is not a boolean")


def test_project_overrides_global_key_by_key() -> None:
    config = resolve_config(
        [
            ("/g/bytefly.json", memory(inject=False, maxInjectBytes=1024)),
            ("/p/bytefly.json", memory(maxInjectBytes=2048)),
        ]
    )
    assert (config.inject, config.max_inject_bytes) == (False, 2048)
    assert [s.status for s in config.sources] == ["used", "used"]


def test_invalid_project_value_falls_back_to_global() -> None:
    config = resolve_config(
        [
            ("/g/bytefly.json", memory(maxInjectBytes=1024)),
            ("/p/bytefly.json", memory(maxInjectBytes="lots", inject=True)),
        ]
    )
    assert (config.inject, config.max_inject_bytes) == (True, 1024)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "malformed JSON (Expecting value: line 1 column 1)"),
        ('{"memory": ', "malformed JSON (Expecting value: line 1 column 12)"),
        ('{"memory": {"maxInjectBytes": NaN}}', "malformed JSON (NaN is not valid JSON)"),
        ("[" * 100_000, "malformed JSON (nested too deeply)"),
        ("[]", "the top level is an array, not an object"),
        ("42", "the top level is a number, not an object"),
        ('{"memory": 5}', 'the "memory" section is a number, not an object'),
        ('{"memory": null}', 'the "memory" section is null, not an object'),
    ],
)
def test_bad_file_is_ignored_and_reported(text: str, why: str) -> None:
    config = resolve_config(
        [("/g/bytefly.json", memory(maxInjectBytes=1024)), ("/p/bytefly.json", text)]
    )
    assert config.max_inject_bytes == 1024
    assert config.sources[1].status == "ignored"
    assert config.sources[1].why == why
    assert config.problems == [f"ignored /p/bytefly.json: {why}"]


def test_file_without_memory_section_is_used() -> None:
    config = resolve_config([("/g/bytefly.json", '{"other": {"maxInjectBytes": 1}}')])
    assert config.sources[0].status == "used"
    assert config.max_inject_bytes == DEFAULT_MAX_INJECT_BYTES
    assert config.problems == []


def test_bom_is_allowed() -> None:
    config = resolve_config([("/g/bytefly.json", "\ufeff" + memory(maxInjectBytes=600))])
    assert config.max_inject_bytes == 600


def test_skipped_layer_is_recorded_not_reported() -> None:
    config = resolve_config([("/g/bytefly.json", None), skipped_layer("/p/.pi/bytefly.json")])
    assert config.sources[1].status == "skipped-untrusted"
    assert config.sources[1].why
    assert config.problems == []


def test_json_uses_camel_case() -> None:
    config = EffectiveConfig(max_inject_bytes=1024)
    dumped = config.as_json()
    assert dumped["maxInjectBytes"] == 1024
    assert dumped["inject"] is True


# -- load_config (files) --------------------------------------------------------------


@pytest.fixture
def agent_dir(workspace: Workspace) -> Path:
    return workspace.agent_dir


@pytest.fixture
def project(workspace: Workspace) -> Path:
    """The workspace's project, with its ``.pi/`` folder."""
    (workspace.root / ".pi").mkdir()
    return workspace.root


def test_load_config_reads_both_layers(agent_dir: Path, project: Path) -> None:
    (agent_dir / "bytefly.json").write_text(memory(inject=False, maxInjectBytes=1000.5))
    (project / ".pi" / "bytefly.json").write_text(memory(maxInjectBytes="4096"))
    config = load_config(agent_dir, project, trusted=True)
    assert (config.inject, config.max_inject_bytes) == (False, 4096)
    assert [(s.path, s.status) for s in config.sources] == [
        (str(agent_dir / "bytefly.json"), "used"),
        (str(project / ".pi" / "bytefly.json"), "used"),
    ]


def test_load_config_skips_project_when_untrusted(agent_dir: Path, project: Path) -> None:
    (agent_dir / "bytefly.json").write_text(memory(maxInjectBytes=1000.5))
    (project / ".pi" / "bytefly.json").write_text(memory(maxInjectBytes=4096, inject=False))
    config = load_config(agent_dir, project, trusted=False)
    assert (config.inject, config.max_inject_bytes) == (True, 1001)
    assert config.sources[1].status == "skipped-untrusted"
    assert config.problems == []


def test_load_config_missing_files(agent_dir: Path, project: Path) -> None:
    config = load_config(agent_dir, project, trusted=True)
    assert config.max_inject_bytes == DEFAULT_MAX_INJECT_BYTES
    assert [s.status for s in config.sources] == ["missing", "missing"]


def test_load_config_malformed_global_is_reported(agent_dir: Path, project: Path) -> None:
    path = agent_dir / "bytefly.json"
    path.write_text("{oops")
    (project / ".pi" / "bytefly.json").write_text(memory(maxInjectBytes=700))
    config = load_config(agent_dir, project, trusted=True)
    assert config.max_inject_bytes == 700
    assert config.sources[0].status == "ignored"
    assert config.problems[0].startswith(f"ignored {path}: malformed JSON (")


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: p.write_bytes(b'{"memory": "\xff"}'), "is not valid UTF-8"),
        (lambda p: p.write_text(" " * (1024 * 1024 + 1)), "larger than the 1048576-byte limit"),
    ],
)
def test_load_config_unreadable_file_is_a_problem(
    agent_dir: Path, project: Path, make: Callable[[Path], object], why: str
) -> None:
    path = project / ".pi" / "bytefly.json"
    make(path)
    (agent_dir / "bytefly.json").write_text(memory(maxInjectBytes=900))
    config = load_config(agent_dir, project, trusted=True)
    assert config.max_inject_bytes == 900
    assert config.sources[1].status == "ignored"
    assert len(config.problems) == 1
    assert config.problems[0].startswith(f"ignored {path}: ")
    assert why in config.problems[0]


# -- numbers beyond a float: 1e999, an integer of 400 digits ----------------------------

HUGE_JSON_NUMBERS = ["1e999", "-1e999", "1" + "0" * 400, "1" + "0" * 5000, "1e99999999999999999999"]


@pytest.mark.parametrize("literal", HUGE_JSON_NUMBERS, ids=lambda t: t[:12])
def test_a_json_number_beyond_a_float_keeps_the_layer_below_and_says_so(literal: str) -> None:
    config = resolve_config(
        [
            ("/g/bytefly.json", memory(maxInjectBytes=4096)),
            (
                "/p/bytefly.json",
                f'{{"memory": {{"maxInjectBytes": {literal}, "inject": {literal}}}}}',
            ),
        ]
    )
    assert (config.max_inject_bytes, config.inject) == (4096, True)
    assert [s.status for s in config.sources] == ["used", "used"]  # not "malformed JSON"
    bytes_problem, inject_problem = sorted(config.problems, key=lambda p: "inject " in p)
    assert bytes_problem.startswith("ignored memory.maxInjectBytes in /p/bytefly.json: ")
    assert bytes_problem.endswith(" is out of range")
    assert inject_problem.endswith(" is not a boolean")
    # Shown briefly, as written where it can be: no 5000 digits, no Python "inf".
    assert all(len(p) < 120 and "inf" not in p for p in config.problems), config.problems


def test_a_huge_numeric_string_clamps_without_crashing() -> None:
    # Decimal cannot hold an exponent this large: it is still a large (or tiny) number.
    for text, expected in [
        ("1e99999999999999999999", MAX_INJECT_BYTES),
        ("-1e99999999999999999999", MIN_INJECT_BYTES),
        ("1e-99999999999999999999", MIN_INJECT_BYTES),
        ("0e99999999999999999999", MIN_INJECT_BYTES),
    ]:
        assert inject_bytes_from(text) == expected, text
        config = resolve_config([("/g/bytefly.json", memory(maxInjectBytes=text))])
        assert (config.max_inject_bytes, config.problems) == (expected, [])


def test_numbers_are_parsed_exactly() -> None:
    data, error = parse_json(f'{{"a": 1e999, "b": {"9" * 5000}, "c": 0.1}}')
    assert error is None and isinstance(data, dict)
    assert str(data["a"]) == "1E+999" and len(str(data["b"])) == 5000 and str(data["c"]) == "0.1"


def test_describe_json_value_keeps_numbers_short() -> None:
    assert describe_json_value(10**400) == "1" + "0" * 38 + "…"
    assert describe_json_value(10**5000) == "a number of about 5000 digits"
    assert describe_json_value(float("inf")) == "Infinity"
    assert describe_json_value(float("-inf")) == "-Infinity"
    assert describe_json_value(1.5) == "1.5"


def test_finite_json_float_never_gives_an_infinity() -> None:
    assert finite_json_float("1e999") == 1.7976931348623157e308
    assert finite_json_float("-1e999") == -1.7976931348623157e308
    assert finite_json_float("1e-999") == 0.0
    assert finite_json_float("2.5") == 2.5


def test_without_infinities_writes_them_as_null_and_keeps_the_rest() -> None:
    data = {"a": [1.5, float("inf")], "b": {"c": float("-inf"), "d": float("nan")}, "e": "x"}
    assert without_infinities(data) == {"a": [1.5, None], "b": {"c": None, "d": None}, "e": "x"}
    clean = {"a": [1, 2.5], "b": None}
    assert without_infinities(clean) is clean  # nothing to change: the very same object
