"""``follow_up()`` takes a sync or an async callable and records the same fields."""

from __future__ import annotations

import asyncio

import pytest

from harness.targets.base import EventLog, Job, follow_up

pytestmark = pytest.mark.timeout(30)


def _job(url: str | None = "http://127.0.0.1:9/v1") -> Job:
    return Job(base_url="http://127.0.0.1:9/v1", follow_up_url=url)


def test_a_sync_call_is_recorded_when_follow_up_returns() -> None:
    log = EventLog()
    follow_up(_job(), log, lambda url: f"reply from {url}")
    assert log.details["follow_up"]["ok"] is True
    assert log.details["follow_up"]["chars"] == len("reply from http://127.0.0.1:9/v1")


def test_an_async_call_is_awaited_on_the_callers_loop_and_recorded() -> None:
    log = EventLog()
    seen_loops = []

    async def ask(url: str) -> str:
        seen_loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0)
        return "pong"

    async def target_call() -> asyncio.AbstractEventLoop:
        await follow_up(_job(), log, ask)
        return asyncio.get_running_loop()

    loop = asyncio.run(target_call())
    assert seen_loops == [loop]
    assert log.details["follow_up"]["ok"] is True and log.details["follow_up"]["chars"] == 4


def test_an_async_failure_is_data_not_an_exception() -> None:
    log = EventLog()

    async def ask(url: str) -> str:
        raise ConnectionError("the client was closed")

    asyncio.run(_await(follow_up(_job(), log, ask)))
    assert log.details["follow_up"]["ok"] is False
    assert log.details["follow_up"]["error"] == "ConnectionError: the client was closed"


def test_without_a_follow_up_url_nothing_is_called_and_awaiting_is_harmless() -> None:
    log = EventLog()
    called = []

    async def ask(url: str) -> str:
        called.append(url)
        return "x"

    asyncio.run(_await(follow_up(_job(None), log, ask)))
    follow_up(_job(None), log, lambda url: called.append(url) or "x")
    assert called == [] and "follow_up" not in log.details


async def _await(awaitable) -> None:
    await awaitable
