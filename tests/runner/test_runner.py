"""The runner end to end on the embedded fault server: outcomes, ceilings, leaks, shards."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from harness.planning import only_waits
from harness.runner import RunSettings, Shard, plan, run_case, run_cases
from harness.scenario import load_catalog, scenario_from_dict

TESTS_DIR = str(Path(__file__).resolve().parents[1])
FAST = 0.02


def make(name: str, expected: dict[str, str], **fields) -> object:
    return scenario_from_dict({"name": name, "summary": name, "expected": expected, **fields})


@pytest.mark.timeout(60)
def test_healthy_stream_against_the_bare_sdk_is_ok_with_one_request_and_no_leaks(server):
    s = make("healthy", {"openai-sdk": "ok"})
    result = run_case(s, "openai-sdk", server=server, settings=RunSettings(time_scale=FAST))
    assert result.outcome.kind == "ok", result.message
    assert result.matched
    assert result.requests == 1
    assert result.leaks is not None and result.leaks.total == 0
    assert result.elapsed_s is not None and result.elapsed_s > 0
    assert any(e["kind"] == "response_done" for e in result.timeline)
    assert any(kind == "stream_end" for _, kind, _ in result.client_events)


@pytest.mark.timeout(60)
def test_stall_against_the_bare_sdk_is_hung_at_the_outer_ceiling(server):
    s = make(
        "stall",
        {"openai-sdk": "hung"},
        ceiling_s=10,
        script={"rules": [{"fault": {"phase": "event:2", "action": "hang"}}]},
    )
    settings = RunSettings(time_scale=FAST, min_ceiling_s=0.5)
    result = run_case(s, "openai-sdk", server=server, settings=settings)
    assert result.outcome.kind == "hung"
    assert result.matched
    assert result.ceiling_s == 0.5
    assert result.leaks is None  # a killed target has nothing left to measure


@pytest.mark.timeout(60)
def test_close_delimited_fin_is_truncated_as_complete_for_the_bare_sdk(server):
    s = make(
        "fin",
        {"openai-sdk": "truncated_as_complete"},
        script={"framing": "close", "rules": [{"fault": {"phase": "event:4", "action": "fin"}}]},
    )
    result = run_case(s, "openai-sdk", server=server, settings=RunSettings(time_scale=FAST))
    assert result.outcome.kind == "truncated_as_complete", result.message
    assert result.matched


@pytest.mark.timeout(60)
def test_error_records_detection_latency_from_the_server_timeline(server):
    s = make(
        "rst",
        # openai 2.x raises httpx's ReadError; 3.x wraps it in APIConnectionError
        {"openai-sdk": "error:ReadError|APIConnectionError"},
        script={"rules": [{"fault": {"phase": "event:3", "action": "rst"}}]},
    )
    result = run_case(s, "openai-sdk", server=server, settings=RunSettings(time_scale=FAST))
    assert result.outcome.label in ("error(ReadError)", "error(APIConnectionError)"), result.message
    assert result.matched
    # Detection happens inside the case: no wall-clock figure here (harness bench has them).
    assert result.latency_s is not None and 0 <= result.latency_s <= result.elapsed_s


@pytest.mark.timeout(60)
def test_request_budget_overrun_is_a_mismatch(server):
    s = make(
        "retries",
        {"openai-sdk": "error"},
        budget={"max_requests": 1},
        script={"rules": [{"fault": {"phase": "request", "action": "status", "code": 500}}]},
    )
    result = run_case(s, "openai-sdk", server=server, settings=RunSettings(time_scale=FAST))
    assert result.outcome.kind == "error"
    assert result.requests == 3  # the SDK's two retries
    assert result.over_budget and not result.matched


@pytest.mark.timeout(60)
def test_thread_left_running_after_return_is_reported_as_a_leak(server):
    s = make("leaky", {"reference": "ok"})  # no request made: nothing to compare
    settings = RunSettings(time_scale=FAST, environ={**os.environ, "PYTHONPATH": TESTS_DIR})
    result = run_case(
        s,
        "runner.targets_double:LeakyTarget",
        server=server,
        settings=settings,
        expect_as="reference",
    )
    assert result.matched, result.outcome
    assert result.leaks is not None and result.leaks.threads == 1


def test_plan_is_deterministic_and_shards_partition_it():
    catalog = load_catalog()
    cases = plan(catalog)
    assert cases == plan(list(reversed(catalog)))
    shards = [plan(catalog, shard=Shard(k, 3)) for k in (1, 2, 3)]
    assert sorted((s.name, t) for part in shards for s, t in part) == sorted(
        (s.name, t) for s, t in cases
    )
    assert sum(len(p) for p in shards) == len(cases)


def test_plan_runs_every_target_and_mutants_are_judged_by_the_reference_expectation():
    from harness.targets import expectation_key

    s = make("x", {"reference": "ok"})
    # openai-sdk has no expectation here: it runs all the same, judged by its verdict.
    assert plan([s], ["mutant:no-keepalive", "openai-sdk"]) == [
        (s, "mutant:no-keepalive"),
        (s, "openai-sdk"),
    ]
    assert s.expected_for(expectation_key("mutant:no-keepalive")).kind == "ok"
    with pytest.raises(ValueError, match="unknown target 'curl'"):
        plan([s], ["curl"])


@pytest.mark.parametrize("text", ["0/2", "3/2", "a/b", "1"])
def test_bad_shard_is_rejected(text):
    with pytest.raises(ValueError, match="K/N"):
        Shard.parse(text)


def test_settings_validate_eagerly_and_floor_the_ceiling():
    with pytest.raises(ValueError, match="time_scale"):
        RunSettings(time_scale=0)
    with pytest.raises(ValueError, match="jobs"):
        RunSettings(jobs=0)
    s = make("c", {"reference": "ok"}, ceiling_s=100)
    assert RunSettings(time_scale=1.0).ceiling_for(s) == 100
    assert RunSettings(time_scale=0.01, min_ceiling_s=3).ceiling_for(s) == 3
    # a target's own floor (litellm: 10 s of real-time backoff) raises it, unless the
    # run holds its cases to their scripted ceiling (harness posture)
    assert RunSettings(time_scale=0.01, min_ceiling_s=3).ceiling_for(s, "litellm") == 10
    exact = RunSettings(time_scale=0.01, min_ceiling_s=3, target_floor=False)
    assert exact.ceiling_for(s, "litellm") == 3


@pytest.mark.timeout(60)
@pytest.mark.machinery
def test_run_cases_in_parallel_returns_results_in_case_order():
    a = make("a_ok", {"openai-sdk": "ok"})
    b = make(
        "b_trunc",
        {"openai-sdk": "truncated_as_complete"},
        script={"rules": [{"fault": {"phase": "event:3", "action": "truncate"}}]},
    )
    seen = []
    results = run_cases(
        [(a, "openai-sdk"), (b, "openai-sdk")],
        settings=RunSettings(time_scale=FAST, jobs=2),
        on_result=seen.append,
    )
    assert [r.scenario for r in results] == ["a_ok", "b_trunc"]
    assert all(r.matched for r in results), [r.message for r in results]
    assert sorted(r.scenario for r in seen) == ["a_ok", "b_trunc"]


@pytest.mark.timeout(90)
@pytest.mark.machinery
def test_clean_child_is_reused_and_a_hung_one_is_not(monkeypatch):
    from harness import runner as runner_module

    spawned = []
    real_spawn = runner_module.TargetProcess.spawn

    def counting_spawn(target, **kwargs):
        spawned.append(target)
        return real_spawn(target, **kwargs)

    monkeypatch.setattr(runner_module.TargetProcess, "spawn", counting_spawn)
    ok = [make(f"ok_{i}", {"openai-sdk": "ok"}) for i in range(3)]
    hang = make(
        "hang",
        {"openai-sdk": "hung"},
        script={"rules": [{"fault": {"phase": "request", "action": "hang"}}]},
    )
    cases = [
        (ok[0], "openai-sdk"),
        (ok[1], "openai-sdk"),
        (hang, "openai-sdk"),
        (ok[2], "openai-sdk"),
    ]
    # no idle lane: the hang runs on the one worker, between the clean cases
    settings = RunSettings(time_scale=FAST, jobs=1, min_ceiling_s=0.5, idle_lanes=0)
    results = run_cases(cases, settings=settings)
    assert [r.outcome.kind for r in results] == ["ok", "ok", "hung", "ok"]
    assert len(spawned) == 2  # one for the first three cases, a fresh one after the hang


@pytest.mark.timeout(90)
@pytest.mark.machinery
def test_expected_hangs_wait_side_by_side_on_idle_lanes():
    hangs = [
        make(
            f"hang_{i}",
            {"openai-sdk": "hung"},
            script={"rules": [{"fault": {"phase": "request", "action": "hang"}}]},
        )
        for i in range(2)  # children start two at a time at least: both wait at once
    ]
    ok = make("ok", {"openai-sdk": "ok"})
    cases = [(h, "openai-sdk") for h in hangs] + [(ok, "openai-sdk")]
    assert [only_waits(c) for c in cases] == [True, True, False]
    ended: dict[str, float] = {}
    settings = RunSettings(time_scale=FAST, jobs=1, min_ceiling_s=1.0, idle_lanes=2)
    results = run_cases(
        cases, settings=settings, on_result=lambda r: ended.setdefault(r.scenario, time.monotonic())
    )
    assert [r.outcome.kind for r in results] == ["hung", "hung", "ok"]
    windows = [(r.t_started, ended[r.scenario]) for r in results[:2]]
    # both hangs were waiting at once (each from its call's start until its result came
    # back): one ceiling, not two in a row
    assert max(start for start, _ in windows) < min(end for _, end in windows), windows


@pytest.mark.timeout(90)
@pytest.mark.machinery
def test_idle_lane_children_start_no_more_than_the_throttle_allows_at_once(monkeypatch):
    import threading

    from harness import runner as runner_module

    monkeypatch.setattr(runner_module, "STARTING_AT_ONCE", 1)
    spans: list[list[float]] = []
    real_spawn = runner_module.TargetProcess.spawn
    real_ready = runner_module.TargetProcess.wait_ready

    def timed_spawn(target, **kwargs):
        child = real_spawn(target, **kwargs)
        child.test_span = [time.monotonic()]
        if threading.current_thread().name.startswith("harness-idle"):
            spans.append(child.test_span)
        return child

    def timed_ready(self, deadline):
        real_ready(self, deadline)
        if len(self.test_span) == 1:
            self.test_span.append(time.monotonic())

    monkeypatch.setattr(runner_module.TargetProcess, "spawn", timed_spawn)
    monkeypatch.setattr(runner_module.TargetProcess, "wait_ready", timed_ready)
    hangs = [
        make(
            f"hang_{i}",
            {"openai-sdk": "hung"},
            script={"rules": [{"fault": {"phase": "request", "action": "hang"}}]},
        )
        for i in range(2)
    ]
    ok = make("ok", {"openai-sdk": "ok"})  # keeps the general worker off the hangs
    cases = [(h, "openai-sdk") for h in hangs] + [(ok, "openai-sdk")]
    settings = RunSettings(time_scale=FAST, jobs=1, min_ceiling_s=0.5, idle_lanes=2)
    results = run_cases(cases, settings=settings)
    assert [r.outcome.kind for r in results] == ["hung", "hung", "ok"]
    assert len(spans) == 2  # one child per hang, none pre-started beside them
    (a_start, a_ready), (b_start, _) = sorted(spans)
    # one start-up at a time: the second child was spawned after the first said ready
    assert a_ready <= b_start


@pytest.mark.timeout(90)
@pytest.mark.machinery
def test_workers_start_on_different_targets_and_reuse_their_children(monkeypatch):
    import threading

    from harness import runner as runner_module

    spawned: list[tuple[str, str]] = []
    real_spawn = runner_module.TargetProcess.spawn

    def counting_spawn(target, **kwargs):
        spawned.append((threading.current_thread().name, target))
        return real_spawn(target, **kwargs)

    monkeypatch.setattr(runner_module.TargetProcess, "spawn", counting_spawn)
    # target-major, as `harness mutants` orders them: one shared queue sent both workers
    # to openai-sdk first and then both to reference (four child start-ups)
    cases = [
        (make(f"ok_{t}_{i}", {}), target)
        for t, target in enumerate(("openai-sdk", "reference"))
        for i in range(3)
    ]
    results = run_cases(cases, settings=RunSettings(time_scale=FAST, jobs=2))
    assert all(r.outcome.kind == "ok" for r in results), [r.message for r in results]
    workers, targets = zip(*spawned[:2], strict=True)
    assert len(set(workers)) == 2 and set(targets) == {"openai-sdk", "reference"}, spawned


@pytest.mark.timeout(90)
def test_a_failing_worker_stops_the_run_raises_and_leaves_no_child_behind(monkeypatch):
    from harness import runner as runner_module

    children = []
    real_spawn = runner_module.TargetProcess.spawn

    def keeping_spawn(target, **kwargs):
        children.append(real_spawn(target, **kwargs))
        return children[-1]

    def failing_on_result(result):
        raise RuntimeError(f"report of {result.scenario} failed")

    monkeypatch.setattr(runner_module.TargetProcess, "spawn", keeping_spawn)
    # a never-reused target: the worker pre-starts the next case's child during each case
    target = "runner.targets_double:EnvTarget"
    cases = [(make(f"env_{i}", {}), target) for i in range(4)]
    environ = {**os.environ, "PYTHONPATH": TESTS_DIR}
    settings = RunSettings(time_scale=FAST, jobs=1, environ=environ)
    with pytest.raises(RuntimeError, match="report of env_0 failed"):
        run_cases(cases, settings=settings, on_result=failing_on_result)
    # the first case's child and the spare started for the second, and no more cases
    assert len(children) == 2
    assert all(child._popen.poll() is not None for child in children)  # all reaped


@pytest.mark.timeout(90)
def test_a_target_that_is_never_reused_gets_its_next_child_started_during_a_case(monkeypatch):
    from harness import runner as runner_module

    spawned = []
    real_spawn = runner_module.TargetProcess.spawn

    def timed_spawn(target, **kwargs):
        spawned.append(time.monotonic())
        return real_spawn(target, **kwargs)

    monkeypatch.setattr(runner_module.TargetProcess, "spawn", timed_spawn)
    target = "runner.targets_double:EnvTarget"  # not reusable: one job per child
    cases = [(make(f"env_{i}", {}), target) for i in range(2)]
    environ = {**os.environ, "PYTHONPATH": TESTS_DIR}
    results = run_cases(cases, settings=RunSettings(time_scale=FAST, jobs=1, environ=environ))
    assert [r.outcome.kind for r in results] == ["ok", "ok"], [r.message for r in results]
    assert len(spawned) == 2
    first = min(results, key=lambda r: r.t_started)
    # the second child was started before the first case had ended
    assert spawned[1] < first.t_started + first.elapsed_s


@pytest.mark.timeout(60)
def test_pause_between_calls_is_scaled_and_shows_in_the_client_events(server):
    s = make("paused", {"openai-sdk": "ok"}, request={"calls": 2, "pause_s": 10})
    result = run_case(s, "openai-sdk", server=server, settings=RunSettings(time_scale=FAST))
    assert result.matched, result.message
    pauses = [detail for _, kind, detail in result.client_events if kind == "pause"]
    assert pauses == ["0.200 s"]
    assert result.elapsed_s >= 0.2


@pytest.mark.timeout(60)
def test_relay_backend_runs_through_the_relay_and_merges_its_timeline(server):
    s = make(
        "relayed", {"openai-sdk": "ok"}, network={"backend": "relay", "relay": {"mode": "pass"}}
    )
    result = run_case(s, "openai-sdk", server=server, settings=RunSettings(time_scale=0.3))
    assert result.matched, result.message
    assert {"relay", "server"} <= {e.get("source", "server") for e in result.timeline}


def test_missing_prerequisite_is_skipped_locally_and_a_mismatch_in_ci(server, monkeypatch):
    from harness import lifecycle

    monkeypatch.setattr(lifecycle, "backend_missing", lambda backend: "no toxiproxy here")
    s = make(
        "tox",
        {"openai-sdk": "ok"},
        network={"backend": "toxiproxy", "toxics": [{"type": "timeout", "timeout": 0}]},
    )
    local = run_case(s, "openai-sdk", server=server, settings=RunSettings(environ={}))
    assert local.outcome.kind == "skipped" and local.matched
    ci = run_case(s, "openai-sdk", server=server, settings=RunSettings(environ={"CI": "1"}))
    assert ci.outcome.kind == "skipped" and not ci.matched
    assert "CI requires this tier: no toxiproxy here" in ci.message


# --------------------------------------------------------------------------- issue 8


def test_target_that_does_not_speak_the_api_is_not_applicable_without_running(server, monkeypatch):
    from harness import runner as runner_module

    def no_spawn(*args, **kwargs):
        raise AssertionError("a not-applicable case must not start a child")

    monkeypatch.setattr(runner_module.TargetProcess, "spawn", no_spawn)
    s = make("anthropic", {"openai-sdk": "not_applicable"}, api="messages")
    result = run_case(s, "openai-sdk", server=server, settings=RunSettings(time_scale=FAST))
    assert result.outcome.kind == "not_applicable" and result.matched
    assert "openai-sdk does not speak api=messages" in result.message
    assert result.requests is None  # nothing was sent
    # expecting anything else is a mismatch, so a target that starts to speak it shows up
    wrong = make("anthropic", {"openai-sdk": "hung"}, api="messages")
    other = run_case(wrong, "openai-sdk", server=server, settings=RunSettings(time_scale=FAST))
    assert other.outcome.kind == "not_applicable" and not other.matched


@pytest.mark.timeout(60)
def test_worker_left_holding_a_socket_and_a_stray_request_are_flagged(server):
    s = make(
        "abandoned",
        {"reference": "ok"},
        stream=False,
        # the second request gets its status line and headers, then no body, ever
        script={
            "rules": [{"match": {"attempts": 2}, "fault": {"phase": "headers", "action": "hang"}}]
        },
    )
    settings = RunSettings(time_scale=FAST, environ={**os.environ, "PYTHONPATH": TESTS_DIR})
    result = run_case(
        s,
        "runner.targets_double:AbandoningTarget",
        server=server,
        settings=settings,
        expect_as="reference",
    )
    assert result.outcome.kind == "ok" and result.matched, result.message  # the reply is right
    assert result.leaks is not None
    assert result.leaks.threads >= 1 and result.leaks.established >= 1, result.leaks
    assert (result.requests, result.attempts) == (2, 1)
    assert result.unaccounted_requests == 1
    data = result.to_dict()
    assert data["unaccounted_requests"] == 1 and data["leaks"]["established"] >= 1

    from io import StringIO

    from rich.console import Console

    from harness.report.console import render_console

    out = StringIO()
    render_console([result], console=Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert "(client 1)" in text and "1 with leaks" in text
    assert "1 with requests the client cannot account for" in text


def test_client_attempts_and_late_requests_from_a_report():
    from types import SimpleNamespace

    from harness.contract.observation import ChildReport
    from harness.judge import _late_requests

    def _client_attempts(report, *, calls):
        child = ChildReport.parse(report)
        return None if child is None else child.claimed_attempts(calls=calls)

    assert _client_attempts({"status": "returned", "attempts": 3}, calls=2) == 3
    assert _client_attempts({"status": "returned"}, calls=1) is None
    assert _client_attempts({"status": "returned", "attempts": True}, calls=1) is None
    raised = {"status": "raised", "attempt_errors": ["A", "B", "C"], "attempt": 3}
    assert _client_attempts(raised, calls=1) == 3
    assert _client_attempts({"status": "raised", "attempt": 1}, calls=1) == 1
    assert _client_attempts(raised, calls=2) is None  # earlier calls' requests unknown
    assert _client_attempts(None, calls=1) is None
    records = [SimpleNamespace(t_start=1.0), SimpleNamespace(t_start=5.0)]
    assert _late_requests(records, 2.0) == 1
    assert _late_requests(records, None) is None


@pytest.mark.timeout(60)
@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_watchdog_killing_a_slow_but_alive_stream_is_a_false_kill(server, api):
    # keep-alives every second, content every 5 s: alive, but an idle deadline that ignores
    # keep-alives (and a 2 s one at that) kills it -- the watchdog is wrong, not the stream
    s = make(
        f"too_eager_{api}",
        {"reference": "ok"},
        api=api,
        script={"events": 2, "event_interval_s": 5.0, "keepalive_comment_s": 1.0},
        watchdog={"stream_idle_s": 2, "idle_counts_comments": False, "max_attempts": 1},
    )
    result = run_case(s, "reference", server=server, settings=RunSettings(time_scale=FAST))
    assert result.outcome.kind == "false_kill", result.message
    assert result.outcome.label in ("false_kill(StreamIdleTimeout)", "false_kill(FirstByteTimeout)")
    assert not result.matched


@pytest.mark.timeout(60)
def test_attempt_killed_on_a_live_stream_is_a_false_kill_even_when_the_retry_succeeds(server):
    # attempt 1 is slow (an event every 5 s) but alive; a 2 s idle deadline kills it and
    # attempt 2, at full speed, returns the full reply: the final "ok" hides a false kill
    s = make(
        "killed_then_retried",
        {"reference": "ok"},
        script={
            "rules": [
                {
                    "match": {"attempts": 1},
                    "fault": {"phase": "event:2", "action": "slow", "delay_s": 5.0},
                }
            ]
        },
        watchdog={"stream_idle_s": 2, "max_attempts": 2},
        tags=["no-false-kill"],
    )
    assert s.is_alive
    result = run_case(s, "reference", server=server, settings=RunSettings(time_scale=FAST))
    assert result.outcome.kind == "false_kill", result.message
    assert "2 requests for 1 call(s)" in result.outcome.detail
    assert result.requests == 2 and not result.matched


@pytest.mark.timeout(60)
@pytest.mark.machinery
def test_a_case_that_fails_before_its_call_kills_the_child_it_was_given():
    from harness.targets.runtime.process import TargetProcess

    class RefusingServer:
        base_url = "http://127.0.0.1:9"

        def load(self, script, *, time_scale):
            raise RuntimeError("script refused")

    child = TargetProcess.spawn("openai-sdk", environ=dict(os.environ))
    with pytest.raises(RuntimeError, match="script refused"):
        run_case(make("refused", {}), "openai-sdk", server=RefusingServer(), child=child)
    assert child._popen.poll() is not None  # killed and reaped, not left running


def _slow_but_alive(name: str, **script: object) -> object:
    return make(
        name,
        {},
        script={"events": 4, "event_interval_s": 1.0, **script},
        tags=["no-false-kill"],
    )


@pytest.mark.timeout(60)
def test_a_later_duplicate_cancelled_once_the_first_answered_is_no_kill(server):
    # a hedging gateway: a second request while the first waits (slow here, so it is
    # still streaming when the first is done), cancelled mid-way once the first answered
    # in full; one attempt by the client's count -- a duplicate for the request budget
    from types import SimpleNamespace

    from harness.contract.causes import cut_by_peer

    slow_second = {
        "match": {"attempts": 2},
        "fault": {"phase": "event:2", "action": "slow", "delay_s": 5.0},
    }
    s = _slow_but_alive("hedged", rules=[slow_second])
    assert s.is_alive
    result = run_case(
        s,
        "runner.targets_double:HedgingTarget",
        server=server,
        settings=RunSettings(time_scale=FAST, environ={**os.environ, "PYTHONPATH": TESTS_DIR}),
    )
    assert result.requests == 2 and result.attempts == 1
    timeline = [dict(e) for e in result.timeline]
    heads = [e for e in timeline if e["kind"] == "request_head"]
    records = [
        SimpleNamespace(index=e["request"], connection=e["conn"], t_start=e["t"]) for e in heads
    ]
    assert cut_by_peer(records, timeline) == [heads[1]["request"]]  # the hedge
    assert result.outcome.kind == "ok", result.message


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("cut", "outcome"), [(2, "ok"), (1, "false_kill")], ids=["hedge_cut", "first_cut"]
)
def test_which_request_was_asked_again_is_the_servers_order_not_the_arrival_stamps(cut, outcome):
    # arrival stamps are a kernel tick coarse (tcpinfo.TICK_S): a hedge sent within a tick
    # of the first request can carry the earlier stamp; the server numbers requests as it
    # reads their heads, so only a cut request numbered before another was "asked again"
    from types import SimpleNamespace

    from harness.judge import Observed, judge_case
    from tests.judging import case_plan

    scenario = _slow_but_alive("hedged_tie")
    whole = {"api": "chat", "fault": None, "expected_text": "the reply"}
    records = [
        SimpleNamespace(index=1, connection=1, t_start=10.004, **whole),
        SimpleNamespace(index=2, connection=2, t_start=10.001, **whole),
    ]
    done = 3 - cut  # the request that was answered whole
    timeline = [
        {"kind": "request_head", "conn": 1, "request": 1, "t": 10.004},
        {"kind": "request_head", "conn": 2, "request": 2, "t": 10.005},
        {"kind": "response_done", "conn": done, "request": done, "t": 10.2},
        {"kind": "peer_closed", "conn": cut, "t": 10.21},
    ]
    report = {"status": "returned", "text": "the reply", "finish_reason": "stop", "attempts": 1}
    result = judge_case(
        case_plan(scenario, time_scale=FAST, ceiling_s=3.0),
        Observed(report=report, records=records, timeline=timeline, started_t=10.0),
    )
    assert result.outcome.kind == outcome, result.message


@pytest.mark.timeout(60)
def test_a_stream_the_client_closed_mid_way_is_a_kill_though_it_counts_one_attempt(server):
    # The client closes its first stream after one event; the server must still be
    # writing it then. At FAST (20 ms an event, 80 ms a stream) a loaded CI worker read
    # that event after the stream was done (CI 2026-12-06): 8 events at 0.1 leave the
    # client 700 ms.
    s = _slow_but_alive("quiet_retry", events=8)
    result = run_case(
        s,
        "runner.targets_double:QuietRetryTarget",
        server=server,
        settings=RunSettings(time_scale=0.1, environ={**os.environ, "PYTHONPATH": TESTS_DIR}),
    )
    assert result.requests == 2 and result.attempts == 1
    assert result.outcome.kind == "false_kill", result.message
    assert (
        "request 1 was closed by the client before its response was done" in result.outcome.detail
    )
