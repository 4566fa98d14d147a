"""``core/json_text.dumps``: the standard encoder's ``indent=2`` text, byte for byte, and
``dumps_utf8``: that text as the CLI prints it (UTF-8, lone surrogates as U+FFFD).

Every ``--json`` output of the CLI goes through it (``cli._print_json``), and the
published shapes (``schemas/``) are read by clients that may compare bytes.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_ls.core.json_text import dumps, dumps_utf8
from memory_ls.core.text import without_lone_surrogates


def standard(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


ODD_TEXTS = [
    "",
    " ",
    "plain ascii",
    'quotes " and \' and "" at "both ends"',
    "back\\slash \\\\ two, \\n not a newline, \\u0000 not a NUL",
    "\\",
    '"',
    "controls \x00 \x01 \x08 \t \n \x0b \x0c \r \x1b \x1f \x7f \x80 \x9f end",
    "line\u2028separator\u2029paragraph",
    "zero\u200bwidth \ufeff bom \u202e bidi",
    "emoji 😀 🧠 👩‍💻 flags 🇫🇷",
    "CJK 日本語 Hebrew שלום Arabic مرحبا",
    "lone surrogates \ud800 \udfff \udce9",
    "a noncharacter \uffff and the last code point \U0010ffff",
    "- a markdown bullet, **bold** and `code`",
    "comma, colon: and brackets [ ] { } inside",
]


@pytest.mark.parametrize(
    "value",
    [
        # The shapes the CLI prints: a MemoryResult, an InjectResult, a PathInfo.
        {
            "action": "list",
            "scope": "project",
            "project": ODD_TEXTS,
            "global": [],
            "changed": False,
        },
        {"action": "list", "scope": "global", "project": [], "global": [], "changed": False},
        {
            "body": '[MEMORY]\nproject:\n- "q" \\ 😀',
            "bytes": 26,
            "maxInjectBytes": 8192,
            "included": 1,
            "omitted": [{"scope": "global", "text": t} for t in ODD_TEXTS],
            "inject": True,
        },
        {"body": None, "bytes": 0, "maxInjectBytes": 8192, "included": 0, "omitted": []},
        {"project": "/tmp/caf\udce9/.pi/memory.md", "trusted": True, "trustReason": "a\tb"},
        # Scalars, nesting, empty containers at every depth, tuples as lists.
        [],
        {},
        [[]],
        [{}],
        {"a": {}, "b": [], "c": [[], {}], "d": {"e": [{"f": []}]}},
        ("a", 1, (2.5, None)),
        [None, True, False, 0, -1, 10**30, 1.0, -0.0, 1e-300, 1e300, 0.1],
        [math.nan, math.inf, -math.inf],
        "a string alone",
        *ODD_TEXTS,
        ["mixed", 1, "list", None, ["of", "strings"], {"k": "v"}],
        {text: text for text in ODD_TEXTS},  # odd keys
    ],
)
def test_the_same_text_as_the_standard_encoder(value: object) -> None:
    assert dumps(value) == standard(value)
    assert dumps_utf8(value) == utf8(value)


def utf8(value: object) -> bytes:
    """What the CLI printed: the standard text, each lone surrogate as U+FFFD, as UTF-8."""
    return without_lone_surrogates(standard(value)).encode()


class Tag(str):
    pass


class Count(int):
    def __repr__(self) -> str:
        return "Count(...)"  # the standard encoder uses int.__repr__, not this


def test_subclasses_are_written_as_their_base_type() -> None:
    value = {Tag("key"): [Tag('a "b"'), Count(3), True], "n": Count(-7)}
    assert dumps(value) == standard(value)
    assert dumps_utf8(value) == utf8(value)


@pytest.mark.parametrize(
    "value",
    [
        {1: "an int key"},
        {None: "a null key", "b": 1},
        {True: [], 2.5: {}},
        {"nested": {3: "deep"}},
    ],
)
def test_keys_that_are_not_strings_are_written_as_the_standard_encoder_writes_them(
    value: object,
) -> None:
    assert dumps(value) == standard(value)
    assert dumps_utf8(value) == utf8(value)


@pytest.mark.parametrize("value", [{"a": object()}, [1, {2, 3}], b"bytes", {(1, 2): "tuple key"}])
def test_what_the_standard_encoder_refuses_is_refused_with_its_error(value: object) -> None:
    with pytest.raises(TypeError) as standard_error:
        standard(value)
    for encoder in (dumps, dumps_utf8):
        with pytest.raises(TypeError) as error:
            encoder(value)
        assert str(error.value) == str(standard_error.value)


def test_a_cycle_is_refused_as_the_standard_encoder_refuses_it() -> None:
    value: list[object] = ["a"]
    value.append(value)
    with pytest.raises(ValueError, match="Circular reference detected"):
        dumps(value)
    with pytest.raises(ValueError, match="Circular reference detected"):
        dumps_utf8(value)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=6)
        | st.lists(st.text(), max_size=6)
        | st.dictionaries(st.text(), children, max_size=6)
    ),
    max_leaves=40,
)


@given(json_values)
def test_any_json_value_is_written_as_the_standard_encoder_writes_it(value: object) -> None:
    assert dumps(value) == standard(value)
    assert dumps_utf8(value) == utf8(value)


def test_a_long_list_of_notes_as_utf8() -> None:
    notes = [f'note {i} 😀 "{i}" \\ \u2028' for i in range(3000)]
    value = {"action": "list", "project": notes, "global": [], "changed": False}
    assert dumps_utf8(value) == utf8(value)
    notes[1500] = "a lone \udce9 surrogate"
    assert dumps_utf8(value) == utf8(value)
    assert "\ufffd" in dumps_utf8(value).decode()
