"""The short switch interval: held by several threads at once, put back when the last ends."""

from __future__ import annotations

import random
import sys
import threading

import pytest

from memory_ls.store import switches
from memory_ls.store.switches import SWITCH_INTERVAL, short_switches, switches_shortened

FOUND = 0.004
"""Not the default, so that putting back any other value shows; one that reads back as
set (``sys.setswitchinterval(sys.getswitchinterval())`` changes some values by 1 µs)."""


@pytest.fixture(autouse=True)
def _found_interval():
    before = sys.getswitchinterval()
    assert switches._switches_held == 0
    sys.setswitchinterval(FOUND)
    assert sys.getswitchinterval() == FOUND
    yield
    assert switches._switches_held == 0
    sys.setswitchinterval(before)


def test_nested_holds_put_back_the_found_interval_only_when_the_last_ends():
    with switches_shortened():
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)
        with switches_shortened():
            assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)
    assert sys.getswitchinterval() == FOUND


def test_holds_ending_out_of_order_put_back_the_found_interval():
    short_switches(True)
    short_switches(True)
    short_switches(True)
    for _ in range(2):
        short_switches(False)
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)
    short_switches(False)
    assert sys.getswitchinterval() == FOUND


def test_an_exception_in_the_block_still_puts_it_back():
    with pytest.raises(ValueError), switches_shortened(), switches_shortened():
        raise ValueError("inside")
    assert sys.getswitchinterval() == FOUND
    # and the next hold still finds (and puts back) the right one
    with switches_shortened():
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)
    assert sys.getswitchinterval() == FOUND


def test_an_interval_already_shorter_is_kept():
    shorter = 0.000125  # (reads back as set)
    assert shorter < SWITCH_INTERVAL
    sys.setswitchinterval(shorter)
    with switches_shortened():
        assert sys.getswitchinterval() == shorter
    assert sys.getswitchinterval() == shorter


def _drifting(microseconds: range) -> list[float]:
    """Intervals, each as read back, that setting again would shorten by a microsecond
    (CPython keeps whole microseconds, rounded down: 209 µs reads back as
    0.00020899999999999998, which sets 208 µs)."""
    found = []
    for count in microseconds:
        sys.setswitchinterval(count * 1e-6)
        read = sys.getswitchinterval()
        sys.setswitchinterval(read)
        if sys.getswitchinterval() != read:
            found.append(read)
    return found


def test_a_found_interval_that_would_not_read_back_the_same_is_put_back_exactly():
    drifting = _drifting(range(201, 1000))
    assert drifting, "no interval here that setting again changes"
    for found in drifting:
        sys.setswitchinterval(found + 0.5e-6)  # (as found: 209 µs read as 208.99...)
        assert sys.getswitchinterval() == found
        with switches_shortened(), switches_shortened():
            assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)
        assert sys.getswitchinterval() == found
        # and again, after any number of holds
        for _ in range(3):
            with switches_shortened():
                pass
        assert sys.getswitchinterval() == found


def test_a_found_interval_no_longer_than_the_short_one_is_never_set_again():
    drifting = _drifting(range(1, 200))
    assert drifting
    for found in drifting:
        sys.setswitchinterval(found + 0.5e-6)
        assert sys.getswitchinterval() == found
        with switches_shortened():
            assert sys.getswitchinterval() == found
        assert sys.getswitchinterval() == found


@pytest.mark.parametrize("seed", range(5))
def test_threads_overlapping_in_any_order_put_back_the_found_interval(seed):
    """Threads hold in turns: each takes its hold, all wait at a barrier (every hold is
    taken at once), then they let go in a shuffled order, one at a time; the interval
    stays short until the very last lets go."""
    count = 8
    order = list(range(count))
    random.Random(seed).shuffle(order)
    turns = [threading.Event() for _ in range(count)]
    all_held = threading.Barrier(count)
    seen: dict[int, float] = {}
    errors: list[BaseException] = []

    def run(me: int) -> None:
        try:
            with switches_shortened():
                all_held.wait(timeout=10)
                assert turns[me].wait(timeout=10)
                seen[me] = sys.getswitchinterval()
            position = order.index(me)
            if position + 1 < count:
                turns[order[position + 1]].set()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    turns[order[0]].set()
    for thread in threads:
        thread.join(timeout=20)
    assert not errors
    assert all(not thread.is_alive() for thread in threads)
    assert all(value == pytest.approx(SWITCH_INTERVAL) for value in seen.values())
    assert len(seen) == count
    assert sys.getswitchinterval() == FOUND


def test_many_threads_holding_and_letting_go_at_random_end_where_they_began():
    errors: list[BaseException] = []

    def run(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(300):
                depth = rng.randint(1, 3)
                for _ in range(depth):
                    short_switches(True)
                    assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)
                for _ in range(depth):
                    short_switches(False)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors
    assert switches._switches_held == 0
    assert sys.getswitchinterval() == FOUND


def test_a_check_pass_and_a_server_thread_holding_together():
    """A ``similar`` pass's hold (``ThreadedPass``) overlapping the project-files
    thread's block: whichever ends last puts the found interval back."""
    from memory_ls.store.similar_pass import ThreadedPass

    keys = [f"note number {i} about topic {i % 7}" for i in range(400)]
    inside = threading.Event()
    leave = threading.Event()

    def server_thread() -> None:
        with switches_shortened():
            inside.set()
            leave.wait(timeout=10)

    thread = threading.Thread(target=server_thread)
    thread.start()
    assert inside.wait(timeout=10)
    try:
        threaded = ThreadedPass(keys, True)
        assert switches._switches_held == 2, "the pass's second thread holds too"
        threaded.pairs()
        assert switches._switches_held == 1
        # the pass has ended; the server thread still holds
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)
    finally:
        leave.set()
        thread.join(timeout=10)
    assert sys.getswitchinterval() == FOUND
