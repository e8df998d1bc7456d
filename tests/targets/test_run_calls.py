"""The one call loop every target runs (``harness.targets.base.run_calls``): pure."""

from __future__ import annotations

import pytest

from harness.targets.base import EventLog, Job, run_calls


def _kinds(log: EventLog) -> list[tuple[str, str]]:
    return [(kind, detail) for _, kind, detail in log.events]


def test_calls_in_order_with_the_rebuild_before_the_call_it_names() -> None:
    log = EventLog()
    done: list[str] = []
    job = Job(base_url="http://127.0.0.1:1/v1", calls=3, rebuild_after=2)
    results = run_calls(
        job,
        log,
        lambda: done.append("call") or len(done),
        rebuild=lambda: done.append("rebuild"),
        label=": x",
    )
    assert done == ["call", "call", "rebuild", "call"]
    assert results == [1, 2, 4]
    assert _kinds(log) == [
        ("call", "1 of 3: x"),
        ("call", "2 of 3: x"),
        ("rebuild", ""),
        ("call", "3 of 3: x"),
    ]


def test_the_pause_comes_between_calls_and_no_rebuild_without_a_client() -> None:
    log = EventLog()
    job = Job(base_url="http://127.0.0.1:1/v1", calls=2, rebuild_after=1, pause_s=0.001)
    assert run_calls(job, log, lambda: "t") == ["t", "t"]
    assert [k for k, _ in _kinds(log)] == ["call", "pause", "call"]


def test_a_call_that_raises_ends_the_loop() -> None:
    log = EventLog()
    job = Job(base_url="http://127.0.0.1:1/v1", calls=3)
    calls: list[int] = []

    def fail() -> None:
        calls.append(1)
        raise ConnectionError("boom")

    with pytest.raises(ConnectionError):
        run_calls(job, log, fail)
    assert calls == [1]
