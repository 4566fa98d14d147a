"""Close paraphrases that the conservative near-duplicate key does not catch.

A fuzzy score (rapidfuzz's normalised Indel ``ratio`` on lowercased notes) over a
threshold. ``token_set_ratio`` was rejected: it scores a note whose words are a
subset of another's as 100 and is 20x slower (BENCH-NOTES). The import is lazy
so read-only CLI verbs that never ask for hints do not pay for it.
"""

from __future__ import annotations

import bisect
import itertools
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from memory_ls.core.checks import Finding, Related, SimilarData
from memory_ls.core.notes import Bullet
from memory_ls.core.text import escape_unseen

DEFAULT_THRESHOLD = 85.0

SIMILAR_LIMIT = 2000
"""At most this many ``similar`` pairs per store, in the editor and in ``check`` alike: hints,
not a flood. A store of near-identical notes (10,000 within the store cap) holds tens of
millions of close pairs; every pass stops after the row that reaches this many
(:func:`rows_to_limit`), so its time and memory stay those of a few blocks. A normal
store has far fewer (the benchmark's paraphrase-heavy store: 1,497)."""

Pair = tuple[int, int, float]
"""``(row, column, score)`` in a pass (positions in the keys sorted by length), or
``(i, j, score)`` in the keys as given."""


BLOCK = 256
"""Rows scored at once by :func:`similar_pairs`' matrix pass on every core (``workers=-1``):
bounds the score matrix to BLOCK x n bytes."""
SERVER_BLOCK = 32
"""Rows scored at once by the matrix pass on one core: the server's pass (in its thread) and
``check``'s (:class:`SimilarPass`, on two threads, each scoring one block at a time).

A block's window reaches as far as its longest key can, so a smaller block scores fewer
cells that no key of it can reach: measured on one worker (CPU, medians of three), 4500
167 -> 128 ms from 256 to 32 rows, paraphrase 225 -> 193 ms, 10000 403 -> 382 ms; flat
from 16 to 64 rows."""
YIELD_EVERY = 8
"""Rows scored one key at a time between two offers of the GIL to other threads."""
MATRIX_FROM = 64
"""From this many distinct keys on, the matrix pass is the default (below it one call per key
costs as little, and the row pass offers the GIL between keys)."""

TIE_MARGIN = 0.001
"""How far under the threshold the ``score_cutoff`` given to rapidfuzz is
(:func:`score_floor`)."""


def score_floor(threshold: float) -> float:
    """The ``score_cutoff`` to give rapidfuzz for ``threshold``: a little under it, so that
    it only filters, and ``fuzz.ratio(a, b) >= threshold`` (the definition: the score a
    hint shows) decides.

    rapidfuzz applies a cutoff in its own precision (part of it in float32, whose step at
    100 is ~8e-6): at a cutoff equal to the score it drops some pairs that reach it (25
    against 25 characters at distance 16: 68.0 at 68; 86.4 at 86.4; 93.0 at 93) and keeps
    some that do not (67.19999999999999 at 67.2), so the passes that trusted it disagreed
    with those that scored the pair again. Two scores of keys under the cap differ by far
    more than :data:`TIE_MARGIN`, so the filter admits next to nothing more."""
    return max(0.0, min(threshold, 100.0) - TIE_MARGIN)


_NOT_BLANK = re.compile(b"[^\\x00]")
"""A cell of a uint8 matrix that holds a pair (:func:`_hit_rows` makes every blank 0)."""


def similar_pairs(
    keys: Sequence[str],
    threshold: float,
    limit: int | None = None,
    *,
    matrix: bool | None = None,
    workers: int = -1,
) -> list[Pair]:
    """All pairs ``(i, j, score)`` with ``i < j`` whose score reaches ``threshold``.

    Pairs with equal keys are left out: the ``duplicate`` check reports them.
    ``limit`` caps the pairs returned (a store of near-identical notes has millions) under
    :func:`rows_to_limit`'s rule; the editor and ``check`` both pass :data:`SIMILAR_LIMIT`.

    Keys are sorted by length and each is scored only against the longer keys that
    can still reach the threshold (``ratio`` is at most ``2 * shorter / (shorter +
    longer)``): about a sixth of the full matrix on a typical store. Two ways, the
    same pairs: ``matrix`` scores blocks of rows at once with rapidfuzz's ``cdist``
    (many queries per SIMD pass) into a byte matrix read without numpy
    (:func:`_score_block`); otherwise each key is scored against its window with
    ``process.extract``, offering the GIL to other threads between keys. ``None`` picks
    the matrix from :data:`MATRIX_FROM` keys on. ``workers`` is the matrix's threads:
    -1 (every core, blocks of :data:`BLOCK` rows), 1 (blocks of
    :data:`SERVER_BLOCK` rows) for the language server's pass in its background thread.
    With ``limit``, both ways stop after the row that reaches it and keep that row's
    best hits (score, then column: :func:`rows_to_limit`): the same pairs then too, and
    no block after that row's is scored.
    """
    n = len(keys)
    if n < 2:
        return []
    cutoff = max(0, min(100, int(threshold)))
    order = sorted(range(n), key=lambda i: len(keys[i]))
    ranked = [keys[i] for i in order]
    lengths = [len(k) for k in ranked]
    if matrix is None:
        matrix = n >= MATRIX_FROM
    if score_floor(threshold) < 1 or not similar_matrix_available():
        # A cell of 0 means "no pair", and a score under 1 would count; without rapidfuzz's
        # compiled cdist (its pure-Python fallback) there is no byte matrix to read.
        matrix = False
    if matrix:
        block = SERVER_BLOCK if workers == 1 else BLOCK
        found = _matrix_pairs(ranked, lengths, cutoff, threshold, limit, block, workers)
    else:
        found = _row_pairs(ranked, lengths, cutoff, threshold, limit)
    out = [(min(order[r], order[c]), max(order[r], order[c]), score) for r, c, score in found]
    return sorted(out)


def _reach(lengths: list[int], length: int, cutoff: int, lo: int) -> int:
    """The end of the keys (sorted by length, from ``lo``) that a key of ``length`` can reach.

    Integers, so a bound that is exactly reached is never lost to rounding.
    """
    if cutoff <= 0:
        return len(lengths)
    longest = length * (200 - cutoff) // cutoff
    return bisect.bisect_right(lengths, longest, lo=lo)


def _first_column(lengths: list[int], cutoff: int, row: int, first: int, stop: int) -> int:
    """The first key (from ``first``, the key after the first row of a block, up to ``stop``)
    that the rows of ``row``'s length can reach: past the keys of that length when two
    different keys of one length cannot reach ``cutoff`` (their Indel distance is at least
    2, so ``ratio`` is at most ``100 * (1 - 1 / length)``: under 85 up to 6 characters).
    A store of 43,000 different one-character notes scored 900 million such cells: ~9 s of
    ``check``, ~12 s of the editor's pass, for no pair."""
    length = lengths[row]
    if _one_length_pairs(length, cutoff):
        return first
    return max(first, bisect.bisect_right(lengths, length, first, stop))


def _one_length_pairs(length: int, cutoff: int) -> bool:
    """Whether two different keys of ``length`` can reach ``cutoff`` (in integers)."""
    return cutoff == 0 or 100 * (length - 1) >= cutoff * length


def rows_to_limit(rows: Iterable[list[Pair]], limit: int | None) -> tuple[list[Pair], bool]:
    """The pairs of ``rows`` (each row's close pairs, rows in the keys' length order) under
    the rule every pass keeps to at a ``limit``, and whether the limit was reached.

    The rule: rows are taken in order, whole, and the taking stops after the row that
    brings the count to ``limit`` or more; of that row, its best hits are kept (score
    descending, then column: ``process.extract``'s order), as many as make ``limit``.
    ``rows`` is read no further than that row, so a lazy source scores nothing past it.
    """
    out: list[Pair] = []
    for row in rows:
        out += row
        if limit is not None and len(out) >= limit:
            del out[len(out) - len(row) :]
            out += sorted(row, key=lambda hit: (-hit[2], hit[1]))
            del out[limit:]
            return out, True
    return out, False


def _row_pairs(
    ranked: list[str], lengths: list[int], cutoff: int, threshold: float, limit: int | None
) -> list[Pair]:
    """(row, column, score) of every close pair, one key against its window at a time."""
    return rows_to_limit(_one_by_one(ranked, lengths, cutoff, threshold), limit)[0]


def _one_by_one(
    ranked: list[str], lengths: list[int], cutoff: int, threshold: float
) -> Iterator[list[Pair]]:
    """Each row's close pairs (the rows with any), one key against its window at a time."""
    from rapidfuzz import fuzz, process

    extract, ratio = process.extract, fuzz.ratio
    for r, key in enumerate(ranked):
        if r % YIELD_EVERY == 0:
            # extract holds the GIL: let a waiting thread in (the server's event loop,
            # while this runs in its worker) instead of making it wait a switch interval.
            time.sleep(0)
        stop = _reach(lengths, lengths[r], cutoff, r + 1)
        first = _first_column(lengths, cutoff, r, r + 1, stop)
        if stop <= first:
            continue
        hits = extract(
            key, ranked[first:stop], scorer=ratio, score_cutoff=score_floor(threshold), limit=None
        )
        # rapidfuzz's cutoff is applied in its own precision: the threshold decides.
        row = [
            (r, first + c, float(score))
            for other, score, c in hits
            if other != key and score >= threshold
        ]
        if row:
            yield row


def compiled_cdist() -> tuple[Callable[..., Any], int] | None:
    """rapidfuzz's compiled ``cdist`` and its uint8 type code, or ``None`` where it is missing.

    ``rapidfuzz.process.cdist`` is this function wrapped in ``numpy.asarray`` (numpy:
    ~16 MB resident and 0.06-0.16 s to import, more than the whole pass on most stores).
    The compiled one returns a matrix object with the buffer protocol, read here as bytes.
    """
    try:
        from rapidfuzz.process_cpp_impl import UINT8, cdist
    except ImportError:  # rapidfuzz's pure-Python build
        return None
    return cdist, UINT8


def load_scorer() -> None:
    """Import what the passes score with (rapidfuzz), ahead of the first pass: ``check``'s
    worker does it while ``check`` reads the stores."""
    from rapidfuzz import fuzz  # noqa: F401
    from rapidfuzz.distance import Indel  # noqa: F401

    compiled_cdist()


def similar_matrix_available() -> bool:
    """True when the matrix pass can run (rapidfuzz's compiled ``cdist`` is installed)."""
    return compiled_cdist() is not None


def _score_block(queries: list[str], choices: list[str], threshold: float, workers: int) -> bytes:
    """The ``len(queries) x len(choices)`` uint8 matrix of ``ratio`` scores, row by row.

    A cell is 0 when its score is under :func:`score_floor` of ``threshold`` (at least 1,
    so a kept score is not); the caller scores any other cell again against ``threshold``.
    ``cdist`` releases the GIL while it scores, on ``workers`` threads (-1: every core).
    On one worker it scores in the calling thread and takes the GIL back between its
    steps of 4-32 rows (to look for Ctrl-C), so a waiting thread (the event loop) gets
    in within a step: the loop's ticks stayed <= ~10 ms apart during the pass.
    """
    from rapidfuzz import fuzz

    found = compiled_cdist()
    assert found is not None  # similar_pairs checked
    cdist, uint8 = found
    scores = cdist(
        queries,
        choices,
        scorer=fuzz.ratio,
        score_cutoff=score_floor(threshold),
        dtype=uint8,
        workers=workers,
    )
    return memoryview(scores).tobytes()


def _block_rows(
    ranked: list[str],
    start: int,
    end: int,
    stop: int,
    cutoff: int,
    threshold: float,
    workers: int,
    col: int,
) -> Iterator[list[Pair]]:
    """Rows ``start`` to ``end`` scored against the keys ``col`` to ``stop`` with ``cdist``
    (``col``: ``start``, or the first key past the rows' length, :func:`_first_column`):
    each row's ``(row, column, score)`` close pairs (only the rows with any)."""
    if col >= stop:
        return
    scores = _score_block(ranked[start:end], ranked[col:stop], threshold, workers)
    # A cell under the cutoff is 0; any other is the score rounded to a byte: the float decides.
    yield from _hit_rows(ranked, start, end, stop - col, scores, 0, threshold, False, col)


def _hit_rows(
    ranked: list[str],
    start: int,
    end: int,
    width: int,
    matrix: bytes,
    empty: int,
    threshold: float,
    dense: bool = False,
    col: int | None = None,
) -> Iterator[list[Pair]]:
    """Each row's ``(row, column, score)`` close pairs from ``matrix``, the uint8 matrix of
    rows ``start`` to ``end`` against the ``width`` keys from ``col`` (``start`` if
    ``None``; never after a row's own key but past the rows): a cell holding
    ``empty`` holds no pair, any other is scored with ``ratio`` against ``threshold``.

    ``dense``: the matrix is a filter's (:func:`_filtered_rows`); from a row where
    many of its cells pass (:data:`DENSE_ROW`) on, the rest of the block is scored as a
    ``ratio`` matrix instead."""
    from rapidfuzz import fuzz

    ratio = fuzz.ratio
    blank = bytes((empty,))
    swap = bytes.maketrans(bytes((0, empty)), bytes((empty, 0))) if empty else None
    if col is None:
        col = start
    for r in range(end - start):
        # Only the cells right of the diagonal: the lower triangle repeats them.
        skip = max(0, start + r + 1 - col)
        lo, hi = r * width + skip, (r + 1) * width
        # Almost every row is all blank: counting them is a C loop (~10x faster than
        # a regex over the row), and only a row with a hit is searched.
        passed = hi - lo - matrix.count(blank, lo, hi)
        if passed == 0:
            continue
        if dense and passed > DENSE_ROW and passed * DENSE_SHARE > hi - lo:
            first = start + r
            left = max(col, first)
            scores = _score_block(ranked[first:end], ranked[left : col + width], threshold, 1)
            yield from _hit_rows(
                ranked, first, end, col + width - left, scores, 0, threshold, False, left
            )
            return
        key = ranked[start + r]
        row: list[Pair] = []
        # A blank cell made 0 (a C pass over the row), so that one pattern finds the hits
        # whatever the blank (a pattern per bound was ~40 compiles a pass: ~7 ms).
        cells = matrix[lo:hi] if swap is None else matrix[lo:hi].translate(swap)
        for hit in _NOT_BLANK.finditer(cells):
            c = col + skip + hit.start()
            other = ranked[c]
            if other == key:
                continue
            score = float(ratio(key, other))
            if score >= threshold:
                row.append((start + r, c, score))
        if row:
            yield row


DENSE_ROW = 32
DENSE_SHARE = 16
"""From a row of :func:`_filtered_rows` where more than :data:`DENSE_ROW` cells, and more
than one in :data:`DENSE_SHARE`, pass the filter, the rest of its block is scored as a
``ratio`` matrix (in C, as the server's pass scores): each cell that passes costs ~0.9 us
scored in Python, a cell of the matrix ~35 ns (keys of 64 characters or less). A store
whose notes differ only in the filter's dropped characters (8,000 of ``qzqzqzqzqz`` and 30
of `` eta``) passed every cell: 16 s, against 0.6 s for the server's matrix. The
benchmark's stores pass a few thousand cells in all, and none of their rows gets here."""


def _blocks(lengths: list[int], cutoff: int, block: int) -> list[tuple[int, int, int]]:
    """``(start, end, stop)`` of each block of rows: rows ``start`` to ``end``, scored
    against the keys up to ``stop``, the last one its longest key can reach."""
    n = len(lengths)
    out = []
    start = 0
    while start < n:
        end = min(n, start + block)
        if not _one_length_pairs(lengths[start], cutoff):
            # Rows that do not reach keys of their own length: one length a block, scored
            # against the longer keys only (:func:`_first_column`).
            end = min(end, bisect.bisect_right(lengths, lengths[start], start))
        out.append((start, end, _reach(lengths, lengths[end - 1], cutoff, end)))
        start = end
    return out


def _matrix_pairs(
    ranked: list[str],
    lengths: list[int],
    cutoff: int,
    threshold: float,
    limit: int | None,
    block: int,
    workers: int,
) -> list[Pair]:
    """(row, column, score) of every close pair, scored in blocks of rows with ``cdist``
    (no block after the one whose row reaches ``limit``)."""

    def rows() -> Iterator[list[Pair]]:
        for start, end, stop in _blocks(lengths, cutoff, block):
            col = _first_column(lengths, cutoff, start, start, stop)
            yield from _block_rows(ranked, start, end, stop, cutoff, threshold, workers, col)

    return rows_to_limit(rows(), limit)[0]


def similar_to(key: str, keys: Sequence[str], threshold: float) -> list[tuple[int, float]]:
    """Indices in ``keys`` (and scores) of notes close to ``key`` but not equal to it."""
    from rapidfuzz import fuzz, process

    floor = score_floor(threshold)
    hits = process.extract(key, keys, scorer=fuzz.ratio, score_cutoff=floor, limit=None)
    # The threshold decides, not rapidfuzz's cutoff (:func:`score_floor`).
    return [
        (idx, float(score)) for _, score, idx in hits if keys[idx] != key and score >= threshold
    ]


class SimilarPass:
    """``check``'s ``similar`` pass over one store's keys, cut into blocks of work.

    Each block (:func:`score_block`) is scored on its own, in any order and on any
    thread (``cdist`` releases the GIL while it scores), and :func:`pass_pairs` puts the
    blocks' pairs back together: the same pairs as :func:`key_pairs`, which runs the
    blocks one after the other, and as :func:`similar_pairs` at the same ``limit``.
    :class:`ScoredBlocks` keeps the blocks' pairs and says which blocks are still needed:
    none after the block whose row reaches the limit. Plain data: whoever runs the blocks
    (the shell: ``memory_ls.store.similar_pass``) owns the threads or the process they
    run in.
    """

    __slots__ = (
        "blocks",
        "cutoff",
        "lengths",
        "limit",
        "matrix",
        "order",
        "ranked",
        "short",
        "threshold",
    )

    def __init__(
        self, keys: Sequence[str], threshold: float, limit: int | None = SIMILAR_LIMIT
    ) -> None:
        """``keys``: the keys compared, each once (:func:`compared_keys`); ``limit``: the
        pairs kept (:func:`rows_to_limit`), ``None`` for every pair."""
        n = len(keys)
        self.threshold = threshold
        self.limit = limit
        self.cutoff = max(0, min(100, int(threshold)))
        self.order = sorted(range(n), key=lambda i: len(keys[i]))
        self.ranked = [keys[i] for i in self.order]
        """The keys, shortest first: a row is scored only against the keys after it."""
        self.lengths = [len(k) for k in self.ranked]
        self.matrix = (
            n >= MATRIX_FROM and score_floor(threshold) >= 1 and similar_matrix_available()
        )
        """Blocks of :data:`SERVER_BLOCK` rows scored with ``cdist`` on the calling thread
        (on one worker: the least CPU; two threads share the cores); otherwise the
        row pass, as one block."""
        self.blocks: list[tuple[int, int, int]] = (
            _blocks(self.lengths, self.cutoff, SERVER_BLOCK)
            if self.matrix
            else ([(0, n, n)] if n >= 2 else [])
        )
        """``(start, end, stop)``: rows ``start`` to ``end`` against keys up to ``stop``."""
        self.short = _without_dropped(self.ranked) if self.matrix else []
        """The keys without :data:`DROPPED`'s characters, which the filter scores."""


def compared_notes(bullets: Sequence[Bullet]) -> list[Bullet]:
    """The notes the ``similar`` pass compares: the first of each key, in file order (a
    later note with a seen key is a ``duplicate``, not a paraphrase)."""
    seen: set[str] = set()
    see = seen.add
    notes = []
    for b in bullets:
        if b.note and b.key not in seen:  # (`b.note`: not `b.blank`, a property call a note)
            see(b.key)
            notes.append(b)
    return notes


def compared_keys(notes: Sequence[Bullet]) -> list[str]:
    """The keys of :func:`compared_notes`, which :class:`SimilarPass` scores."""
    return [b.key for b in notes]


def score_block(p: SimilarPass, index: int) -> list[Pair]:
    """The close pairs ``(row, column, score)`` (positions in ``p.ranked``) of block
    ``index``, its rows under :func:`rows_to_limit`'s rule at ``p.limit``: at most that
    many pairs, and no row scored after the one that reaches it (a block of near-identical
    notes costs one row's hits, not every row's). Fewer pairs than its rows hold only
    when it reached the limit itself."""
    start, end, stop = p.blocks[index]
    if not p.matrix:
        return _row_pairs(p.ranked, p.lengths, p.cutoff, p.threshold, p.limit)
    return rows_to_limit(_filtered_rows(p, start, end, stop), p.limit)[0]


class ScoredBlocks:
    """The pairs of the blocks of a :class:`SimilarPass` scored so far, in any order, and
    how many blocks :func:`pass_pairs` needs: :attr:`end`, the blocks before it.

    A block's pairs (:func:`score_block`) are all its rows' hits unless it reached
    ``limit`` itself. So wherever blocks ``k`` to ``m`` are all scored and hold ``limit``
    pairs between them, the rows of blocks 0 to ``m`` hold at least as many: the rule
    stops in one of them, and no block after ``m`` is needed. Its pairs are dropped as
    soon as that is known, and it is not worth scoring (:meth:`needed`). A pass scored
    from both ends holds at most two runs of blocks, each under ``limit`` pairs but for
    its last block: a few times ``limit`` pairs in all, whatever the store.
    Not thread-safe: the caller holds a lock around it.
    """

    __slots__ = ("counts", "done", "end", "limit", "pairs")

    def __init__(self, p: SimilarPass) -> None:
        self.limit = p.limit
        self.pairs: list[list[Pair] | None] = [None] * len(p.blocks)
        """Each block's pairs once scored; ``None`` before, and from :attr:`end` on."""
        self.counts = [0] * len(p.blocks)
        """How many pairs each scored block kept."""
        self.done = bytearray(len(p.blocks))
        """1 for each block scored (a byte string: its runs are found by C loops)."""
        self.end = len(p.blocks)

    def needed(self, index: int) -> bool:
        """Whether block ``index`` may hold pairs that :func:`pass_pairs` keeps."""
        return index < self.end

    def put(self, index: int, pairs: list[Pair]) -> None:
        """File the pairs of block ``index``; lower :attr:`end` if the limit is now known
        to be reached before it."""
        if index >= self.end:
            return
        self.pairs[index], self.counts[index], self.done[index] = pairs, len(pairs), 1
        if self.limit is None:
            return
        # The run of scored blocks around this one (any other run was looked at when
        # its last block came, and held under the limit).
        first = self.done.rfind(0, 0, index) + 1
        last = self.done.find(0, index, self.end)
        run = self.counts[first : self.end if last < 0 else last]
        if sum(run) < self.limit:
            return
        end = first + bisect.bisect_left(list(itertools.accumulate(run)), self.limit) + 1
        for k in range(end, self.end):
            self.pairs[k] = None
        self.end = end


DROPPED = " eta"
"""Characters left out of the keys that ``check``'s filter scores (the most common in
English notes). Shorter keys are cheaper cells (a key of 33-64 characters takes a quarter
of a SIMD vector, one of 17-32 an eighth) and the filter stays exact: see
:func:`_filtered_rows`. Any set would be exact; this one leaves a note a third shorter,
~3x less CPU for the pass on 4500 and paraphrase (10000's short keys: ~1.4x)."""


_DROPPED_BYTES = DROPPED.encode("ascii")


def _without_dropped(keys: list[str]) -> list[str]:
    """``keys`` without :data:`DROPPED`'s characters (all at once: a few C passes).

    Deleted as bytes from the keys' UTF-8 (one pass, ~4x faster than a ``str.replace``
    per character on 4500 notes): DROPPED is ASCII, and an ASCII byte is never part of
    another character's bytes (``surrogatepass``: a lone surrogate makes the round trip).
    """
    joined = "\n".join(keys).encode("utf-8", "surrogatepass")
    short = joined.translate(None, _DROPPED_BYTES).decode("utf-8", "surrogatepass").split("\n")
    if len(short) == len(keys):
        return short
    # A key with a line break (not from a file's lines): one at a time.
    out = []
    for key in keys:
        for char in DROPPED:
            key = key.replace(char, "")
        out.append(key)
    return out


def _filtered_rows(
    p: SimilarPass, start: int, end: int, stop: int
) -> Iterator[list[tuple[int, int, float]]]:
    """The rows of a block of :class:`SimilarPass`, as :func:`_block_rows` finds them, from
    a cheaper matrix: the Indel distance (``len(a) + len(b) - 2 * LCS``) of the keys
    without :data:`DROPPED`'s characters, as a filter, each cell that passes scored in full.

    Exact. Leaving out characters never makes the distance larger: of a longest common
    subsequence of two keys, the characters kept are common to the short keys and at most
    ``min(c1, c2)`` were left out (``c``: the characters a key lost), so the short keys'
    distance is at most the keys' own, less ``|c1 - c2|``. A pair that reaches the
    threshold is within ``(100 - threshold)%`` of its two lengths, and no two keys of the
    block are longer than its longest row's and its window's last: a cell over that bound
    (which ``cdist`` writes as bound + 1) holds no pair; every other cell is scored with
    ``ratio`` and kept as the matrix pass keeps it (from a row where most cells pass on, the
    rest of the block as a ``ratio`` matrix: :data:`DENSE_ROW`). A block whose bound does not fit a
    byte is scored as a ``ratio`` matrix (:func:`_block_rows`).
    """
    lengths = p.lengths
    col = _first_column(lengths, p.cutoff, start, start, stop)
    if col >= stop:
        return  # rows that reach no key
    bound = int((100 - p.threshold) * (lengths[end - 1] + lengths[stop - 1]) / 100 + 1e-6)
    if bound < 0:
        return  # a threshold over 100: no pair
    if bound > 254:
        yield from _block_rows(p.ranked, start, end, stop, p.cutoff, p.threshold, 1, col)
        return
    distances = _distance_block(p.short[start:end], p.short[col:stop], bound)
    yield from _hit_rows(
        p.ranked, start, end, stop - col, distances, bound + 1, p.threshold, True, col
    )


def _distance_block(queries: list[str], choices: list[str], bound: int) -> bytes:
    """The uint8 matrix of Indel distances, a cell over ``bound`` (< 255) written as
    ``bound + 1``; on the calling thread (``cdist`` releases the GIL while it scores)."""
    from rapidfuzz.distance import Indel

    found = compiled_cdist()
    assert found is not None  # SimilarPass.matrix checked
    cdist, uint8 = found
    scores = cdist(
        queries, choices, scorer=Indel.distance, score_cutoff=bound, dtype=uint8, workers=1
    )
    return memoryview(scores).tobytes()


def pass_pairs(p: SimilarPass, scored: Sequence[Sequence[Pair] | None]) -> list[Pair]:
    """The close pairs ``(i, j, score)``, ``i < j`` indices in the keys of ``p``, sorted,
    as :func:`similar_pairs` gives them at ``p.limit``: the blocks' rows walked in order
    under :func:`rows_to_limit`'s rule. Every block up to the one whose row reaches the
    limit must be scored (``ValueError`` if one is not); the blocks after it are not read."""
    if len(scored) != len(p.blocks):
        raise ValueError("every block of the similar pass must be scored")

    def rows() -> Iterator[list[Pair]]:
        for pairs in scored:
            if pairs is None:
                raise ValueError("every block of the similar pass must be scored")
            row: list[Pair] = []
            for hit in pairs:
                if row and hit[0] != row[0][0]:
                    yield row
                    row = []
                row.append(hit)
            if row:
                yield row

    kept, _ = rows_to_limit(rows(), p.limit)
    order = p.order
    return sorted((min(order[r], order[c]), max(order[r], order[c]), s) for r, c, s in kept)


def similar_findings(bullets: Sequence[Bullet], threshold: float) -> list[Finding]:
    """A ``similar`` hint on the later note of each close pair (every block of
    :class:`SimilarPass` in turn, on this thread)."""
    notes = compared_notes(bullets)
    return pair_findings(notes, key_pairs(compared_keys(notes), threshold))


def key_pairs(
    keys: Sequence[str], threshold: float, limit: int | None = SIMILAR_LIMIT
) -> list[Pair]:
    """The close pairs ``(i, j, score)``, ``i < j`` indices in ``keys`` (each key once),
    sorted: :func:`similar_pairs`'s at ``limit``. The blocks of the :class:`SimilarPass`
    over ``keys`` scored in turn on this thread, up to the one whose row reaches ``limit``
    (:func:`pass_pairs`)."""
    p = SimilarPass(keys, threshold, limit)
    scored = ScoredBlocks(p)
    for k in range(len(p.blocks)):
        if not scored.needed(k):
            break
        scored.put(k, score_block(p, k))
    return pass_pairs(p, scored.pairs)


def pair_findings(notes: list[Bullet], pairs: list[Pair]) -> list[Finding]:
    """One hint per note, pointing at its closest earlier note: a cluster of
    paraphrases must not flood the Problems panel."""
    best: dict[int, tuple[int, float]] = {}
    for i, j, score in pairs:
        if j not in best or score > best[j][1]:
            best[j] = (i, score)
    return [pair_finding(notes[i], notes[j], score) for j, (i, score) in sorted(best.items())]


def pair_finding(first: Bullet, later: Bullet, score: float) -> Finding:
    """The hint for one close pair, on the later note."""
    return Finding(
        "similar",
        later.line,
        later.start,
        later.line,
        later.end,
        f"Similar to the note on line {first.line + 1} ({score:.0f}% alike): "
        f"{escape_unseen(first.note)}",
        SimilarData(note=later.note, first=first.note, firstLine=first.line, score=score),
        (Related(first.line, first.start, first.end, "Similar note"),),
    )
