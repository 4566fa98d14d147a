"""A pair that scores exactly the ``similar`` threshold is a pair, in every pass.

SPEC: ``similar`` when the score reaches the threshold, the score being rapidfuzz's
``fuzz.ratio`` of the two keys (what a hint shows). rapidfuzz applies a ``score_cutoff``
in its own precision (part of it in float32): at a cutoff equal to the score it may
drop the pair (68.0 at 68, 86.4 at 86.4, 93.0 at 93), or keep one just under it
(67.19999999999999 at 67.2). The passes gave different answers at such thresholds:
``check``'s filter kept the pair, the editor's matrix pass and its pass of a few keys
dropped it, and its pass after an edit kept one under the threshold.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz

from memory_ls.core.instruction_duplicates import instruction_index, repeated_line
from memory_ls.core.similar import (
    SimilarPass,
    key_pairs,
    pass_pairs,
    score_block,
    similar_pairs,
    similar_to,
)
from memory_ls.server.diagnostics import Analysis
from tests.unit.test_similar_pairs import naive

FILLER = ["".join(chr(0x4E00 + 4 * i + c) for c in range(4)) for i in range(70)]
"""Keys with no character of another key: enough keys for the matrix passes, and no
pair of their own."""


def pair_at(length_a: int, length_b: int, distance: int) -> tuple[str, str]:
    """Two keys of these lengths at this Indel distance (its parity that of their sum)."""
    u = (distance + length_a - length_b) // 2
    v = distance - u
    common = length_a - u
    assert common + v == length_b and min(u, v, common) >= 0
    return "x" * common + "y" * u, "x" * common + "z" * v


def passes(keys: list[str], threshold: float) -> dict[str, list[tuple[int, int, float]]]:
    """Every pass's pairs of ``keys``, every pair kept."""
    p = SimilarPass(keys, threshold, None)
    return {
        "row": similar_pairs(keys, threshold, matrix=False),
        "matrix": similar_pairs(keys, threshold, matrix=True),
        "editor": [
            (min(keys.index(a), keys.index(b)), max(keys.index(a), keys.index(b)), s)
            for (a, b), s in Analysis.all_pairs(keys, threshold).items()
        ],
        "check": pass_pairs(p, [score_block(p, k) for k in range(len(p.blocks))]),
        "check-limited": key_pairs(keys, threshold),
        "after an edit": sorted(
            (min(0, i), max(0, i), s) for i, s in similar_to(keys[0], keys, threshold)
        ),
    }


TIES = [(25, 25, 16, 68.0), (62, 63, 17, 86.4), (100, 100, 14, 93.0), (62, 63, 41, 67.2)]
"""Pairs rapidfuzz's cutoff decided against the score (the last: 67.19999999999999)."""


def test_the_known_ties_are_decided_by_the_score_in_every_pass() -> None:
    for length_a, length_b, distance, threshold in TIES:
        a, b = pair_at(length_a, length_b, distance)
        kept = fuzz.ratio(a, b) >= threshold
        for keys in ([a, b], [a, b, *FILLER]):
            expected = naive(keys, threshold)
            assert ((0, 1, fuzz.ratio(a, b)) in expected) is kept
            for name, found in passes(keys, threshold).items():
                if name == "after an edit":
                    expected_here = [x for x in expected if x[0] == 0]
                else:
                    expected_here = expected
                assert found == expected_here, (name, threshold, len(keys))


@settings(max_examples=200, deadline=None)
@given(
    lengths=st.tuples(st.integers(1, 130), st.integers(1, 130)),
    share=st.floats(0, 1),
    which=st.sampled_from(["score", "above", "below", "1 place", "2 places"]),
)
def test_a_pair_at_the_threshold_is_kept_by_every_pass_as_by_the_definition(
    lengths: tuple[int, int], share: float, which: str
) -> None:
    length_a, length_b = lengths
    least, most = abs(length_a - length_b), length_a + length_b
    distance = least + 2 * int(share * (most - least) // 2)
    a, b = pair_at(length_a, length_b, distance)
    score = fuzz.ratio(a, b)
    threshold = {
        "score": score,
        "above": math.nextafter(score, math.inf),
        "below": math.nextafter(score, -math.inf),
        "1 place": round(score, 1),
        "2 places": round(score, 2),
    }[which]
    if not 1 <= threshold <= 100 or a == b:
        return
    keys = [a, b, *FILLER]
    expected = naive(keys, threshold)
    for name, found in passes(keys, threshold).items():
        expected_here = [x for x in expected if x[0] == 0] if name == "after an edit" else expected
        assert found == expected_here, (name, threshold)
    # instruction-duplicate: the note ``a`` against a file that says ``b``.
    index = instruction_index({"AGENTS.md": f"- {b}\n"})
    hit = repeated_line(a, index, threshold)
    assert (hit is not None) is (score >= threshold)
    assert hit is None or hit[1] == score
