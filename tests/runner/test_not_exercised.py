"""A fault must be reached to be judged, and the case's clock starts when the client is
ready (issue 35): real clients against the embedded fault server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.runner import RunSettings, run_case
from harness.scenario import scenario_from_dict

TESTS_DIR = str(Path(__file__).resolve().parents[1])
FAST = 0.02
# 0.5 s real for a first byte or the next event: these tests count a client's requests,
# and a loaded CI worker once kept a healthy stream's first byte past 0.1 s (first_byte_s
# 5), so the reference retried and made 3. Tests that need a stall seen fast say so.
WATCHDOG = {"first_byte_s": 25, "stream_idle_s": 25, "stale_call_s": 30, "hard_ceiling_s": 40}


def make(name: str, **fields) -> object:
    return scenario_from_dict({"name": name, "summary": name, "watchdog": WATCHDOG, **fields})


def settings(**kwargs) -> RunSettings:
    kwargs.setdefault("time_scale", FAST)
    return RunSettings(environ={**os.environ, "PYTHONPATH": TESTS_DIR}, **kwargs)


@pytest.mark.timeout(60)
def test_a_rule_for_attempt_two_never_fires_for_a_client_that_makes_one_request(server):
    s = make(
        "second_call_stall",
        script={
            "rules": [{"match": {"attempts": 2}, "fault": {"phase": "event:3", "action": "hang"}}]
        },
    )
    result = run_case(s, "reference", server=server, settings=settings())
    assert result.outcome.kind == "ok", result.message
    assert result.requests == 1
    assert result.verdict == "not_exercised" and not result.failed_checks
    assert result.not_exercised == "the rule matches attempt 2; the client made 1 request"
    assert [r["fired"] for r in result.rules] == [False]
    assert not any(e["kind"] == "fault" for e in result.timeline)


@pytest.mark.timeout(60)
def test_the_same_rule_reached_is_judged(server):
    # Control: the same fault on attempt 1 fires, and the reference stack's retry gets past it.
    s = make(
        "first_call_stall",
        script={
            "rules": [{"match": {"attempts": 1}, "fault": {"phase": "event:3", "action": "hang"}}]
        },
        watchdog={**WATCHDOG, "stream_idle_s": 1},
    )
    result = run_case(s, "reference", server=server, settings=settings())
    assert result.verdict == "pass", (result.verdict, result.failed_checks, result.message)
    assert result.not_exercised == ""
    assert result.rules[0]["fired"] and result.rules[0]["t"] is not None


def _drip_on_first_call(name: str, phase: str) -> object:
    """A rule with a duration (a drip every scenario second) on attempt 1 at ``phase``."""
    drip = {"phase": phase, "action": "drip", "interval_s": 1.0}
    return make(name, script={"rules": [{"match": {"attempts": 1}, "fault": drip}]})


@pytest.mark.timeout(60)
def test_a_rule_with_durations_records_the_request_it_matched_at_the_cases_scale(server):
    # The server runs the rule scaled (drip every 1.0 s x 0.02) and records it so on the
    # request; the rule's record must still name that request (it read "matched: none").
    s = _drip_on_first_call("drip_first_call", "event:2")
    result = run_case(s, "reference", server=server, settings=settings())
    (rule,) = result.rules
    assert rule["rule"].startswith("drip@event:2(interval_s=1.0,")  # the scenario's own text
    assert rule["matched"] == [1] and rule["fired"], result.rules


@pytest.mark.timeout(60)
def test_a_rule_with_durations_whose_phase_never_came_says_so_at_the_cases_scale(server):
    # The stream ends before event 99: the rule matched request 1 (recorded scaled), so
    # the reason names that request and the phase, not "the scripted fault never fired".
    s = _drip_on_first_call("drip_past_the_end", "event:99")
    result = run_case(s, "reference", server=server, settings=settings())
    assert result.outcome.kind == "ok", result.message
    assert result.verdict == "not_exercised", (result.verdict, result.not_exercised)
    assert result.not_exercised == (
        "the rule matched request 1 but its phase event:99 never came (the exchange ended first)"
    )


@pytest.mark.timeout(60)
def test_a_target_that_makes_one_of_three_calls_is_not_exercised(server):
    s = make("three_calls", request={"calls": 3})
    result = run_case(
        s, "runner.reach_targets:FirstCallOnlyTarget", server=server, settings=settings()
    )
    assert result.outcome.kind == "ok", result.message
    assert result.requests == 1
    assert result.verdict == "not_exercised"
    assert result.not_exercised == "the target made 1 of 3 calls"


@pytest.mark.timeout(60)
def test_a_pooled_connection_fault_never_fires_when_every_call_is_a_new_connection(server):
    s = make(
        "reused_connection_hang",
        stream=False,
        request={"calls": 2},
        script={
            "rules": [
                {
                    "match": {"request_on_connection": 2},
                    "fault": {"phase": "request", "action": "hang"},
                }
            ]
        },
    )
    fresh = run_case(
        s, "runner.reach_targets:NewClientPerCallTarget", server=server, settings=settings()
    )
    assert fresh.outcome.kind == "ok", fresh.message
    assert fresh.requests == 2
    assert fresh.verdict == "not_exercised"
    assert fresh.not_exercised == "every call was a new connection; nothing was pooled"
    # Control: the reference stack pools its connection, so the fault fires and is judged.
    pooled = run_case(s, "reference", server=server, settings=settings())
    assert any(e["kind"] == "fault" for e in pooled.timeline)
    assert pooled.verdict in ("pass", "safe", "fail") and pooled.not_exercised == ""


@pytest.mark.timeout(60)
def test_set_up_inside_the_call_is_not_counted_against_the_ceiling(server):
    # The ceiling is 0.5 s; the client spends 1.5 s importing inside call() before its
    # first request. The case's clock starts at that request, not at "started".
    s = make("healthy_after_slow_setup", ceiling_s=10)
    result = run_case(
        s,
        "runner.reach_targets:SetupInCallTarget",
        server=server,
        settings=settings(min_ceiling_s=0.5),
    )
    assert result.ceiling_s == 0.5
    assert result.outcome.kind == "ok", result.message
    assert result.verdict == "pass"
    assert result.elapsed_s is not None and result.elapsed_s < result.ceiling_s


@pytest.mark.timeout(60)
def test_a_client_that_never_reaches_the_wire_within_its_allowance_did_not_start(server):
    s = make("healthy_never_reached", expected={"runner.reach_targets:StuckInSetupTarget": "ok"})
    result = run_case(
        s, "runner.reach_targets:StuckInSetupTarget", server=server, settings=settings()
    )
    assert result.outcome.kind == "did_not_start", result.message
    assert "0.5 s start-up allowance" in result.message
    assert result.verdict == "not_run" and not result.ran
    assert not result.matched  # expected ok: the gate fails
    assert result.requests is None


@pytest.mark.timeout(60)
def test_a_child_that_crashes_at_import_did_not_start_and_names_its_stderr(server):
    s = make("healthy_crashed")
    result = run_case(
        s, "runner.reach_targets:CrashAtImportTarget", server=server, settings=settings()
    )
    assert result.outcome.kind == "did_not_start", result.message
    assert "fake_agent: cannot load libfake.so" in result.message
    assert result.verdict == "not_run"


@pytest.mark.timeout(60)
def test_an_idle_close_after_the_last_call_is_not_a_stale_connection_met(server):
    # close_idle fires on whatever connection sits idle: for a client that closes its own
    # after each call (at once; the idle close waits 0.5 s), nothing it reused was stale.
    real_time = settings(time_scale=1.0)
    s = make(
        "stale_pool",
        request={"calls": 2, "pause_s": 1},
        script={
            "idle_timeout_s": 0.5,
            "rules": [{"fault": {"phase": "idle", "action": "close_idle", "after_s": 0.5}}],
        },
    )
    fresh = run_case(
        s, "runner.reach_targets:NewClientPerCallTarget", server=server, settings=real_time
    )
    assert fresh.outcome.kind == "ok", fresh.message
    assert fresh.verdict == "not_exercised"
    assert fresh.not_exercised == "every call was a new connection; nothing was pooled"
    pooled = run_case(s, "reference", server=server, settings=real_time)
    assert pooled.verdict == "pass", (pooled.failed_checks, pooled.not_exercised)


@pytest.mark.timeout(60)
def test_a_relay_that_never_swallowed_a_close_is_not_a_fault_reached(server):
    # harness fuzz's first network finding: a relay switched to swallow_close once the
    # request was read, a server that never closed -- the client got the whole reply
    # and the dead-peer question was asked of a peer that never went silent.
    s = make(
        "relay_swallow_nothing",
        network={"backend": "relay", "relay": {"mode": "swallow_close"}, "at": "request"},
        script={"rules": []},
        min_time_scale=0.5,
    )
    result = run_case(s, "openai-sdk", server=server, settings=settings())
    assert result.outcome.kind == "ok", result.message
    assert result.verdict == "not_exercised" and not result.failed_checks
    assert result.not_exercised == "the network fault was never fired or never took effect"
    assert any(e["kind"] == "mode" for e in result.timeline)  # switched, never acted


@pytest.mark.timeout(60)
def test_a_relay_that_swallowed_the_server_s_close_is_judged(server):
    # Control: the server closes mid-stream, the relay swallows it: the fault took
    # effect, and the reference stack's idle deadline ends the silent leg.
    s = make(
        "relay_swallow_fin",
        network={"backend": "relay", "relay": {"mode": "swallow_close"}, "at": "request"},
        script={
            "rules": [{"match": {"attempts": 1}, "fault": {"phase": "event:3", "action": "fin"}}]
        },
        watchdog={**WATCHDOG, "stream_idle_s": 1},
        min_time_scale=0.5,
    )
    result = run_case(s, "reference", server=server, settings=settings())
    assert result.not_exercised == ""
    assert any(e["kind"] == "swallowed" for e in result.timeline)
    assert result.verdict in ("pass", "safe"), (result.verdict, result.failed_checks)


@pytest.mark.timeout(60)
def test_a_close_swallowed_on_an_idle_pooled_connection_no_call_met_is_not_reached(server):
    # harness fuzz's second network finding: the server closes the pooled connection
    # once it is idle, the relay swallows that close -- and the client, done with its
    # one call, never uses the connection again.
    s = make(
        "relay_swallow_idle_close",
        network={"backend": "relay", "relay": {"mode": "swallow_close"}, "at": "event:1"},
        script={"rules": [{"fault": {"phase": "idle", "action": "close_idle"}}]},
        min_time_scale=0.5,
    )
    result = run_case(s, "openai-sdk", server=server, settings=settings())
    assert result.outcome.kind == "ok", result.message
    assert result.verdict == "not_exercised" and not result.failed_checks, result.timeline


@pytest.mark.timeout(60)
@pytest.mark.parametrize("target", ["reference", "openai-sdk"])
def test_an_edit_with_nothing_to_edit_in_the_reply_never_fired(server, target):
    # a non-streamed body is one event: dropping event 1 leaves it as it was, so the
    # fault never fired (the server said so once; a real client saw a whole reply)
    s = make(
        "drop_beyond_the_body",
        stream=False,
        script={"rules": [{"fault": {"phase": "event:1", "action": "drop_event"}}]},
    )
    result = run_case(s, target, server=server, settings=settings())
    assert result.outcome.kind == "ok", result.message
    assert result.verdict == "not_exercised" and not result.failed_checks
    assert result.not_exercised == (
        "the rule matched request 1 but drop_event had nothing to act on in its reply "
        "(the reply has 1 event(s): nothing to edit)"
    )
    assert [r["fired"] for r in result.rules] == [False]
    assert not any(e["kind"] == "fault" for e in result.timeline)


@pytest.mark.timeout(60)
def test_the_same_edit_on_an_event_the_stream_has_is_judged(server):
    # control: on a stream the first delta exists, the drop fires and the text is short
    s = make(
        "drop_first_delta",
        script={"rules": [{"fault": {"phase": "event:1", "action": "drop_event"}}]},
    )
    result = run_case(s, "openai-sdk", server=server, settings=settings())
    assert result.not_exercised == "" and result.rules[0]["fired"]
    assert result.outcome.kind == "wrong_content", (result.outcome, result.message)


@pytest.mark.timeout(90)
@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("reference", ""),  # rebuilds its client through run_calls(rebuild=...)
        (
            "runner.agent_loop_targets:ToolLoopAgent",  # one client, never rebuilt
            "the target never rebuilt its client before call 3 (no rebuild mark: "
            "run_calls got no rebuild=)",
        ),
    ],
    ids=["rebuilt", "never-rebuilt"],
)
def test_a_job_that_asks_for_a_rebuild_is_exercised_only_by_a_rebuild(server, target, why):
    s = make("calls_across_rebuild", request={"calls": 3, "rebuild_after": 2})
    result = run_case(s, target, server=server, settings=settings())
    assert result.outcome.kind == "ok", result.message
    assert result.requests == 3
    assert result.not_exercised == why
    assert result.verdict == ("not_exercised" if why else "pass"), result.failed_checks
