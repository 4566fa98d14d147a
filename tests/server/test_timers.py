"""The server's delayed calls (``background.Timers``): one pending call per kind and key,
the last one asked for, run once at the last time asked for."""

from __future__ import annotations

import asyncio

from memory_ls.server.background import Timers


async def test_a_replaced_call_runs_once_the_last_one_at_the_last_time() -> None:
    loop = asyncio.get_running_loop()
    ran: list[tuple[str, float]] = []
    timers = Timers(lambda message: ran.append((message, loop.time())))
    started = loop.time()
    for i in range(5):
        timers.later("kind", "key", 0.05, lambda i=i: ran.append((f"call {i}", loop.time())))
        await asyncio.sleep(0.02)  # each replaces the last before it was due
    await asyncio.sleep(0.2)
    assert [what for what, _ in ran] == ["call 4"]
    assert ran[0][1] - started >= 4 * 0.02 + 0.05  # not before the last call's time


async def test_a_call_due_sooner_is_not_held_back_by_the_one_it_replaces() -> None:
    loop = asyncio.get_running_loop()
    ran: list[str] = []
    timers = Timers(ran.append)
    timers.later("kind", "key", 10.0, lambda: ran.append("late"))
    timers.later("kind", "key", 0.01, lambda: ran.append("soon"))
    started = loop.time()
    while not ran and loop.time() - started < 2:
        await asyncio.sleep(0.01)
    assert ran == ["soon"]


async def test_kinds_and_keys_are_apart_and_a_failure_is_reported() -> None:
    ran: list[str] = []
    timers = Timers(ran.append)

    def fails() -> None:
        raise ValueError("boom")

    timers.later("a", "1", 0.01, lambda: ran.append("a1"))
    timers.later("a", "2", 0.01, lambda: ran.append("a2"))
    timers.later("b", "1", 0.01, fails)
    await asyncio.sleep(0.1)
    assert sorted(ran) == ["a1", "a2", "memory-ls: b failed: ValueError('boom')"]
    timers.later("a", "1", 0.01, lambda: ran.append("again"))  # (a call that ran is gone)
    await asyncio.sleep(0.1)
    assert ran[-1] == "again"


class _Held:
    """Something a delayed call holds (a document, in the server)."""


async def test_what_a_call_held_is_freed_once_it_ran_without_a_collection() -> None:
    """A call that ran, replaced or moved, leaves no cycle behind: what it held is freed
    by its count (the timer's closure and the pending call held each other, and a closed
    store's document stayed until a full collection: ~2 MB of the server's peak)."""
    import gc
    import weakref

    timers = Timers(lambda message: None)
    held = [_Held() for _ in range(3)]
    gone = [weakref.ref(h) for h in held]
    timers.later("kind", "moved", 0.01, lambda h=held[0]: None)
    timers.later("kind", "moved", 0.03, lambda h=held[1]: None)  # moves the deadline
    timers.later("kind", "sooner", 1.0, lambda: None)
    timers.later("kind", "sooner", 0.01, lambda h=held[2]: None)  # a timer of its own
    del held
    enabled = gc.isenabled()
    gc.disable()
    try:
        await asyncio.sleep(0.1)
        assert [ref() for ref in gone] == [None, None, None]
    finally:
        if enabled:
            gc.enable()
