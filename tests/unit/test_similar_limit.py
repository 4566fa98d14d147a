"""``check``'s ``similar`` pairs at a limit are the editor's: every way ``check`` scores its
pass (the blocks in turn, the two-ended threaded pass, the forked worker) keeps exactly
the pairs ``similar_pairs(keys, threshold, limit=...)`` keeps, scores only the blocks it
needs, and holds a few times the limit in pairs, however many the store has."""

from __future__ import annotations

import random
import sys
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_ls.core import similar
from memory_ls.core.similar import (
    DEFAULT_THRESHOLD,
    SERVER_BLOCK,
    SIMILAR_LIMIT,
    Pair,
    ScoredBlocks,
    SimilarPass,
    key_pairs,
    pass_pairs,
    rows_to_limit,
    score_block,
    similar_pairs,
)
from memory_ls.store.similar_pass import SimilarWorker, ThreadedPass
from tests.unit.test_similar_pairs import WORDS, naive, random_store_from


def dense_store(seed: int, size: int) -> list[str]:
    """``size`` distinct keys, variants of a few templates: many close pairs in many
    blocks, in every row of the length order."""
    rng = random.Random(seed)
    templates = [" ".join(rng.choices(WORDS, k=rng.randint(3, 10))) for _ in range(4)]
    extra = [f"filler note number {i} {rng.choice(WORDS)}" for i in range(size // 4)]
    notes = random_store_from(rng, templates + extra, size * 2)
    return list(dict.fromkeys(notes))[:size]


stores = st.builds(dense_store, st.integers(0, 10_000), st.integers(2, 6 * SERVER_BLOCK))
thresholds = st.sampled_from([60.0, 80.0, 85.0, 90.0])
limits = st.integers(1, 400)


def test_the_editor_and_check_share_one_limit() -> None:
    from memory_ls.server import diagnostics

    assert diagnostics.SIMILAR_LIMIT is SIMILAR_LIMIT == 2000


@settings(max_examples=120, deadline=None)
@given(keys=stores, threshold=thresholds, limit=limits)
def test_check_s_pass_keeps_the_editor_s_pairs_at_any_limit(
    keys: list[str], threshold: float, limit: int
) -> None:
    expected = similar_pairs(keys, threshold, limit)
    assert len(expected) == min(limit, len(similar_pairs(keys, threshold)))
    assert similar_pairs(keys, threshold, limit, workers=1) == expected  # the server's call
    assert key_pairs(keys, threshold, limit) == expected
    assert ThreadedPass(keys, False, threshold, limit).pairs() == expected
    assert ThreadedPass(keys, True, threshold, limit).pairs() == expected


@settings(max_examples=120, deadline=None)
@given(
    keys=stores,
    threshold=thresholds,
    limit=limits,
    order=st.randoms(use_true_random=False),
)
def test_blocks_scored_in_any_order_keep_the_limit_s_pairs(
    keys: list[str], threshold: float, limit: int, order: random.Random
) -> None:
    # Whichever blocks come first, a block past the one that reaches the limit is never
    # needed, and what is kept of the others gives the pairs of the rule.
    p = SimilarPass(keys, threshold, limit)
    scored = ScoredBlocks(p)
    indices = list(range(len(p.blocks)))
    order.shuffle(indices)
    for k in indices:
        if scored.needed(k):
            scored.put(k, score_block(p, k))
        assert all(pairs is None for pairs in scored.pairs[scored.end :])
    assert pass_pairs(p, scored.pairs) == similar_pairs(keys, threshold, limit)


@settings(max_examples=80, deadline=None)
@given(keys=stores, threshold=thresholds, limit=limits)
def test_a_pass_from_both_ends_holds_a_few_times_the_limit(
    keys: list[str], threshold: float, limit: int
) -> None:
    # The threaded pass's order: one thread from the front, one from the back.
    p = SimilarPass(keys, threshold, limit)
    scored = ScoredBlocks(p)
    front, back, turn = 0, len(p.blocks), 0
    while front < min(back, scored.end):
        if turn % 2 == 0:
            k, front = front, front + 1
        else:
            back = min(back, scored.end) - 1
            k = back
        turn += 1
        block = score_block(p, k)
        assert len(block) <= limit
        scored.put(k, block)
        assert sum(len(pairs) for pairs in scored.pairs if pairs) <= 4 * limit
    assert pass_pairs(p, scored.pairs) == similar_pairs(keys, threshold, limit)


def test_a_block_stops_after_the_row_that_reaches_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 300 near-identical keys: each row of the first block holds ~300 pairs; at a limit of
    # 50 a block's first row reaches it, and no later row of it is scored (the rows are
    # scored as they are read).
    keys = [f"run cache step {i:05d}" for i in range(300)]
    read: list[int] = []
    rule = similar.rows_to_limit

    def counted(rows: Iterable[list[Pair]], limit: int | None) -> tuple[list[Pair], bool]:
        def reading() -> Iterator[list[Pair]]:
            for row in rows:
                read.append(row[0][0])
                yield row

        return rule(reading(), limit)

    monkeypatch.setattr(similar, "rows_to_limit", counted)
    p = SimilarPass(keys, DEFAULT_THRESHOLD, 50)
    assert p.matrix and len(p.blocks) > 5
    pairs = score_block(p, 3)
    assert len(pairs) == 50 and {r for r, _, _ in pairs} == {3 * SERVER_BLOCK}
    assert read == [3 * SERVER_BLOCK]
    # Block 0 reaches the limit: no other block is needed, whatever was scored before.
    scored = ScoredBlocks(p)
    scored.put(len(p.blocks) - 1, score_block(p, len(p.blocks) - 1))
    scored.put(0, score_block(p, 0))
    assert scored.end == 1 and scored.pairs[-1] is None
    assert key_pairs(keys, DEFAULT_THRESHOLD, 50) == similar_pairs(keys, DEFAULT_THRESHOLD, 50)


def test_the_rule_keeps_the_best_hits_of_the_row_that_reaches_the_limit() -> None:
    rows = [[(0, 1, 90.0), (0, 2, 95.0)], [(1, 2, 86.0), (1, 3, 99.0), (1, 4, 99.0)], [(2, 3, 1.0)]]
    assert rows_to_limit(rows, 4) == (
        [(0, 1, 90.0), (0, 2, 95.0), (1, 3, 99.0), (1, 4, 99.0)],
        True,
    )
    assert rows_to_limit(rows, 3) == ([(0, 1, 90.0), (0, 2, 95.0), (1, 3, 99.0)], True)
    assert rows_to_limit(rows, 2) == ([(0, 2, 95.0), (0, 1, 90.0)], True)
    assert rows_to_limit(rows, 6) == ([p for row in rows for p in row], True)
    assert rows_to_limit(rows, 7) == ([p for row in rows for p in row], False)
    assert rows_to_limit(rows, None) == ([p for row in rows for p in row], False)


def test_keys_alike_but_for_the_dropped_characters_are_scored_in_c(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every cell passes the filter (the short keys are all "qzqzqzqzqz"): each block is
    # scored as a ratio matrix from its first row on, not cell by cell in Python; the
    # same pairs either way.
    rng = random.Random(4)
    keys = list(dict.fromkeys("qz" * 5 + "".join(rng.choices(" eta", k=14)) for _ in range(400)))
    matrices: list[int] = []
    score = similar._score_block

    def counted(queries: list[str], choices: list[str], cutoff: int, workers: int) -> bytes:
        matrices.append(len(queries))
        return score(queries, choices, cutoff, workers)

    monkeypatch.setattr(similar, "_score_block", counted)
    p = SimilarPass(keys, DEFAULT_THRESHOLD, None)
    assert p.matrix
    found = pass_pairs(p, [score_block(p, k) for k in range(len(p.blocks))])
    assert sum(matrices) > len(keys) - 2 * similar.DENSE_SHARE * similar.DENSE_ROW
    assert found == naive(keys, DEFAULT_THRESHOLD)
    assert len(found) > 100


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork: Linux only")
@pytest.mark.parametrize("limit", [1, 17, 300, None])
def test_the_worker_keeps_the_limit_s_pairs(limit: int | None) -> None:
    worker = SimilarWorker(DEFAULT_THRESHOLD, limit)
    try:
        stores = [dense_store(seed, size) for seed, size in enumerate([2, 40, 70, 150, 200])]
        stores.append([f"run cache step {i:05d}" for i in range(200)])
        tickets = [worker.submit(keys) for keys in stores]
        for keys, ticket in zip(stores, tickets, strict=True):
            assert ticket is not None
            assert worker.pairs(ticket) == similar_pairs(keys, DEFAULT_THRESHOLD, limit)
    finally:
        worker.close()


def test_short_keys_are_not_scored_against_keys_of_their_own_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two different keys of one length are at most ``1 - 1 / length`` alike: under 85 up to
    # six characters. A store of 43,000 different one-character notes scored 900 million
    # such cells for no pair (~9 s of `check`, ~12 s of the editor's pass); now none, and
    # keys of three characters only against those of four, with the same pairs.
    cells: list[int] = []
    for name in ("_score_block", "_distance_block"):
        scorer = getattr(similar, name)

        def counted(queries: list[str], choices: list[str], *args: int, _s: Any = scorer) -> bytes:
            cells.append(len(queries) * len(choices))
            return bytes(_s(queries, choices, *args))

        monkeypatch.setattr(similar, name, counted)
    ones = [chr(0x4E00 + i) for i in range(3000)]
    assert similar_pairs(ones, DEFAULT_THRESHOLD, workers=1) == []
    assert key_pairs(ones, DEFAULT_THRESHOLD) == []
    assert ThreadedPass(ones, True).pairs() == []
    assert sum(cells) == 0
    rng = random.Random(7)
    keys = list(dict.fromkeys("".join(rng.choices("abc", k=rng.randint(3, 4))) for _ in range(300)))
    threes = sum(len(k) == 3 for k in keys)
    expected = naive(keys, DEFAULT_THRESHOLD)
    assert expected and similar_pairs(keys, DEFAULT_THRESHOLD, workers=1) == expected
    assert sum(cells) <= threes * (len(keys) - threes) + (len(keys) - threes) ** 2
    assert key_pairs(keys, DEFAULT_THRESHOLD, None) == expected
    assert similar_pairs(keys, DEFAULT_THRESHOLD, matrix=False) == expected
