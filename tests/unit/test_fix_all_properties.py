"""source.fixAll.memory, over hostile text: it fixes every safe finding and keeps the rest."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_ls.core.checks import duplicate_findings, line_findings
from memory_ls.core.fixes import apply_edits, fix_all
from memory_ls.core.notes import parse_lines
from memory_ls.core.text import split_text

LINE = st.one_of(
    st.sampled_from(["prose", "## heading", "", "<!-- h -->", "-", "- ", "-  ", "*\t"]),
    st.builds(
        lambda indent, marker, body: f"{indent}{marker} {body}",
        st.sampled_from(["", "  ", "\t"]),
        st.sampled_from(["-", "*"]),
        st.sampled_from(
            [
                "note",
                "Note.",
                "note",
                "zero\u200bwidth",
                "bell\x07here",
                "tab\there",
                "😀 emoji",
                "日本語",
                "  spaced  out ",
                "\u202eevil",
            ]
        ),
    ),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=25))
def test_fix_all_leaves_no_safe_finding_and_keeps_prose(lines: list[str]) -> None:
    fixed_text = apply_edits(lines, fix_all(lines))
    fixed = split_text(fixed_text).lines if lines else []
    parsed = parse_lines(fixed)
    codes = {f.code for b in parsed.bullets for f in line_findings(b)}
    assert not codes & {"blank-note", "control-characters", "hidden-unicode"}
    exact = [f for f in duplicate_findings(parsed.bullets) if f.data["exact"]]
    assert not exact, exact
    # Every line that is not a bullet survives, in order.
    prose = [line for line in lines if parse_lines([line]).bullets == []]
    kept = [line for line in fixed if parse_lines([line]).bullets == []]
    assert "\n".join(kept).rstrip("\n") == "\n".join(prose).rstrip("\n")
    # Fixing twice changes nothing more.
    assert apply_edits(fixed, fix_all(fixed)) == fixed_text
