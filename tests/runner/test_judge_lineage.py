"""The judge counts per model call: a request's lineage (``harness.apis.lineage``)
says whether it retries a call or begins one. Hand-made observations, judged as the
runner judges them."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from harness.judge import Observed, call_requests, judge_case, model_calls
from harness.scenario import load_catalog, scenario_from_dict
from tests.judging import case_plan

pytestmark = pytest.mark.timeout(30)
FAST = 0.05
REPLY = "the reply"


def record(
    index: int,
    t: float,
    kind: str | None,
    *,
    of: int | None = None,
    call: int | None = None,
    fault: str | None = None,
    conn: int | None = None,
) -> SimpleNamespace:
    lineage = (
        None
        if kind is None
        else {"kind": kind, "of": of, "call": index if call is None else call, "appended": []}
    )
    return SimpleNamespace(
        index=index,
        connection=conn or index,
        request_on_connection=1,
        t_start=t,
        api="chat",
        fault=fault,
        expected_text=REPLY,
        lineage=lineage,
    )


def returned(t: float, attempts: int | None = None) -> dict[str, Any]:
    report: dict[str, Any] = {"status": "returned", "text": REPLY, "finish_reason": "stop", "t": t}
    if attempts is not None:
        report["attempts"] = attempts
    return report


def whole(*requests: int) -> list[dict[str, Any]]:
    """Each request answered in full, then its connection closed by the client."""
    out: list[dict[str, Any]] = []
    for i in requests:
        out += [
            {"kind": "request_head", "conn": i, "request": i, "t": 10.0 + i},
            {"kind": "response_done", "conn": i, "request": i, "t": 10.2 + i},
            {"kind": "peer_closed", "conn": i, "t": 10.3 + i},
        ]
    return out


def test_model_calls_count_every_request_but_a_retry() -> None:
    recs = [
        record(1, 1, "new"),
        record(2, 2, "retry", of=1, call=1),
        record(3, 3, "continuation", of=2),
    ]
    assert model_calls(recs) == 2
    # a body never read (a fault before it): the request after it is taken as its retry
    assert model_calls([record(1, 1, None), record(2, 2, "new")]) == 1
    assert model_calls([record(1, 1, None), record(2, 2, "new"), record(3, 3, "new")]) == 2
    assert model_calls([]) == 0
    # a retry of an earlier model call than the current one begins a call (an agent's
    # next job call asking its first conversation again); a retry of the current does not
    again = [
        record(1, 1, "new"),
        record(2, 2, "continuation", of=1),
        record(3, 3, "retry", of=2, call=2),
        record(4, 4, "retry", of=1, call=1),
        record(5, 5, "retry", of=4, call=1),
    ]
    assert call_requests(again) == ((1, 1), (2, 2), (4, 2))


#: The scenario's 10 s Retry-After at this scale: 2 s real, kept by the 2.1 s gap below.
SCALE_10S_WAIT_IS_2S = 0.2


def test_one_honoured_retry_after_plus_the_next_model_call_keeps_the_budget() -> None:
    scenario = next(s for s in load_catalog() if s.name == "rate_limited_retry_after")
    assert scenario.script.rules[0].fault.action.retry_after_s * SCALE_10S_WAIT_IS_2S <= 2.1
    fault = str(scenario.script.rules[0].fault)  # the 429 fired on request 1 (reached)
    fired = {"kind": "fault", "conn": 1, "request": 1, "t": 11.1, "detail": {"action": "status"}}
    recs = [
        record(1, 10.0, "new", fault=fault),
        record(2, 12.1, "retry", of=1, call=1),
        record(3, 12.5, "continuation", of=2),
    ]
    result = judge_case(
        case_plan(scenario, "hermes", time_scale=SCALE_10S_WAIT_IS_2S),
        Observed(
            report=returned(13.0, attempts=3),
            records=recs,
            timeline=[*whole(1, 2, 3), fired],
            started_t=9.9,
        ),
    )
    assert result.contract["max_requests"] == 2
    assert "request_budget" not in result.failed_checks, result.evidence
    assert result.verdict == "pass", (result.failed_checks, result.evidence)
    # the same three requests as retries of one call are over its budget
    retries = [
        record(1, 10.0, "new", fault=fault),
        record(2, 12.1, "retry", of=1, call=1),
        record(3, 12.5, "retry", of=2, call=1),
    ]
    over = judge_case(
        case_plan(scenario, "hermes", time_scale=SCALE_10S_WAIT_IS_2S),
        Observed(
            report=returned(13.0, attempts=3),
            records=retries,
            timeline=[*whole(1, 2, 3), fired],
            started_t=9.9,
        ),
    )
    assert "request_budget" in over.failed_checks
    assert over.evidence["request_budget"] == "3 requests for 1 model call(s), budget 2"


def test_a_kept_retry_after_is_void_where_the_child_sat_on_a_run_queue_for_the_wait():
    """A client that never waits passes a wait on a starved machine: the gap was the
    run queue's. Judged from ``(time, runqueue_waits)`` readings at each request."""
    scenario = next(s for s in load_catalog() if s.name == "rate_limited_retry_after")
    fault = str(scenario.script.rules[0].fault)
    fired = {"kind": "fault", "conn": 1, "request": 1, "t": 10.0, "detail": {"action": "status"}}
    recs = [record(1, 10.0, "new", fault=fault), record(2, 12.1, "retry", of=1, call=1)]

    def judged(queued_s: float, *, other_thread: bool = False) -> Any:
        tid = 8 if other_thread else 7  # 8: a thread that does not send the retry
        readings = ((10.01, {7: 1.0, 8: 1.0}), (12.11, {7: 1.0, 8: 1.0, tid: 1.0 + queued_s}))
        return judge_case(
            case_plan(scenario, "hermes", time_scale=SCALE_10S_WAIT_IS_2S),
            Observed(
                report=returned(12.5, attempts=2),
                records=recs,
                timeline=[*whole(1, 2), fired],
                started_t=9.9,
                runqueue=readings,
            ),
        )

    # a 2.1 s gap after a 2 s wait, 1.9 s of it on a run queue: it came too soon
    starved = judged(1.9)
    assert starved.verdict == "pass" and "waited 1.900 s for a CPU" in starved.void
    # a client that slept gathers no queue time: its wait is its own
    assert judged(0.02).void == ""
    # a thread queued for less than half the wait cannot have made it
    assert judged(0.5).void == ""
    # whichever thread queued: the readings do not say which one sends
    assert "for a CPU" in judged(1.9, other_thread=True).void


def _alive() -> Any:
    return scenario_from_dict(
        {
            "name": "alive",
            "summary": "alive",
            "expected": {},
            "script": {"events": 4, "event_interval_s": 1.0},
            "tags": ["no-false-kill"],
        }
    )


@pytest.mark.parametrize("attempts", [None, 2])
def test_a_continuation_after_a_completed_stream_is_no_kill(attempts: int | None) -> None:
    # the agent's second model call, after the first stream completed; its connection
    # was closed by the client (a new client per call) -- not a killed attempt
    recs = [record(1, 10.0, "new"), record(2, 11.5, "continuation", of=1)]
    result = judge_case(
        case_plan(_alive(), time_scale=FAST, ceiling_s=30.0),
        Observed(
            report=returned(13.0, attempts), records=recs, timeline=whole(1, 2), started_t=9.9
        ),
    )
    assert result.outcome.kind == "ok", result.message
    assert "no_false_kill" not in result.failed_checks


def test_a_retry_of_a_stream_cut_while_alive_is_still_a_kill() -> None:
    recs = [record(1, 10.0, "new"), record(2, 11.5, "retry", of=1, call=1)]
    timeline = [
        {"kind": "request_head", "conn": 1, "request": 1, "t": 10.0},
        {"kind": "peer_closed", "conn": 1, "t": 10.5},  # before its response was done
        *whole(2),
    ]
    result = judge_case(
        case_plan(_alive(), time_scale=FAST, ceiling_s=30.0),
        Observed(report=returned(13.0, 1), records=recs, timeline=timeline, started_t=9.9),
    )
    assert result.outcome.kind == "false_kill", result.message
    # cut, then the next model call (not a retry of it): not asked again
    recs[1] = record(2, 11.5, "continuation", of=1)
    result = judge_case(
        case_plan(_alive(), time_scale=FAST, ceiling_s=30.0),
        Observed(report=returned(13.0, 2), records=recs, timeline=timeline, started_t=9.9),
    )
    assert result.outcome.kind == "ok", result.message


def test_a_late_continuation_of_the_job_is_not_late_a_late_retry_is() -> None:
    from harness.judge import _late_requests

    recs = [
        record(1, 1.0, "new"),
        record(2, 5.0, "continuation", of=1),
        record(3, 6.0, "retry", of=2, call=2),
    ]
    assert _late_requests(recs, 2.0) == 0
    recs = [record(1, 1.0, "new"), record(2, 5.0, "retry", of=1, call=1), record(3, 6.0, "new")]
    assert _late_requests(recs, 2.0) == 2
    # no lineage (an older record): every request after the end is late
    assert _late_requests([SimpleNamespace(t_start=1.0), SimpleNamespace(t_start=5.0)], 2.0) == 1


def test_a_model_call_retried_past_its_share_fails_the_budget_though_the_total_fits() -> None:
    # an agent's second call (a continuation) retried nine times: 10 requests for 2
    # model calls fit 2 x 5, but one call took 9 of them
    scenario = _alive()
    recs = [record(1, 10.0, "new"), record(2, 10.5, "continuation", of=1)]
    recs += [record(i, 10.5 + i / 10, "retry", of=i - 1, call=2) for i in range(3, 11)]
    assert call_requests(recs) == ((1, 1), (2, 9))
    result = judge_case(
        case_plan(scenario, time_scale=FAST, ceiling_s=30.0),
        Observed(
            report=returned(13.0, 10), records=recs, timeline=whole(*range(1, 11)), started_t=9.9
        ),
    )
    assert result.contract["max_requests"] == 5
    assert "request_budget" in result.failed_checks
    assert result.evidence["request_budget"] == (
        "the model call begun by request 2 took 9 requests, at most 5 each"
    )
