"""The outer ceiling counts per model call (``harness.call_ceiling``): an agent whose job
is a tool call, then its result and the final answer, gets the whole ceiling for each
model call on a slow-but-alive scenario; a model call that never ends still meets it.
A real OpenAI SDK agent against the embedded fault server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.call_ceiling import model_call_starts
from harness.runner import RunSettings, run_case
from harness.scenario import scenario_from_dict

TESTS_DIR = str(Path(__file__).resolve().parents[1])
# ceiling 60 s -> 2.4 s real. Each slow model call's first byte comes at 0.55 of it, so
# two outlast one ceiling and each still has 1.08 s real to spare: a CI worker starved
# for a quarter second (4 workers on 2 cores) once ate the 0.4 s margin of 2/3 at 0.02.
FAST = 0.04
DELAY_S = 33
WATCHDOG = {"first_byte_s": 50, "stream_idle_s": 50, "stale_call_s": 55, "hard_ceiling_s": 58}
TARGET = "runner.agent_loop_targets:ToolLoopAgent"


def slow_agent_scenario(**script: object) -> object:
    return scenario_from_dict(
        {
            "name": "slow_tool_loop",
            "summary": "each model call's first byte comes after 0.55 of the ceiling",
            "stream": False,
            "ceiling_s": 60,
            "alive": True,
            "watchdog": WATCHDOG,
            "script": {"reply": "tool_call", "first_byte_delay_s": DELAY_S, **script},
        }
    )


def settings() -> RunSettings:
    # no floor under the ceiling: 2.4 s, so two 1.32 s model calls outlast one
    env = {**os.environ, "PYTHONPATH": TESTS_DIR}
    return RunSettings(environ=env, time_scale=FAST, min_ceiling_s=0)


@pytest.mark.timeout(90)
def test_each_model_call_of_an_agent_gets_the_whole_ceiling(server):
    # Two model calls of 1.32 s each: 2.64 s in all, past the 2.4 s ceiling, each within it.
    # With one ceiling for the whole job this was `hung` (fail: bounded).
    result = run_case(slow_agent_scenario(), TARGET, server=server, settings=settings())
    assert result.outcome.kind == "ok", (result.outcome, result.message)
    assert result.verdict == "pass", (result.failed_checks, result.evidence)
    assert result.requests == 2 and result.elapsed_s > result.ceiling_s
    shapes = [e["detail"] for e in result.timeline if e["kind"] == "request_shape"]
    assert [s["lineage"] for s in shapes] == ["new", "continuation"]


@pytest.mark.timeout(90)
def test_a_model_call_that_never_ends_still_meets_its_ceiling(server):
    # The second model call (the tool's result) hangs: the first call's ceiling is
    # extended by the second's, and that one is hung.
    hang = {"match": {"attempts": 2}, "fault": {"phase": "event:0", "action": "hang"}}
    result = run_case(slow_agent_scenario(rules=[hang]), TARGET, server=server, settings=settings())
    assert result.outcome.kind == "hung", (result.outcome, result.message)
    assert result.verdict == "fail" and "bounded" in result.failed_checks
    assert result.requests == 2


def test_a_retry_begins_no_model_call() -> None:
    class R:
        def __init__(self, t: float, kind: str | None) -> None:
            self.t_start, self.lineage = t, None if kind is None else {"kind": kind}

    records = [R(0.5, "new"), R(1.0, "new"), R(2.0, "retry"), R(3.0, "continuation")]
    assert model_call_starts(records, 1.0) == [1.0, 3.0]
    assert model_call_starts([R(1.0, None), R(2.0, "retry")], 0.0) == [1.0]


def test_an_agents_next_job_call_repeating_its_first_begins_model_calls() -> None:
    # smolagents on stall_on_reused_connection: job call 2 asks model call 1's and 2's
    # conversations again; the server places them as retries of those calls
    class R:
        def __init__(self, t: float, kind: str, call: int) -> None:
            self.t_start, self.lineage = t, {"kind": kind, "call": call}

    records = [R(1, "new", 1), R(2, "continuation", 2), R(3, "retry", 2), R(4, "retry", 1)]
    records += [R(5, "retry", 1), R(6, "retry", 2)]
    assert model_call_starts(records, 0.0) == [1, 2, 4, 6]


@pytest.mark.timeout(90)
def test_each_call_of_a_plain_job_gets_the_whole_ceiling_though_the_server_sees_a_retry(server):
    # Two calls of one job asking the same conversation: the server places call 2 as a
    # retry of call 1 (nothing on the wire tells them apart), so only the child's word
    # that its next call began gives call 2 a ceiling of its own (found by an audit: a
    # call whose connects went into a dead path never reached the server at all).
    scenario = scenario_from_dict(
        {
            "name": "two_slow_calls",
            "summary": "two calls of one job, each first byte after 0.55 of the ceiling",
            "stream": False,
            "ceiling_s": 60,
            "alive": True,
            "watchdog": WATCHDOG,
            "request": {"calls": 2, "pause_s": 0},
            "script": {"first_byte_delay_s": DELAY_S},
        }
    )
    result = run_case(scenario, "reference", server=server, settings=settings())
    assert result.outcome.kind == "ok", (result.outcome, result.message)
    assert result.verdict == "pass", (result.failed_checks, result.evidence)
    assert result.requests == 2 and result.elapsed_s > result.ceiling_s
    shapes = [e["detail"] for e in result.timeline if e["kind"] == "request_shape"]
    assert [s["lineage"] for s in shapes] == ["new", "retry"]


def test_a_job_calls_start_splits_the_spans_bounded_judges() -> None:
    from harness.contract.facts import Facts, model_call_spans
    from harness.outcome import Outcome

    one_request = [(100.0, None)]
    facts = Facts(
        outcome=Outcome("error"),
        time_scale=1.0,
        ceiling_s=30.0,
        elapsed_s=34.0,
        request_log=one_request,
        call_requests=((1, 1),),
    )
    assert model_call_spans(facts) == [34.0]  # one call seen: one span
    split = Facts(**{**facts.__dict__, "job_calls_s": (17.0,)})
    assert model_call_spans(split) == [17.0, 17.0]  # call 2 never reached the server
