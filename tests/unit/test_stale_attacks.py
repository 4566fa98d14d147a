"""The linear-time readers of ``memory_ls.core.stale`` find exactly what the regexes they
replaced found (those backtracked for minutes on one hostile line: see
``tests/cli/test_stale_attacks.py``). The old regexes are the oracle, on short text."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_ls.core import stale

OLD_CODE_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)")
OLD_MAKE_RULE = re.compile(r"^([^:#=\t][^:#=]*?)\s*(::?)(?!=)")
OLD_JUST_RECIPE = re.compile(r"^@?([A-Za-z_][A-Za-z0-9_-]*)\b([^:=]*?(?:=[^:]*)*?)?\s*:(?!=)")
OLD_PNPM_ITEM = re.compile(r"\s+-\s+(['\"]?)([^'\"#]+?)\1\s*(?:#.*)?$")

TEXT = st.lists(st.sampled_from([*"``` a/-:=#'\"\t\n@_b1", "\u3000", ":="]), max_size=30).map(
    "".join
)


@settings(max_examples=3000, deadline=None)
@given(TEXT)
def test_the_linear_readers_agree_with_the_old_regexes(text: str) -> None:
    assert stale._code_spans(text) == [(m.start(2), m.end(2)) for m in OLD_CODE_SPAN.finditer(text)]
    old_rule, new_rule = OLD_MAKE_RULE.match(text), stale._MAKE_RULE_RE.match(text)
    assert (old_rule is None) == (new_rule is None)
    if old_rule is not None and new_rule is not None:
        assert old_rule.group(1).split() == new_rule.group(1).split()
        assert (old_rule.group(2), old_rule.end()) == (new_rule.group(2), new_rule.end())
    old_just = OLD_JUST_RECIPE.match(text)
    assert stale._just_recipe_name(text) == (None if old_just is None else old_just.group(1))
    line = " " + text.replace("\n", "")
    old_item = OLD_PNPM_ITEM.match(line)
    # A glob of only whitespace was nonsense either way; it is now no glob at all.
    expected = None if old_item is None or not old_item.group(2).strip() else old_item.group(2)
    assert stale._pnpm_item(line) == expected
