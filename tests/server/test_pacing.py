"""The pacer: one loop timer runs every due callback, in deadline order, never early;
a loop that is gone leaves no pacer behind."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest

from harness.server import pacing


@pytest.mark.timeout(10)
def test_callbacks_run_in_deadline_order_never_before_their_time() -> None:
    async def main() -> list[tuple[int, float, float]]:
        loop = asyncio.get_running_loop()
        p = pacing.pacer()
        assert pacing.pacer() is p  # one per loop
        ran: list[tuple[int, float, float]] = []
        done = asyncio.Event()
        t0 = loop.time()
        whens = [t0 + 0.03, t0 + 0.01, t0 + 0.02, t0 + 0.01]

        def make(i: int, when: float) -> None:
            def cb() -> None:
                ran.append((i, when, loop.time()))
                if len(ran) == len(whens):
                    done.set()

            p.call_at(when, cb)

        for i, when in enumerate(whens):
            make(i, when)
        await asyncio.wait_for(done.wait(), 5)
        return ran

    ran = asyncio.run(main())
    assert [i for i, _, _ in ran] == [1, 3, 2, 0]  # by deadline, ties in call order
    assert all(actual >= when for _, when, actual in ran)


@pytest.mark.timeout(10)
def test_a_closed_loop_and_its_pacer_are_freed() -> None:
    async def main() -> None:
        ev = asyncio.Event()
        pacing.pacer().call_at(asyncio.get_running_loop().time(), ev.set)
        await asyncio.wait_for(ev.wait(), 5)

    loop = asyncio.new_event_loop()
    loop.run_until_complete(main())
    loop.close()
    ref = weakref.ref(loop)
    del loop
    gc.collect()
    assert ref() is None  # the pacer, still a value in pacing's table, did not hold it
