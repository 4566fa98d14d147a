"""The fast ``similar`` passes find exactly the pairs the naive all-pairs loop finds.

``similar_pairs`` skips pairs whose lengths alone rule them out and scores the rest
either as a matrix (``cdist`` read as bytes, on every core for ``check`` or on one
for the server, in smaller blocks) or one key at a time (``process.extract``); none may
change a result (issue 11), nor which pairs a ``limit`` keeps.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz

from memory_ls.core import similar
from memory_ls.core.notes import Bullet, parse_lines
from memory_ls.core.similar import (
    BLOCK,
    DEFAULT_THRESHOLD,
    MATRIX_FROM,
    SERVER_BLOCK,
    SimilarPass,
    compared_keys,
    compared_notes,
    pair_findings,
    pass_pairs,
    score_block,
    similar_findings,
    similar_matrix_available,
    similar_pairs,
)

PASSES = {
    "row": {"matrix": False},
    "matrix": {"matrix": True},  # `check`'s: every core, blocks of BLOCK rows
    "server": {"matrix": True, "workers": 1},  # the server's: one core, SERVER_BLOCK rows
}
"""Every way ``similar_pairs`` can score: each must find the naive loop's pairs."""

WORDS = ["run", "tests", "test", "before", "push", "pnpm", "npm", "always", "never", "😀", "x"]


def naive(keys: list[str], threshold: float) -> list[tuple[int, int, float]]:
    """Every pair, scored: the definition."""
    return [
        (i, j, float(fuzz.ratio(keys[i], keys[j])))
        for i in range(len(keys))
        for j in range(i + 1, len(keys))
        if keys[i] != keys[j] and fuzz.ratio(keys[i], keys[j]) >= threshold
    ]


def random_store(rng: random.Random, size: int) -> list[str]:
    """Notes that are often one word away from each other, of every length."""
    notes = [" ".join(rng.choices(WORDS, k=rng.randint(1, 9))) for _ in range(size // 3 + 1)]
    return random_store_from(rng, notes, size)


def random_store_from(
    rng: random.Random, notes: list[str], size: int, words: list[str] = WORDS
) -> list[str]:
    """``notes`` and variants of them (a word swapped, added or dropped, from ``words``)
    up to ``size``."""
    notes = list(notes)
    while len(notes) < size:
        words = rng.choice(notes).split(" ")
        roll = rng.random()
        if roll < 0.4:
            words[rng.randrange(len(words))] = rng.choice(words)
        elif roll < 0.7:
            words.insert(rng.randrange(len(words) + 1), rng.choice(words))
        elif len(words) > 1:
            del words[rng.randrange(len(words))]
        notes.append(" ".join(words))
    return notes


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("way", PASSES)
def test_the_fast_pass_equals_the_naive_one(seed: int, way: str) -> None:
    rng = random.Random(seed)
    keys = random_store(rng, rng.randint(2, 400))
    threshold = rng.choice([50.0, 70.0, 85.0, 85.5, 90.0, 100.0])
    assert similar_pairs(keys, threshold, **PASSES[way]) == naive(keys, threshold)


@settings(max_examples=200, deadline=None)
@given(
    keys=st.lists(st.text(alphabet="ab c😀", max_size=12), max_size=25),
    threshold=st.floats(min_value=0, max_value=100),
    way=st.sampled_from(sorted(PASSES)),
)
def test_the_fast_pass_equals_the_naive_one_at_every_threshold(
    keys: list[str], threshold: float, way: str
) -> None:
    # Short keys over a tiny alphabet: the length bound is reached exactly, often.
    assert similar_pairs(keys, threshold, **PASSES[way]) == naive(keys, threshold)


def test_a_limit_caps_the_pairs() -> None:
    keys = [f"the same note, number {i}" for i in range(50)]
    for way in PASSES.values():
        found = similar_pairs(keys, 80.0, limit=10, **way)
        assert len(found) == 10
        assert set(found) <= set(naive(keys, 80.0))


@st.composite
def paraphrase_store(draw: st.DrawFn) -> list[str]:
    """Templates and many variants of each (a word swapped, dropped or added), shuffled:
    the store an agent writes when it saves the same lesson again and again."""
    words = st.sampled_from([*WORDS, "pytest", "ruff", "the", "a", "main", "deploy", "🙂"])
    templates = draw(st.lists(st.lists(words, min_size=2, max_size=14), min_size=1, max_size=6))
    notes = [" ".join(t) for t in templates]
    for _ in range(draw(st.integers(0, 40))):
        variant = list(draw(st.sampled_from(templates)))
        where = draw(st.integers(0, len(variant) - 1))
        edit = draw(st.sampled_from(["swap", "drop", "add"]))
        if edit == "swap":
            variant[where] = draw(words)
        elif edit == "drop" and len(variant) > 1:
            del variant[where]
        else:
            variant.insert(where, draw(words))
        notes.append(" ".join(variant))
    return draw(st.permutations(notes))


@settings(max_examples=150, deadline=None)
@given(
    keys=paraphrase_store(),
    threshold=st.sampled_from([60.0, 80.0, 85.0, 85.5, 90.0, 95.0, 99.9]),
    way=st.sampled_from(sorted(PASSES)),
)
def test_the_fast_pass_equals_the_naive_one_on_paraphrase_heavy_stores(
    keys: list[str], threshold: float, way: str
) -> None:
    # Many pairs near the threshold, on both sides of it, at every length.
    assert similar_pairs(keys, threshold, **PASSES[way]) == naive(keys, threshold)


@settings(max_examples=100, deadline=None)
@given(
    keys=paraphrase_store(),
    threshold=st.sampled_from([60.0, 80.0, 85.0, 90.0]),
    limit=st.integers(1, 60),
)
def test_every_pass_keeps_the_same_pairs_at_a_limit(
    keys: list[str], threshold: float, limit: int
) -> None:
    # The server caps its pairs (SIMILAR_LIMIT): the matrix must keep the pairs the row
    # pass kept, not merely as many. The row pass stops after the row that reaches the
    # limit and keeps that row's best hits (score, then column: process.extract's order).
    kept = similar_pairs(keys, threshold, limit, matrix=False)
    assert len(kept) == min(limit, len(naive(keys, threshold)))
    assert set(kept) <= set(naive(keys, threshold))
    for way in ("matrix", "server"):
        assert similar_pairs(keys, threshold, limit, **PASSES[way]) == kept


@pytest.mark.parametrize("seed", range(4))
def test_the_server_pass_equals_the_row_pass_on_dense_stores_over_many_blocks(
    seed: int,
) -> None:
    # Hundreds of variants of a few templates: most rows hold hits, every block of the
    # server's pass (SERVER_BLOCK rows) finds many cells over the cutoff, and the limit
    # falls in the middle of a row.
    rng = random.Random(seed)
    templates = [" ".join(rng.choices(WORDS, k=rng.randint(4, 12))) for _ in range(3)]
    keys = list(dict.fromkeys(random_store_from(rng, templates, 8 * SERVER_BLOCK)))
    assert len(keys) > 4 * SERVER_BLOCK
    full = naive(keys, 80.0)
    assert len(full) > len(keys)
    assert similar_pairs(keys, 80.0, **PASSES["server"]) == full
    for limit in (len(keys) // 2, len(full) // 3, len(full) - 1):
        kept = similar_pairs(keys, 80.0, limit, matrix=False)
        assert similar_pairs(keys, 80.0, limit, **PASSES["server"]) == kept


def test_the_default_pass_is_the_matrix_on_a_big_store_and_equals_the_naive_one() -> None:
    rng = random.Random(7)
    keys = random_store(rng, 600)
    assert len(set(keys)) >= MATRIX_FROM
    assert similar_pairs(keys, 85.0) == naive(keys, 85.0)
    # The matrix is read as bytes: rapidfuzz's compiled cdist, never numpy.
    assert similar_matrix_available()
    # Large enough for several blocks of either matrix pass.
    assert len(keys) > 2 * BLOCK > 2 * SERVER_BLOCK
    assert similar_pairs(keys, 85.0, workers=1) == naive(keys, 85.0)


def findings_of_pairs(
    bullets: list[Bullet], pairs: list[tuple[int, int, float]]
) -> list[tuple[int, int, float]]:
    """``(later line, earlier line, score)`` of each hint: the definition (one hint per
    later note, at its closest earlier note; the first such note on a tie)."""
    best: dict[int, tuple[int, float]] = {}
    for i, j, score in pairs:
        if j not in best or score > best[j][1]:
            best[j] = (i, score)
    return [(bullets[j].line, bullets[i].line, s) for j, (i, s) in sorted(best.items())]


@pytest.mark.parametrize("seed", range(3))
def test_check_s_blocks_scored_in_any_order_give_the_naive_findings(seed: int) -> None:
    # check scores the blocks of its pass on two threads, in whichever order they come:
    # put back together, they must be the hints of the naive all-pairs loop.
    rng = random.Random(seed)
    templates = [" ".join(rng.choices(WORDS, k=rng.randint(3, 12))) for _ in range(8)]
    notes = random_store_from(rng, templates, 12 * SERVER_BLOCK)
    bullets = [b for b in parse_lines([f"- {n}" for n in notes]).bullets if b.note]
    firsts = compared_notes(bullets)  # the first note of each key, in file order
    p = SimilarPass(compared_keys(firsts), DEFAULT_THRESHOLD)
    assert p.matrix and len(p.blocks) > 4
    order = list(range(len(p.blocks)))
    rng.shuffle(order)
    scored: list[list[tuple[int, int, float]] | None] = [None] * len(order)
    for k in order:
        scored[k] = score_block(p, k)
    found = pair_findings(firsts, pass_pairs(p, scored))
    assert found == similar_findings(bullets, DEFAULT_THRESHOLD)
    expected = findings_of_pairs(firsts, naive([b.key for b in firsts], DEFAULT_THRESHOLD))
    assert [(f.line, f.related[0].line, f.data["score"]) for f in found] == expected
    assert len(expected) > len(p.blocks)  # hints in many blocks
    with pytest.raises(ValueError, match="every block"):
        pass_pairs(p, scored[:-1])


def pass_pairs_of(keys: list[str], threshold: float) -> list[tuple[int, int, float]]:
    """``check``'s pass (the filter of short keys, then ``ratio``) over ``keys``, every
    pair kept (no limit: these stores may hold more than SIMILAR_LIMIT)."""
    bullets = [b for b in parse_lines([f"- {k}" for k in keys]).bullets if b.note]
    p = SimilarPass(compared_keys(compared_notes(bullets)), threshold, None)
    return pass_pairs(p, [score_block(p, k) for k in range(len(p.blocks))])


@settings(max_examples=150, deadline=None)
@given(
    keys=st.lists(st.text(alphabet="ab etA😀", min_size=1, max_size=14), min_size=90, max_size=160),
    threshold=st.floats(min_value=0.5, max_value=100),
)
def test_check_s_filter_loses_no_pair_at_any_threshold(keys: list[str], threshold: float) -> None:
    # Keys mostly of DROPPED's characters (some left empty by it), near one another, at
    # every threshold: the filter must keep every pair the naive loop finds.
    bullets = [b for b in parse_lines([f"- {k}" for k in keys]).bullets if b.note]
    firsts = compared_keys(compared_notes(bullets))
    p = SimilarPass(firsts, threshold)
    assume(p.matrix)  # (enough distinct keys once lowercased)
    assert pass_pairs_of(keys, threshold) == naive(firsts, threshold)


@settings(max_examples=60, deadline=None)
@given(keys=paraphrase_store(), threshold=st.sampled_from([60.0, 80.0, 85.0, 85.5, 90.0]))
def test_check_s_filter_on_paraphrase_heavy_stores(keys: list[str], threshold: float) -> None:
    keys = [*keys, *(f"{k} {k}" for k in keys), *(f"filler note {i}" for i in range(70))]
    bullets = [b for b in parse_lines([f"- {k}" for k in keys]).bullets if b.note]
    firsts = compared_keys(compared_notes(bullets))
    p = SimilarPass(firsts, threshold)
    assert p.matrix
    assert pass_pairs_of(keys, threshold) == naive(firsts, threshold)


def test_check_s_filter_scores_long_keys_as_the_ratio_matrix() -> None:
    # A block whose distance bound does not fit a byte (keys of ~850 characters) is
    # scored as a ratio matrix: the same pairs.
    rng = random.Random(3)
    base = " ".join(rng.choices(WORDS, k=170))
    keys = [base + f" {i}" * (i % 3 + 1) for i in range(40)]
    keys += [f"short note {i}" for i in range(40)]
    assert pass_pairs_of(keys, 85.0) == naive(keys, 85.0)
    assert len(naive(keys, 85.0)) > 100


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.text(
            st.one_of(st.sampled_from(" etaETA\n\r\t\x00éà€😀\udc80\ud800"), st.characters()),
            max_size=30,
        ),
        max_size=12,
    )
)
def test_keys_without_dropped_are_those_of_the_rule(keys: list[str]) -> None:
    # Each of DROPPED's characters taken out of each key, one key at a time: the byte
    # deletion over the joined UTF-8 (lone surrogates, line breaks and all) is the same.
    expected = []
    for key in keys:
        for char in similar.DROPPED:
            key = key.replace(char, "")
        expected.append(key)
    assert similar._without_dropped(keys) == expected
