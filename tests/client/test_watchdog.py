"""Deadline enforcement: the sync watchdog thread (driven by a fake clock), the real
socket mechanics it relies on, and the async cancel scope."""

from __future__ import annotations

import asyncio
import socket
import threading

import pytest

from harness.client import ClientSettings
from harness.client.clock import FakeClock
from harness.client.deadlines import DeadlineState
from harness.client.watchdog import AsyncWatchdog, Watchdog, owns_attempt

S = ClientSettings(first_byte_s=0.3, stream_idle_s=0.3, stale_call_s=1.0, hard_ceiling_s=5.0)
WAIT = 5.0  # generous bound for a thread hop; never reached when things work


def make(clock: FakeClock, settings: ClientSettings = S) -> Watchdog:
    return Watchdog(DeadlineState(settings, call_started_at=clock.now()), clock=clock)


@pytest.mark.timeout(20)
def test_first_byte_deadline_retires_the_attempt_and_calls_abort_when_due() -> None:
    clock = FakeClock()
    aborted = threading.Event()
    with make(clock) as wd:
        token = wd.start_attempt(aborted.set)
        clock.advance(0.29)
        clock.advance(0.02)
        assert aborted.wait(WAIT)
        assert not owns_attempt(token)
        deadline, fired_at = wd.fired[0]
        assert (
            deadline.name == "first_byte_s" and fired_at >= deadline.at == clock.now() - 0.31 + 0.3
        )
        assert wd.end_attempt(token) is deadline


@pytest.mark.timeout(20)
def test_content_pushes_the_idle_deadline_back() -> None:
    clock = FakeClock()
    aborted = threading.Event()
    with make(clock) as wd:
        token = wd.start_attempt(aborted.set)
        wd.content()
        clock.advance(0.2)
        wd.content()
        last = clock.now()
        clock.advance(0.2)
        clock.advance(0.11)
        assert aborted.wait(WAIT)
        deadline, fired_at = wd.fired[0]
        assert deadline.name == "stream_idle_s"
        assert deadline.at == pytest.approx(last + 0.3) and fired_at >= deadline.at
        assert token.retired_by is deadline


@pytest.mark.timeout(20)
def test_comment_drip_is_ended_by_the_stale_call_deadline() -> None:
    clock = FakeClock()
    aborted = threading.Event()
    with make(clock) as wd:
        wd.start_attempt(aborted.set)
        wd.content()
        for _ in range(12):  # 1.2 s of comments every 0.1 s: idle never fires
            clock.advance(0.1)
            wd.comment()
        assert aborted.wait(WAIT)
        assert wd.fired[0][0].name == "stale_call_s"


@pytest.mark.timeout(20)
def test_an_attempt_that_ends_in_time_is_never_retired() -> None:
    clock = FakeClock()
    with make(clock) as wd:
        token = wd.start_attempt(lambda: pytest.fail("aborted a finished attempt"))
        wd.content()
        assert wd.end_attempt(token) is None
        clock.advance(2.0)  # past every per-attempt deadline, before the ceiling
        assert wd.wait(0.0)  # a barrier through the watchdog's lock
    assert token.alive and wd.fired == []


@pytest.mark.timeout(20)
def test_backoff_wait_returns_when_due_and_stops_at_the_hard_ceiling() -> None:
    clock = FakeClock()
    with make(clock, S.replace(hard_ceiling_s=1.0)) as wd:
        done: list[bool] = []
        waiter = threading.Thread(target=lambda: done.append(wd.wait(0.5)))
        waiter.start()
        clock.wait_for_timed(timeout_s=WAIT)  # it has read the clock: advance moves past it
        clock.advance(0.6)
        waiter.join()
        assert done == [True]
        waiter = threading.Thread(target=lambda: done.append(wd.wait(5.0)))
        waiter.start()
        clock.wait_for_timed(timeout_s=WAIT)
        clock.advance(0.5)  # past the 1.0 s ceiling, long before the 5 s wait
        waiter.join()
        assert done == [True, False]


@pytest.mark.timeout(20)
def test_cancel_interrupts_a_backoff_wait() -> None:
    clock = FakeClock()
    with make(clock) as wd:
        result: list[bool] = []
        waiter = threading.Thread(target=lambda: result.append(wd.wait(100.0)))
        waiter.start()
        wd.cancel()
        waiter.join()
        assert result == [False]


def test_the_watchdog_thread_is_gone_after_the_call() -> None:
    with make(FakeClock()):
        assert any(t.name == "harness-watchdog" for t in threading.enumerate())
    assert not any(t.name == "harness-watchdog" for t in threading.enumerate())


# --------------------------------------------------------------------------- real sockets


def _silent_pair() -> tuple[socket.socket, socket.socket, socket.socket]:
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    server, _ = listener.accept()
    return listener, client, server


@pytest.mark.timeout(20)
def test_deadline_shutdown_wakes_a_reader_blocked_on_a_silent_socket() -> None:
    # A real socket, the test's clock: when it fires is exact, that it wakes recv is real.
    clock = FakeClock()
    listener, client, server = _silent_pair()
    woke = threading.Event()
    got: list[bytes] = []

    def reader() -> None:
        got.append(client.recv(100))
        woke.set()

    try:
        settings = ClientSettings(
            first_byte_s=0.1, stream_idle_s=None, stale_call_s=None, hard_ceiling_s=None
        )
        with make(clock, settings) as wd:
            t = threading.Thread(target=reader)
            t.start()
            wd.start_attempt(lambda: client.shutdown(socket.SHUT_RDWR))
            clock.advance(0.1)
            assert woke.wait(WAIT)
            t.join()
            fired_at = wd.fired[0][1]
        assert got == [b""]
        assert fired_at == wd.fired[0][0].at  # how late on a real clock: `harness bench watchdog`
    finally:
        for s in (client, server, listener):
            s.close()


# --------------------------------------------------------------------------- async


@pytest.mark.timeout(20)
def test_async_first_byte_deadline_retires_the_token_and_calls_abort_on_the_loop() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        wd = AsyncWatchdog(DeadlineState(S.replace(first_byte_s=0.05), call_started_at=loop.time()))
        aborted = asyncio.Event()
        with wd.attempt(aborted.set) as token:
            await asyncio.wait_for(aborted.wait(), WAIT)  # silent until the deadline aborts
        assert not owns_attempt(token) and token.retired_by is not None
        assert token.retired_by.name == "first_byte_s" and token.number == 1
        assert wd.fired[0][1] >= wd.fired[0][0].at

    asyncio.run(main())


@pytest.mark.timeout(20)
def test_async_content_pushes_the_idle_deadline_back() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        wd = AsyncWatchdog(
            DeadlineState(S.replace(stream_idle_s=0.15), call_started_at=loop.time())
        )
        aborted = asyncio.Event()
        with wd.attempt(aborted.set) as token:
            for _ in range(5):  # 5 x 0.05 s = 0.25 s > 0.15 s idle, but fed each time
                await asyncio.sleep(0.05)
                wd.content()
                assert not aborted.is_set()
            await asyncio.wait_for(aborted.wait(), WAIT)
        assert token.retired_by is not None and token.retired_by.name == "stream_idle_s"

    asyncio.run(main())


@pytest.mark.timeout(20)
def test_async_attempt_that_ends_in_time_is_never_retired() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        wd = AsyncWatchdog(DeadlineState(S.replace(first_byte_s=0.05), call_started_at=loop.time()))
        with wd.attempt(lambda: pytest.fail("aborted a finished attempt")) as token:
            wd.content()
        await asyncio.sleep(0.1)  # past the deadline it would have had: the timer is gone
        assert owns_attempt(token) and wd.fired == []

    asyncio.run(main())


@pytest.mark.timeout(20)
def test_the_first_activity_arms_the_idle_deadline_even_when_nothing_else_is_armed() -> None:
    """Regression: content used to update the state without waking the thread, so an
    idle deadline armed by the first byte waited for some other deadline (or forever)."""
    clock = FakeClock()
    aborted = threading.Event()
    only_idle = ClientSettings(
        first_byte_s=None, stream_idle_s=0.3, stale_call_s=None, hard_ceiling_s=None
    )
    with make(clock, only_idle) as wd:
        wd.start_attempt(aborted.set)
        wd.content()
        clock.advance(0.31)
        assert aborted.wait(WAIT)
        assert wd.fired[0][0].name == "stream_idle_s"


@pytest.mark.timeout(20)
def test_an_earlier_idle_deadline_is_not_left_waiting_behind_a_later_first_byte_one() -> None:
    clock = FakeClock()
    aborted = threading.Event()
    with make(clock, S.replace(first_byte_s=10.0, stale_call_s=None, hard_ceiling_s=None)) as wd:
        wd.start_attempt(aborted.set)
        wd.comment()  # first activity: idle due at +0.3, long before first byte at +10
        clock.advance(0.31)
        assert aborted.wait(WAIT)
        assert wd.fired[0][0].name == "stream_idle_s"


# --------------------------------------------------------------------------- async waits


def _async_wd(clock: FakeClock, settings: ClientSettings = S) -> AsyncWatchdog:
    return AsyncWatchdog(DeadlineState(settings, call_started_at=clock.now()), clock=clock)


async def _advance_when_waiting(clock: FakeClock, seconds: float) -> None:
    """Advance once the wait has set its timer (read on a worker thread: the wait for
    the registration blocks, the loop must go on)."""
    await asyncio.to_thread(clock.wait_for_timed, timeout_s=WAIT)
    clock.advance(seconds)


@pytest.mark.timeout(20)
def test_async_backoff_wait_returns_when_due_and_stops_at_the_hard_ceiling() -> None:
    async def main() -> None:
        clock = FakeClock()
        wd = _async_wd(clock, S.replace(hard_ceiling_s=1.0))
        waiting = asyncio.create_task(wd.wait(0.5))
        await _advance_when_waiting(clock, 0.6)
        assert await asyncio.wait_for(waiting, WAIT) is True
        waiting = asyncio.create_task(wd.wait(5.0))
        await _advance_when_waiting(clock, 0.5)  # past the 1.0 s ceiling, not the 5 s wait
        assert await asyncio.wait_for(waiting, WAIT) is False

    asyncio.run(main())


@pytest.mark.timeout(20)
def test_async_cancel_interrupts_a_backoff_wait() -> None:
    async def main() -> None:
        clock = FakeClock()
        wd = _async_wd(clock)
        waiting = asyncio.create_task(wd.wait(100.0))
        await asyncio.to_thread(clock.wait_for_timed, timeout_s=WAIT)
        wd.cancel()
        assert await asyncio.wait_for(waiting, WAIT) is False
        assert clock.now() == 1000.0  # no time passed: the cancel ended it

    asyncio.run(main())


@pytest.mark.timeout(20)
def test_async_deadline_fires_on_the_injected_clock() -> None:
    async def main() -> None:
        clock = FakeClock()
        wd = _async_wd(clock)
        aborted = asyncio.Event()
        with wd.attempt(aborted.set) as token:
            await _advance_when_waiting(clock, 0.29)
            await asyncio.sleep(0)
            assert not aborted.is_set()  # the 0.3 s first-byte deadline is not due yet
            clock.advance(0.02)
            await asyncio.wait_for(aborted.wait(), WAIT)
        assert token.retired_by is not None and token.retired_by.name == "first_byte_s"
        assert wd.fired[0][1] == pytest.approx(1000.31)

    asyncio.run(main())
