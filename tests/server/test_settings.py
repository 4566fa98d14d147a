"""The server's settings (SPEC §7 Settings, ``server/settings.py``), in process.

``parse_settings`` reads every key, camelCase on the wire; an invalid value is
reported and replaced by its default, a null keeps the layer below. The server
merges ``workspace/configuration`` over ``initializationOptions`` and reports each
problem once, however often the client sends it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import FrozenInstanceError
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from lsprotocol import types as lsp

from memory_ls.core.checks import CODES
from memory_ls.core.similar import DEFAULT_THRESHOLD
from memory_ls.server.settings import (
    CLIENT_KEYS,
    MAX_PROBLEMS,
    SECTION,
    Settings,
    parse_settings,
    shown_value,
)
from memory_ls.server.settings_sync import did_change_configuration

from .conftest import InProcess

EVERY_KEY: dict[str, Any] = {
    "agentDir": "/somewhere/agent",
    "trusted": False,
    "readOnly": True,
    "severity": {"duplicate": "error", "similar": "off"},
    "similarThreshold": 70.5,
}
"""A valid value for every setting, as a client sends it."""

LEVELS = ("error", "warning", "information", "hint", "off")


def invalid(key: str, value: object) -> str:
    """The start of the problem reported for an invalid value (pydantic gives the reason)."""
    return f"Invalid value {value!r} for memoryLs.{key} ("


# -- every key -------------------------------------------------------------------------


def test_nothing_gives_the_defaults() -> None:
    settings, problems = parse_settings(None)
    assert problems == []
    assert settings == Settings()
    assert (settings.agent_dir, settings.trusted, settings.read_only) == (None, None, False)
    assert (settings.severity, settings.similar_threshold) == ({}, DEFAULT_THRESHOLD)


def test_every_key_is_read_in_camel_case() -> None:
    settings, problems = parse_settings(EVERY_KEY)
    assert problems == []
    assert settings.agent_dir == "/somewhere/agent"
    assert settings.trusted is False
    assert settings.read_only is True
    assert settings.severity == {"duplicate": "error", "similar": "off"}
    assert settings.similar_threshold == 70.5


def test_the_wire_names_are_camel_case_and_cover_every_field() -> None:
    settings, _ = parse_settings(EVERY_KEY)
    assert settings.model_dump(by_alias=True) == EVERY_KEY


def test_python_names_are_read_too() -> None:
    settings, problems = parse_settings({"read_only": True, "similar_threshold": 60})
    assert problems == []
    assert settings.read_only is True and settings.similar_threshold == 60


def test_the_section_may_wrap_the_settings() -> None:
    """``initializationOptions`` may hold the settings as they are or under ``memoryLs``."""
    assert parse_settings({SECTION: EVERY_KEY}) == parse_settings(EVERY_KEY)


def test_over_a_base_each_given_key_wins_and_the_others_stay() -> None:
    base, _ = parse_settings(EVERY_KEY)
    settings, problems = parse_settings({"readOnly": False, "similarThreshold": 90}, base)
    assert problems == []
    assert settings.read_only is False and settings.similar_threshold == 90
    assert (settings.agent_dir, settings.trusted) == (base.agent_dir, base.trusted)
    assert settings.severity == base.severity


def test_settings_are_frozen() -> None:
    settings, _ = parse_settings(EVERY_KEY)
    with pytest.raises(FrozenInstanceError):
        settings.read_only = False  # type: ignore[misc]


# -- null values -------------------------------------------------------------------------


def test_null_values_keep_the_layer_below() -> None:
    base, _ = parse_settings(EVERY_KEY)
    nulls = dict.fromkeys(EVERY_KEY)
    settings, problems = parse_settings(nulls, base)
    assert problems == []
    assert settings == base


def test_null_values_over_nothing_are_the_defaults() -> None:
    settings, problems = parse_settings(dict.fromkeys(EVERY_KEY))
    assert (settings, problems) == (Settings(), [])


def test_an_empty_agent_dir_is_not_set() -> None:
    """A client's empty default (VS Code's ``""``) leaves the agent dir to the layer below."""
    base, _ = parse_settings({"agentDir": "/from/init"})
    settings, problems = parse_settings({"agentDir": ""}, base)
    assert problems == []
    assert settings.agent_dir == "/from/init"


def test_a_null_severity_level_keeps_the_level_below() -> None:
    base, _ = parse_settings({"severity": {"duplicate": "error"}})
    settings, problems = parse_settings({"severity": {"duplicate": None, "similar": "off"}}, base)
    assert problems == []
    assert settings.severity == {"duplicate": "error", "similar": "off"}


# -- invalid values: reported, replaced by the default --------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "default"),
    [
        ("agentDir", 5, None),
        ("agentDir", ["/a"], None),
        ("trusted", "yes", None),
        ("trusted", 1, None),
        ("readOnly", "yes", False),
        ("readOnly", 0, False),
        ("similarThreshold", 500, DEFAULT_THRESHOLD),
        ("similarThreshold", -1, DEFAULT_THRESHOLD),
        ("similarThreshold", "high", DEFAULT_THRESHOLD),
    ],
)
def test_an_invalid_value_is_reported_and_replaced_by_its_default(
    key: str, value: object, default: object
) -> None:
    base, _ = parse_settings(EVERY_KEY)
    for below in (None, base):  # the default, not the layer below: the value was meant to change
        settings, problems = parse_settings({key: value}, below)
        assert len(problems) == 1, problems
        assert problems[0].startswith(invalid(key, value)), problems
        assert problems[0].endswith("); using the default.")
        assert settings.model_dump(by_alias=True)[key] == default


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_threshold_that_is_not_finite_is_refused_as_such(value: float) -> None:
    # NaN was refused as "less than or equal to 100": true of no number, and no help.
    _, problems = parse_settings({"similarThreshold": value})
    assert len(problems) == 1 and "(Input should be a finite number)" in problems[0], problems


def test_an_invalid_value_leaves_the_valid_ones_alone() -> None:
    settings, problems = parse_settings(
        {"readOnly": "yes", "trusted": False, "similarThreshold": 101, "agentDir": "/a"}
    )
    assert [p.split(" (")[0] for p in problems] == [
        "Invalid value 'yes' for memoryLs.readOnly",
        "Invalid value 101 for memoryLs.similarThreshold",
    ]
    assert (settings.trusted, settings.agent_dir) == (False, "/a")
    assert (settings.read_only, settings.similar_threshold) == (False, DEFAULT_THRESHOLD)


@pytest.mark.parametrize("level", LEVELS)
def test_every_code_takes_every_level(level: str) -> None:
    every = dict.fromkeys(CODES, level)
    settings, problems = parse_settings({"severity": every})
    assert problems == []
    assert settings.severity == every


def test_severity_merges_per_code_over_the_layer_below() -> None:
    base, _ = parse_settings({"severity": {"duplicate": "error", "too-long": "hint"}})
    settings, problems = parse_settings({"severity": {"too-long": "off", "similar": "hint"}}, base)
    assert problems == []
    assert settings.severity == {"duplicate": "error", "too-long": "off", "similar": "hint"}


def test_an_invalid_level_is_reported_and_its_code_goes_back_to_the_default() -> None:
    base, _ = parse_settings({"severity": {"duplicate": "error", "similar": "off"}})
    settings, problems = parse_settings({"severity": {"duplicate": "loud"}}, base)
    assert problems == [
        "Invalid severity 'loud' for duplicate (one of error, warning, information, hint, off); "
        "using the default."
    ]
    assert settings.severity == {"similar": "off"}


def test_an_unknown_code_is_reported_and_ignored() -> None:
    settings, problems = parse_settings({"severity": {"bogus": "hint", "duplicate": "hint"}})
    assert problems == ["Unknown diagnostic code 'bogus' in memoryLs.severity; ignored."]
    assert settings.severity == {"duplicate": "hint"}


@pytest.mark.parametrize("value", ["error", ["duplicate"], 3])
def test_a_severity_that_is_not_an_object_is_reported_and_ignored(value: object) -> None:
    base, _ = parse_settings({"severity": {"duplicate": "error"}})
    settings, problems = parse_settings({"severity": value}, base)
    assert problems == ["memoryLs.severity must be an object of code: level; ignored."]
    assert settings.severity == {"duplicate": "error"}


def test_an_unknown_key_is_reported_and_ignored() -> None:
    settings, problems = parse_settings({"readonly": True, "readOnly": True})
    assert problems == ["Unknown setting memoryLs.readonly; ignored."]
    assert settings.read_only is True


def test_the_vs_code_clients_own_keys_are_quiet() -> None:
    client_only = {
        "serverCommand": ["memory-ls", "serve"],
        "pythonPath": "",
        "statusBar": True,
        "trace": {"server": "off"},
    }
    assert set(client_only) == CLIENT_KEYS
    assert parse_settings(client_only) == (Settings(), [])


@pytest.mark.parametrize(
    ("raw", "kind"),
    [([1], "an array"), ("readOnly", "a string"), (3, "a number"), (True, "a boolean")],
)
@pytest.mark.parametrize("wrapped", [False, True])
def test_settings_that_are_not_an_object_are_reported_and_ignored(
    raw: object, kind: str, wrapped: bool
) -> None:
    """Bare, or as the ``memoryLs`` section of a wrapper (which was once ignored silently)."""
    base, _ = parse_settings(EVERY_KEY)
    settings, problems = parse_settings({SECTION: raw} if wrapped else raw, base)
    assert problems == [f"memoryLs settings must be an object, not {kind}; ignored."]
    assert settings == base


def test_settings_beside_the_section_are_reported_and_ignored() -> None:
    settings, problems = parse_settings(
        {SECTION: {"similarThreshold": 50}, "readOnly": True, "statusBar": True}
    )
    assert (settings.similar_threshold, settings.read_only) == (50, False)
    assert problems == ["Setting readOnly beside the memoryLs object; ignored."]


@pytest.mark.parametrize("value", [True, False])
def test_a_boolean_threshold_is_refused_as_the_schema_refuses_it(value: bool) -> None:
    """pydantic's lax mode read ``true`` as 1: a threshold that makes every pair similar."""
    settings, problems = parse_settings({"similarThreshold": value}, Settings(similar_threshold=70))
    assert settings.similar_threshold == DEFAULT_THRESHOLD
    assert problems == [
        f"Invalid value {value!r} for memoryLs.similarThreshold (Input should be a valid number); "
        "using the default."
    ]


@pytest.mark.parametrize(
    "raw", [{"readOnly": True, "read_only": False}, {"read_only": False, "readOnly": True}]
)
def test_both_spellings_the_camel_case_one_wins_as_in_the_model(raw: dict[str, bool]) -> None:
    """It was the last one given (so the order of a client's keys decided)."""
    settings, problems = parse_settings(raw)
    assert settings.read_only is True
    assert problems == ["memoryLs.read_only is also given as readOnly; read_only ignored."]


def test_a_null_section_is_no_section() -> None:
    assert parse_settings({SECTION: None, "readOnly": True})[0].read_only is True


def test_an_agent_dir_with_a_nul_is_refused_as_the_model_refuses_it() -> None:
    """The OS refuses every path with a NUL: taken, it made every open store fail."""
    settings, problems = parse_settings({"agentDir": "/a\x00b"}, Settings(agent_dir="/ok"))
    assert settings.agent_dir is None
    assert problems == [
        "Invalid value '/a\\x00b' for memoryLs.agentDir (a path cannot hold a NUL character); "
        "using the default."
    ]


def test_hostile_values_make_short_messages_and_few_of_them() -> None:
    """A megabyte of text, a list nested hundreds deep, a huge key or 100,000 unknown
    codes: each told briefly, and at most MAX_PROBLEMS lines (one more counts the rest)."""
    deep: object = []
    for _ in range(500):
        deep = [deep]
    raw = {
        "similarThreshold": "x" * 1_000_000,
        "readOnly": deep,
        "k" * 100_000: 1,
        "severity": {f"code{i}": "error" for i in range(100_000)} | {"duplicate": ["x"] * 10**5},
    }
    settings, problems = parse_settings(raw)
    assert settings == Settings()
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1] == f"{100_000 + 4 - MAX_PROBLEMS} more problems in memoryLs; ignored."
    assert all(len(p) < 300 for p in problems), max(problems, key=len)[:400]
    assert problems[0].startswith("Invalid value 'xxx") and "similarThreshold" in problems[0]
    assert problems[1].startswith("Invalid value [[[[") and "readOnly" in problems[1]
    assert problems[2].startswith("Unknown setting memoryLs.kkkk")


# -- the server: layers, and each problem reported once ------------------------------------


def settings_logs(server: InProcess) -> list[str]:
    return [m for m in server.client.logs() if m.startswith("memory-ls settings: ")]


async def test_configuration_is_read_over_the_initialization_options(server: InProcess) -> None:
    await server.initialize(
        init_options={"trusted": False, "severity": {"duplicate": "error"}},
        configuration={"severity": {"control-characters": "hint"}, "readOnly": True},
    )
    assert len(server.client.requests(lsp.WORKSPACE_CONFIGURATION)) == 1
    settings = server.ls.projects.settings
    assert settings.trusted is False
    assert settings.read_only is True
    assert settings.severity == {"duplicate": "error", "control-characters": "hint"}
    runtime = server.ls.projects.default_runtime()
    assert runtime.read_only is True
    assert settings_logs(server) == []


async def test_a_relative_agent_dir_is_taken_from_the_first_folder_not_the_cwd(
    server: InProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The editor picks the server's current directory (VS Code: wherever it was started),
    # so "shared-agent" must not depend on it. "~/x" and absolute paths are left alone.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    await server.initialize(configuration={"agentDir": "shared-agent"})
    root = server.workspace.root
    assert server.ls.projects.default_runtime().agent_dir == root / "shared-agent"
    for chosen in ("/abs/agent", "~/agent"):
        server.client.configuration = {"agentDir": chosen}
        await did_change_configuration(server.ls, lsp.DidChangeConfigurationParams(settings=None))
        agent_dir = server.ls.projects.default_runtime().agent_dir
        assert agent_dir.is_absolute() and agent_dir.name == "agent", agent_dir
        assert root not in agent_dir.parents and elsewhere not in agent_dir.parents, agent_dir


async def test_remembering_reported_problems_is_bounded(server: InProcess) -> None:
    # A client that pushes a new invalid value each time must not grow the server's memory
    # for as long as it runs; a problem that keeps coming is still reported once.
    from memory_ls.server.settings_sync import REPORTED_KEPT

    await server.initialize()
    kept = {"readOnly": "kept"}
    for i in range(3 * REPORTED_KEPT):
        server.client.configuration = {**kept, "similarThreshold": f"x{i}"}
        await did_change_configuration(server.ls, lsp.DidChangeConfigurationParams(settings=None))
    assert len(server.ls.reported) == REPORTED_KEPT
    logs = settings_logs(server)
    assert len([m for m in logs if "'kept'" in m]) == 1, "a problem that keeps coming"
    assert len([m for m in logs if "similarThreshold" in m]) == 3 * REPORTED_KEPT


async def test_null_configuration_keeps_the_initialization_options(server: InProcess) -> None:
    await server.initialize(
        init_options={"trusted": False, "similarThreshold": 60},
        configuration=dict.fromkeys(EVERY_KEY),
    )
    settings = server.ls.projects.settings
    assert (settings.trusted, settings.similar_threshold) == (False, 60)
    assert settings_logs(server) == []


async def test_an_invalid_value_is_reported_once_however_often_it_comes(
    server: InProcess,
) -> None:
    bad = {"readOnly": "yes", "severity": {"duplicate": "loud"}}
    await server.initialize(init_options=bad, configuration=bad)
    for _ in range(3):  # the client re-sends the same settings
        await did_change_configuration(server.ls, lsp.DidChangeConfigurationParams(settings=None))
    assert len(server.client.requests(lsp.WORKSPACE_CONFIGURATION)) == 4
    logs = settings_logs(server)
    assert len(logs) == 2, logs
    assert any("memoryLs.readOnly" in m for m in logs)
    assert any("Invalid severity 'loud' for duplicate" in m for m in logs)
    assert server.ls.projects.settings.read_only is False  # replaced by the default
    assert all(
        p["type"] == lsp.MessageType.Warning
        for p in server.client.notifications(lsp.WINDOW_LOG_MESSAGE)
        if p["message"] in logs
    )


async def test_a_new_problem_is_reported_after_an_old_one(server: InProcess) -> None:
    await server.initialize(configuration={"readOnly": "yes"})
    server.client.configuration = {"readOnly": "yes", "similarThreshold": 500}
    await did_change_configuration(server.ls, lsp.DidChangeConfigurationParams(settings=None))
    logs = settings_logs(server)
    assert [m.split(" (")[0] for m in logs] == [
        "memory-ls settings: Invalid value 'yes' for memoryLs.readOnly",
        "memory-ls settings: Invalid value 500 for memoryLs.similarThreshold",
    ]


async def test_a_client_without_configuration_pushes_its_settings(server: InProcess) -> None:
    await server.initialize(capabilities=lsp.ClientCapabilities(), init_options={"trusted": True})
    assert server.client.requests(lsp.WORKSPACE_CONFIGURATION) == []
    await did_change_configuration(
        server.ls, lsp.DidChangeConfigurationParams(settings={SECTION: {"readOnly": True}})
    )
    settings = server.ls.projects.settings
    assert (settings.read_only, settings.trusted) == (True, True)
    await did_change_configuration(
        server.ls, lsp.DidChangeConfigurationParams(settings={"otherTool": {"readOnly": False}})
    )
    assert server.ls.projects.settings.read_only is True  # not ours: ignored


async def test_a_settings_change_rebuilds_the_runtimes(server: InProcess) -> None:
    await server.initialize(configuration={"readOnly": False})
    before = server.ls.projects.default_runtime()
    assert before.read_only is False
    server.client.configuration = {"readOnly": True}
    await did_change_configuration(server.ls, lsp.DidChangeConfigurationParams(settings=None))
    after = server.ls.projects.default_runtime()
    assert after is not before and after.read_only is True


# -- the fast path equals the model ------------------------------------------------------

EDGES: list[object] = [
    *(True, False, 0, 1, 100, 101, -1, 10**400, 2**63, -(2**63)),
    *(0.0, -0.0, 100.0, 100.0000001, 99.99999999, -1e-300, 1e-300, 85.5),
    *(float("inf"), float("-inf"), float("nan")),
    *("70.5", " 70 ", "1e2", "true", "yes", "", "0", "nan", "inf", "/a", "\u00e9"),
    *("\x00", "/a\x00b", "/a\u0100\x00"),
    *([], ["/a"], {}, {"a": 1}),
]
"""Values at every border the fast path draws (type, range, finiteness, conversion)."""

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(EDGES),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=5,
)

KEYS = ["agentDir", "trusted", "readOnly", "similarThreshold", "read_only", "agent_dir"]


def model_verdict(name: str, value: object) -> tuple[object, str | None]:
    """What the pydantic model alone makes of one value: the rule the fast path must keep."""
    from pydantic import ValidationError

    from memory_ls.server.settings_model import SettingsModel

    try:
        return getattr(SettingsModel.model_validate({name: value}), name), None
    except ValidationError as exc:
        return None, str(exc.errors()[0].get("msg", "invalid"))


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("value", EDGES, ids=repr)
def test_every_border_value_is_judged_as_the_pydantic_model_judges_it(
    key: str, value: object
) -> None:
    assert_judged_as_the_model(key, value)


@examples(max_examples=300, deadline=None)
@given(key=st.sampled_from(KEYS), value=JSON_VALUES)
def test_every_value_is_judged_as_the_pydantic_model_judges_it(key: str, value: object) -> None:
    assert_judged_as_the_model(key, value)


def assert_judged_as_the_model(key: str, value: object) -> None:
    """``parse_settings`` keeps, converts or refuses ``value`` exactly as the model does."""
    name = {
        "agentDir": "agent_dir",
        "readOnly": "read_only",
        "similarThreshold": "similar_threshold",
    }.get(key, key)
    got, problems = parse_settings({key: value})
    if value is None or (name == "agent_dir" and value == ""):
        assert (got, problems) == (Settings(), [])  # unset: the layer below stands
        return
    expected, reason = model_verdict(name, value)
    if reason is None:
        assert problems == []
        held = getattr(got, name)
        assert held == expected or (held != held and expected != expected)  # NaN is NaN
        assert type(held) is type(expected)
    else:
        assert problems == [
            f"Invalid value {shown_value(value)} for memoryLs.{key} ({reason}); using the default."
        ]
        assert getattr(got, name) == getattr(Settings(), name)


def test_the_server_and_valid_settings_do_not_import_pydantic() -> None:
    code = (
        "import sys\n"
        "from memory_ls.server.server import create_server\n"
        "from memory_ls.server.settings import parse_settings\n"
        "create_server()\n"
        f"settings, problems = parse_settings({EVERY_KEY!r})\n"
        "assert problems == [], problems\n"
        "print(sorted(m for m in sys.modules if m.startswith('pydantic')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    # An invalid value is judged by the model, which says why.
    _, problems = parse_settings({"similarThreshold": "high"})
    assert problems and "valid number" in problems[0]


# -- whole settings objects: the dataclass, the model and the published schema agree --------

SCHEMA = json.loads(
    (Path(__file__).parents[2] / "schemas" / "settings.schema.json").read_text(encoding="utf-8")
)
SPELLINGS = {
    "agent_dir": ("agentDir", "agent_dir"),
    "trusted": ("trusted",),
    "read_only": ("readOnly", "read_only"),
    "severity": ("severity",),
    "similar_threshold": ("similarThreshold", "similar_threshold"),
}
LEVEL_VALUES = st.sampled_from(LEVELS) | st.none() | JSON_VALUES
SEVERITY_VALUES = (
    st.dictionaries(st.sampled_from([*CODES, "nope", "Duplicate"]), LEVEL_VALUES, max_size=4)
    | JSON_VALUES
)
FIELD_VALUES = {
    "agent_dir": st.sampled_from(["/a", "", "rel", "/a\x00b"]) | JSON_VALUES,
    "trusted": JSON_VALUES,
    "read_only": JSON_VALUES,
    "severity": SEVERITY_VALUES,
    "similar_threshold": st.floats(-1, 101) | JSON_VALUES,
}


@st.composite
def settings_objects(draw: st.DrawFn) -> dict[str, object]:
    """A settings object as a client might send it: each field spelt one way or absent,
    valid or not, with unknown and client-only keys among them."""
    raw: dict[str, object] = {}
    for name, spellings in SPELLINGS.items():
        for key in draw(st.lists(st.sampled_from(spellings), max_size=2, unique=True)):
            raw[key] = draw(FIELD_VALUES[name])
    for key in draw(st.lists(st.sampled_from(["statusBar", "typo", "SimilarThreshold"]))):
        raw[key] = draw(JSON_VALUES)
    return raw


def is_json(value: object) -> bool:
    """Whether ``value`` is standard JSON (no NaN or infinity, which the schema cannot see)."""
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return False
    return True


@examples(max_examples=400, deadline=None)
@given(raw=settings_objects(), base=st.sampled_from([None, parse_settings(EVERY_KEY)[0]]))
def test_whole_settings_are_judged_as_the_model_and_the_schema_judge_them(
    raw: dict[str, object], base: Settings | None
) -> None:
    """Each field of a generated settings object ends as the model judges it alone (taken,
    converted, or refused with a reported problem and its default), over ``base``; and an
    object the published schema accepts is read without a problem (but for unknown keys
    and codes, which are reported, never refused). The two deliberate differences: a null
    (or an empty agent dir) keeps the layer below, and a severity is read code by code."""
    from pydantic import ValidationError

    from memory_ls.server.settings_model import SettingsModel

    below = base or Settings()
    got, problems = parse_settings(raw, base)
    told = " ".join(problems)
    for name, spellings in SPELLINGS.items():
        present = [k for k in spellings if k in raw]
        if not present:
            assert getattr(got, name) == getattr(below, name)
            continue
        key = present[0]  # the camelCase one when both are given (the model's choice)
        value = raw[key]
        for other in present[1:]:
            assert f"memoryLs.{other} is also given as {key}; {other} ignored." in problems
        if value is None or (name == "agent_dir" and value == ""):
            assert getattr(got, name) == getattr(below, name)
            assert f"memoryLs.{key} " not in told
            continue
        if name == "severity":
            assert got.severity == expected_severity(value, below.severity)
            continue
        expected, reason = model_verdict(name, value)
        if reason is None:
            held = getattr(got, name)
            assert held == expected or (held != held and expected != expected)
            assert f"memoryLs.{key} " not in told
        else:
            assert getattr(got, name) == getattr(Settings(), name)
            assert f"for memoryLs.{key} ({reason})" in told
    # The schema names the camelCase keys; a snake_case one is read as its camelCase twin.
    camel = {SPELLINGS[k][0] if k in SPELLINGS else k: v for k, v in raw.items()}
    camel.update((k, v) for k, v in raw.items() if k not in SPELLINGS)  # (it wins)
    if not is_json(camel) or not Draft202012Validator(SCHEMA).is_valid(camel):
        return
    # Valid per the schema: the model takes it whole, and the server reads it quietly.
    try:
        SettingsModel.model_validate(raw)
    except ValidationError as exc:  # pragma: no cover - the assertion says why
        raise AssertionError(f"the schema takes {raw!r}, the model refuses it: {exc}") from exc
    for problem in problems:
        assert problem.startswith(("Unknown setting", "Unknown diagnostic code")) or (
            "is also given as" in problem
        ), problem


def expected_severity(value: object, below: dict[str, str]) -> dict[str, str]:
    """The severities read from ``value`` over ``below``: code by code, each level the
    model's ``SeverityName`` takes wins, a null keeps the level below, any other level
    puts its code back to its default, an unknown code is ignored."""
    if not isinstance(value, dict):
        return below
    out = dict(below)
    for code, level in value.items():
        if code not in CODES or level is None:
            continue
        if isinstance(level, str) and level in LEVELS:
            out[code] = level
        else:
            out.pop(code, None)
    return out


async def test_an_agent_dir_with_a_nul_leaves_the_server_working(server: InProcess) -> None:
    """It used to be taken: every store opened then failed (``embedded null byte``) and
    had no diagnostics."""
    server.workspace.write("project", ["use pnpm", "never use pnpm"])
    await server.initialize(
        "emacs", init_options={"agentDir": "/a\x00b"}, configuration={"agentDir": "/c\x00d"}
    )
    uri = server.open(server.workspace.project_store)
    published = server.client.notifications(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert {d["code"] for d in published[-1]["diagnostics"]} == {"conflict"}
    assert published[-1]["uri"] == uri
    assert not [m for m in server.client.logs() if "failed" in m]
    logs = settings_logs(server)
    assert len(logs) == 2 and all("a path cannot hold a NUL character" in m for m in logs)
