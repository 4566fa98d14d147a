"""``Analysis.all_pairs``, the server's ``similar`` pass after open (issue 11).

It scores with the one-worker matrix (``cdist`` in blocks of ``SERVER_BLOCK`` rows); what
it returns must be what the row pass (``process.extract``, one key at a time, the server's
pass before) returned: the same pairs and scores, and the same pairs kept at the cap
(``SIMILAR_LIMIT``) on a store of many paraphrases.
"""

from __future__ import annotations

import random

import pytest
from rapidfuzz import fuzz

from memory_ls.core.similar import MATRIX_FROM, SERVER_BLOCK, SIMILAR_LIMIT, similar_pairs
from memory_ls.server.diagnostics import Analysis
from tests.unit.test_similar_pairs import random_store_from

WORDS = ["run", "tests", "before", "push", "pnpm", "npm", "always", "never", "deploy", "😀"]


def reference(keys: list[str], threshold: float) -> dict[tuple[str, str], float]:
    """The row pass, as ``all_pairs`` ran it before, pair by pair (ordered keys)."""
    pairs = similar_pairs(keys, threshold, limit=SIMILAR_LIMIT, matrix=False)
    return {(min(keys[i], keys[j]), max(keys[i], keys[j])): score for i, j, score in pairs}


def store(rng: random.Random, templates: int, size: int) -> list[str]:
    """Distinct keys: ``templates`` notes and variants of them (a word swapped, added or
    dropped), the fewer the templates the denser the store."""
    notes = [" ".join(rng.choices(WORDS, k=rng.randint(3, 14))) for _ in range(templates)]
    notes = random_store_from(rng, notes, size, WORDS)
    return list(dict.fromkeys(notes))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("templates", [2, 20, 400])
def test_all_pairs_equals_the_row_pass(seed: int, templates: int) -> None:
    rng = random.Random(seed * 1000 + templates)
    keys = store(rng, templates, 600)
    assert len(keys) >= MATRIX_FROM  # the matrix pass, over many blocks
    assert len(keys) > 4 * SERVER_BLOCK
    threshold = rng.choice([80.0, 85.0, 85.5, 90.0])
    found = Analysis.all_pairs(keys, threshold)
    assert found == reference(keys, threshold)
    assert list(found) == list(reference(keys, threshold))  # in the same order too
    for (a, b), score in found.items():
        assert a < b
        assert score == fuzz.ratio(a, b) >= threshold


def test_all_pairs_keeps_the_row_pass_pairs_at_the_cap() -> None:
    # Two templates, hundreds of variants: far more close pairs than the cap.
    keys = store(random.Random(3), 2, 900)
    found = Analysis.all_pairs(keys, 80.0)
    assert len(found) == SIMILAR_LIMIT
    assert found == reference(keys, 80.0)
