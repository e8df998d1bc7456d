"""LoopThread: a background event loop that starts, serves calls and stops on demand."""

from __future__ import annotations

import asyncio
import threading

import pytest

from harness.loopthread import LoopThread, LoopThreadError

pytestmark = pytest.mark.timeout(20)


def test_setup_runs_on_the_loop_thread_and_calls_return_their_result() -> None:
    seen: list[str] = []

    async def setup() -> None:
        seen.append(threading.current_thread().name)

    async def double(x: int) -> int:
        return 2 * x

    lt = LoopThread("lt-test")
    lt.start(setup)
    try:
        assert seen == ["lt-test"] and lt.running
        assert lt.call(double(21), timeout_s=5) == 42
    finally:
        lt.stop()
    assert not lt.running and not lt.started


def test_a_setup_error_is_raised_in_the_caller_and_the_thread_ends() -> None:
    async def setup() -> None:
        raise OSError("address in use")

    lt = LoopThread("lt-fail")
    with pytest.raises(OSError, match="address in use"):
        lt.start(setup)
    assert not lt.started
    assert not [t for t in threading.enumerate() if t.name == "lt-fail"]


def test_stop_right_after_start_runs_shutdown_and_returns() -> None:
    shut: list[bool] = []

    async def setup() -> None:
        return None

    async def shutdown() -> None:
        await asyncio.sleep(0)
        shut.append(True)

    for _ in range(20):  # the loop must be running when start() returns, every time
        lt = LoopThread("lt-quick")
        lt.start(setup)
        lt.stop(shutdown, timeout_s=5)
        lt.stop(shutdown, timeout_s=5)  # idempotent
    assert shut == [True] * 20


def test_call_on_a_stopped_loop_is_refused_without_leaking_the_coroutine() -> None:
    async def nothing() -> None:
        return None

    lt = LoopThread("lt-stopped")
    with pytest.raises(LoopThreadError, match="not running"):
        lt.call(nothing())
