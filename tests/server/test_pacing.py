"""The pacer: one loop timer runs every due callback, in deadline order, never earlier
than its time minus the quantum, and what is due within the quantum in the same run;
a loop that is gone leaves no pacer behind."""

from __future__ import annotations

import asyncio
import gc
import socket
import weakref

import pytest

from harness.server import pacing
from harness.server.connection import Connection


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


@pytest.mark.timeout(10)
def test_callbacks_due_within_the_quantum_share_one_run_and_none_runs_earlier() -> None:
    quantum = 0.05  # wide, so the test does not depend on how late the loop is

    async def main() -> list[tuple[str, float, float, float]]:
        loop = asyncio.get_running_loop()
        p = pacing.Pacer(loop, quantum)
        ran: list[tuple[str, float, float, float]] = []  # name, when, ran at, run's horizon
        done = asyncio.Event()
        t0 = loop.time()
        whens = {"a": t0 + 0.02, "b": t0 + 0.06, "c": t0 + 0.3}

        def make(name: str, when: float) -> None:
            def cb() -> None:
                ran.append((name, when, loop.time(), p.horizon))
                if len(ran) == len(whens):
                    done.set()

            p.call_at(when, cb)

        for name, when in whens.items():
            make(name, when)
        await asyncio.wait_for(done.wait(), 5)
        assert p.horizon == float("-inf")  # between runs
        return ran

    ran = asyncio.run(main())
    by = {name: (when, at, horizon) for name, when, at, horizon in ran}
    assert [name for name, *_ in ran] == ["a", "b", "c"]
    assert by["a"][1] >= by["a"][0]  # the timer itself fires at the earliest deadline
    assert by["b"][2] == by["a"][2]  # b was due within a quantum of a's run: the same run
    assert all(at >= when - quantum for when, at, _ in by.values())  # never earlier than that
    assert all(when <= horizon for when, _, horizon in by.values())


@pytest.mark.timeout(10)
def test_frames_due_within_the_quantum_go_out_in_one_write_with_their_records() -> None:
    quantum = 0.05

    async def main() -> tuple[list[tuple[bytes, float]], list[list[int]], list[float]]:
        loop = asyncio.get_running_loop()
        pacing._PACERS[loop] = pacing.Pacer(loop, quantum)  # this loop's pacer, wide quantum
        made: asyncio.Future[Connection] = loop.create_future()
        server = await loop.create_server(
            lambda: Connection(made.set_result, lambda kind, **_: None), "127.0.0.1", 0
        )
        client = socket.create_connection(server.sockets[0].getsockname()[:2])
        conn = await asyncio.wait_for(made, 5)
        writes: list[tuple[bytes, float]] = []
        real = conn.transport.write  # type: ignore[union-attr]

        def counting(data: bytes) -> None:
            writes.append((bytes(data), loop.time()))
            real(data)

        conn.transport.write = counting  # type: ignore[method-assign,union-attr]
        t0 = loop.time()
        times = [t0 + 0.02, t0 + 0.05, t0 + 0.4]
        frames = [b"one;", b"two;", b"three;"]
        details = [(("n", k + 1),) for k in range(3)]
        plan = pacing.Stretch(frames, times, [1, 2, 3], details, [0, 4, 8, 14], False)
        records: list[list[int]] = []
        written = await pacing.write_due(
            conn, plan, lambda batch: records.append([dict(d)["n"] for d in batch])
        )
        assert written == 3
        client.close()
        conn.close()
        server.close()
        await server.wait_closed()
        return writes, records, times

    writes, records, times = asyncio.run(main())
    assert writes[0][0].startswith(b"one;two;")  # one write for the frames of one run
    assert b"".join(w for w, _ in writes) == b"one;two;three;"
    assert records[0][:2] == [1, 2] and sum(records, []) == [1, 2, 3]
    assert writes[0][1] >= times[0]  # the first is written at its time
    sent_at = {}
    for data, at in writes:
        for k, frame in enumerate((b"one;", b"two;", b"three;")):
            if frame in data:
                sent_at[k] = at
    assert all(sent_at[k] >= times[k] - quantum for k in range(3))
