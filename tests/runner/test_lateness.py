"""The harness's own lateness: a case where the harness broke a timing promise is void
and run again, never charged to the client (``harness.lateness``, ``harness.runner``)."""

from __future__ import annotations

import os
import threading
import time

import pytest

from harness.lateness import MIN_TOLERANCE_S, measure, void_reason
from harness.leaks import runqueue_waits, starved_between, starved_s
from harness.runner import RunSettings, run_cases
from harness.scenario import load_catalog
from harness.server import pacing

#: steady_slow_token_drip at its floor: an event every 0.1 s, reference idle deadline 0.5 s.
SCALE = 0.1


def _sent(request: int, n: int, t: float, scheduled: float) -> dict:
    return {
        "t": t,
        "conn": 1,
        "request": request,
        "kind": "event_sent",
        "detail": {"n": n, "scheduled": scheduled},
    }


def test_a_paced_event_written_past_its_time_breaks_the_promise_by_that_much():
    timeline = [_sent(1, 1, 10.0, 10.0), _sent(1, 2, 10.1, 10.1), _sent(1, 3, 11.3, 10.2)]
    lateness = measure(timeline, starved_s=0.0, time_scale=SCALE)
    assert lateness.pacing_late_s == pytest.approx(1.1)
    # the finest scheduled gap (0.1 s), floored
    assert lateness.tolerance_s == pytest.approx(max(MIN_TOLERANCE_S, 0.1))
    assert "paced event 1.100 s after it was due" in lateness.broken()


def test_on_time_events_and_a_client_that_ran_keep_the_promise():
    timeline = [_sent(1, k, 10.0 + 0.2 * k + 0.001, 10.0 + 0.2 * k) for k in range(5)]
    lateness = measure(timeline, starved_s=0.1, time_scale=SCALE)
    assert lateness.broken() == ""
    assert lateness.tolerance_s == pytest.approx(0.2)


def test_a_starved_target_breaks_the_promise_and_is_named_as_the_machines_load():
    paced = [_sent(1, k, 10.0 + 0.2 * k, 10.0 + 0.2 * k) for k in range(3)]
    lateness = measure(paced, starved_s=0.4, time_scale=1.0)
    assert lateness.tolerance_s == pytest.approx(0.2)
    assert "waited 0.400 s for a CPU" in lateness.broken()
    assert measure(paced, starved_s=None, time_scale=1.0).broken() == ""  # unknown: kept
    # nothing paced: no timing promise was made, so starvation voids nothing
    assert measure([], starved_s=5.0, time_scale=1.0).broken() == ""


def test_only_an_alive_case_that_counts_against_the_client_is_void():
    late = measure([_sent(1, 1, 12.0, 10.0)], starved_s=None, time_scale=SCALE)
    assert void_reason(late, alive=True, counts_against=True)
    assert void_reason(late, alive=False, counts_against=True) == ""  # a fault scenario
    assert void_reason(late, alive=True, counts_against=False) == ""  # it coped: stands


def test_a_pass_that_rests_on_load_is_void_and_a_case_already_against_stands():
    kept = measure([], starved_s=0.6, time_scale=SCALE)  # nothing paced: no promise
    assert void_reason(kept, alive=False, counts_against=False) == ""
    why = "a target thread waited 0.5 s for a CPU in that gap"
    assert void_reason(kept, alive=False, counts_against=False, load_made=why) == why
    assert void_reason(kept, alive=False, counts_against=True, load_made=why) == ""


def test_starvation_between_two_moments_is_read_from_the_readings_after_each():
    readings = [
        (10.0, {1: 0.0, 2: 0.0}),
        (10.5, {1: 0.05, 2: 0.01}),
        (11.0, {1: 0.45, 2: 0.02, 3: 0.3}),  # thread 3 born in between: from zero
    ]
    assert starved_between(readings, 10.0, 10.9) == pytest.approx(0.45)
    assert starved_between(readings, 10.2, 10.9) == pytest.approx(0.4)
    assert starved_between(readings, 10.6, 10.9) is None  # one reading for both ends
    assert starved_between(readings, 10.0, 11.5) is None  # none after the second
    assert starved_between((), 10.0, 11.0) is None


@pytest.mark.timeout(30)
def test_the_run_queue_wait_of_each_thread_is_read_from_the_kernel():
    stop = threading.Event()
    spinners = [threading.Thread(target=_spin, args=(stop,)) for _ in range(4)]
    before = runqueue_waits(os.getpid())
    assert threading.get_native_id() in before
    for t in spinners:
        t.start()
    try:
        # four busy threads on this machine's cores: somebody waited for a CPU
        for _ in range(200):  # bounded: at most ~2 s of CPU time
            after = runqueue_waits(os.getpid())
            if (starved_s(before, after) or 0.0) > 0.0:
                break
            os.sched_yield()
    finally:
        stop.set()
        for t in spinners:
            t.join(timeout=10)
    assert (starved_s(before, after) or 0.0) > 0.0
    assert set(after) >= {t.native_id for t in spinners if t.native_id is not None}
    assert starved_s(before, {}) is None


def _spin(stop: threading.Event) -> None:
    deadline = time.monotonic() + 5.0  # bounded even if the test dies first
    while not stop.is_set() and time.monotonic() < deadline:
        pass


@pytest.mark.timeout(120)
@pytest.mark.parametrize("retries", [2, 0])
@pytest.mark.machinery
def test_a_deliberately_late_server_step_voids_the_case_instead_of_failing_the_client(
    monkeypatch, retries
):
    """The fault server's pacer is blocked once for 1 s during a slow-but-alive stream
    (events every 0.1 s): the reference stack's 0.5 s idle deadline kills the attempt
    and retries, which would read as a false kill. The timeline shows the event went out
    a second past its time, so the case is void and run again; the rerun keeps time and
    stands. With no reruns allowed, the run reports it void."""
    blocked = threading.Event()
    original = pacing.Pacer._run
    calls = 0

    def late_once(self) -> None:
        nonlocal calls
        calls += 1
        if calls == 3 and not blocked.is_set():
            blocked.set()
            time.sleep(1.0)  # the injected fault: the server's loop is late, once
        original(self)

    monkeypatch.setattr(pacing.Pacer, "_run", late_once)
    (scenario,) = [s for s in load_catalog() if s.name == "steady_slow_token_drip"]
    settings = RunSettings(time_scale=SCALE, void_retries=retries)
    (result,) = run_cases([(scenario, "reference")], settings=settings)
    assert blocked.is_set()
    if retries:
        assert result.reruns == 1, result.message
        assert result.void == ""
        assert result.outcome.kind == "ok" and result.matched
        assert result.verdict == "pass"
    else:
        assert result.reruns == 0
        assert result.void.startswith("the fault server wrote a paced event"), result.void
        assert result.lateness["pacing_late_s"] > 0.9
        assert not result.matched  # what it would have been charged with: a kill
