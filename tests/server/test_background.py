"""memory_ls/server/background.py: delayed calls, and a burst of asks coalesced into one."""

from __future__ import annotations

import asyncio

from memory_ls.server.background import Timers, burst_end

DELAY = 0.03
MAX_WAIT = 0.2


def test_a_burst_ends_a_delay_after_its_last_ask() -> None:
    assert burst_end(10.0, 10.0, DELAY, MAX_WAIT) == 10.0 + DELAY
    assert burst_end(10.0, 10.1, DELAY, MAX_WAIT) == 10.1 + DELAY


def test_a_burst_that_never_quiets_ends_max_wait_after_its_first_ask() -> None:
    assert burst_end(10.0, 10.19, DELAY, MAX_WAIT) == 10.0 + MAX_WAIT
    assert burst_end(10.0, 99.0, DELAY, MAX_WAIT) == 10.0 + MAX_WAIT


def _timers(reports: list[str] | None = None) -> Timers:
    return Timers((reports if reports is not None else []).append)


async def test_a_thousand_asks_in_a_row_are_one_call() -> None:
    timers = _timers()
    calls: list[float] = []
    loop = asyncio.get_running_loop()
    began = loop.time()
    for _ in range(1000):
        timers.coalesce("recheck", "", DELAY, MAX_WAIT, lambda: calls.append(loop.time()))
    await asyncio.sleep(DELAY * 4)
    assert len(calls) == 1
    assert calls[0] - began >= DELAY * 0.9


async def test_an_ask_during_the_quiet_pushes_the_call_back() -> None:
    timers = _timers()
    calls: list[float] = []
    loop = asyncio.get_running_loop()
    timers.coalesce("recheck", "", DELAY, MAX_WAIT, lambda: calls.append(loop.time()))
    await asyncio.sleep(DELAY / 2)
    last = loop.time()
    timers.coalesce("recheck", "", DELAY, MAX_WAIT, lambda: calls.append(loop.time()))
    await asyncio.sleep(DELAY * 0.7)
    assert calls == []  # the first ask's delay is over, not the last one's
    await asyncio.sleep(DELAY * 3)
    assert len(calls) == 1 and calls[0] - last >= DELAY * 0.9


async def test_asks_that_never_stop_still_get_the_call_in_time() -> None:
    timers = _timers()
    calls: list[float] = []
    loop = asyncio.get_running_loop()
    began = loop.time()
    while loop.time() - began < MAX_WAIT * 3:
        timers.coalesce("recheck", "", DELAY, MAX_WAIT, lambda: calls.append(loop.time()))
        await asyncio.sleep(DELAY / 5)
    # One call per MAX_WAIT at least: never pushed back for ever.
    assert len(calls) >= 2
    assert calls[0] - began < MAX_WAIT + DELAY


async def test_an_ask_after_the_call_is_a_new_burst() -> None:
    timers = _timers()
    calls: list[int] = []
    timers.coalesce("recheck", "", DELAY, MAX_WAIT, lambda: calls.append(1))
    await asyncio.sleep(DELAY * 3)
    timers.coalesce("recheck", "", DELAY, MAX_WAIT, lambda: calls.append(2))
    await asyncio.sleep(DELAY * 3)
    assert calls == [1, 2]


async def test_bursts_of_other_keys_are_their_own() -> None:
    timers = _timers()
    calls: list[str] = []
    for key in ("a", "b", "a", "b"):
        timers.coalesce("recheck", key, DELAY, MAX_WAIT, lambda k=key: calls.append(k))
    await asyncio.sleep(DELAY * 3)
    assert sorted(calls) == ["a", "b"]


async def test_a_call_that_fails_is_reported_and_the_next_burst_runs() -> None:
    reports: list[str] = []
    timers = _timers(reports)
    calls: list[int] = []

    def fail() -> None:
        raise RuntimeError("boom")

    timers.coalesce("recheck", "", DELAY, MAX_WAIT, fail)
    await asyncio.sleep(DELAY * 3)
    assert len(reports) == 1 and "recheck failed" in reports[0] and "boom" in reports[0]
    timers.coalesce("recheck", "", DELAY, MAX_WAIT, lambda: calls.append(1))
    await asyncio.sleep(DELAY * 3)
    assert calls == [1]
