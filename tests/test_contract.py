"""Contract verdicts: derivation from fault scripts, the pure judgement, and [contract] overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.contract import CHECKS, Facts, Verdict, contract_for, judge
from harness.contract.causes import wrapped_types
from harness.contract.evidence import contract_facts, evidence_for
from harness.outcome import Expected, Outcome
from harness.scenario import ScenarioError, load_catalog, load_scenario, scenario_from_dict
from harness.scenario_pace import PACE_MARGIN, paced_s, reply_plan
from harness.targets.runtime.protocol import describe_chain

OK = Outcome("ok")
TYPED = Outcome("error", "StreamIdleTimeout", ("StreamIdleTimeout", "StallError"))


def make(**fields):
    return scenario_from_dict({"name": "x", "summary": "x", **fields})


def rule(phase: str, action: str, match: dict | None = None, **params) -> dict:
    out: dict = {"fault": {"phase": phase, "action": action, **params}}
    if match:
        out["match"] = match
    return out


def facts(outcome=OK, **kwargs) -> Facts:
    base = {
        "outcome": outcome,
        "time_scale": 0.1,
        "ceiling_s": 6.0,
        "elapsed_s": 0.5,
        "requests": 1,
    }
    return Facts(**{**base, **kwargs})


def test_healthy_scenario_wants_the_reply_and_an_error_fails_it():
    c = contract_for(make())
    assert c.ideal == "reply" and c.alive
    assert judge(c, facts()).verdict == "pass"
    v = judge(c, facts(TYPED))
    assert (v.verdict, v.failed_checks) == ("fail", ("complete_reply",))


def test_fault_on_every_request_allows_a_clean_typed_error_as_safe():
    c = contract_for(make(script={"rules": [rule("event:3", "hang")]}))
    assert c.ideal == "reply_or_error"
    assert judge(c, facts(TYPED, requests=3)).verdict == "safe"
    assert judge(c, facts(OK, requests=3)).verdict == "pass"
    hung = judge(c, facts(Outcome("hung"), elapsed_s=None, requests=1))
    assert hung.verdict == "fail" and hung.failed_checks == ("bounded",)


@pytest.mark.parametrize(
    "match",
    [{"attempts": [1, 2]}, {"connections": 1}, {"request_on_connection": 2}],
)
def test_a_fault_a_retry_or_a_fresh_connection_gets_past_wants_the_reply(match):
    c = contract_for(make(script={"rules": [rule("request", "status", match, code=503)]}))
    assert c.ideal == "reply"
    assert (
        "complete_reply"
        in judge(c, facts(Outcome("error", "APIStatusError"), requests=3)).failed_checks
    )


def test_first_request_on_every_connection_is_not_escapable_by_reconnecting():
    c = contract_for(make(script={"rules": [rule("request", "rst", {"request_on_connection": 1})]}))
    assert c.ideal == "reply_or_error"


def test_non_retryable_status_allows_one_request_per_call():
    c = contract_for(make(script={"rules": [rule("request", "status", code=401)]}))
    assert c.no_retry and c.ideal == "reply_or_error"
    error = Outcome("error", "AuthenticationError", ("AuthenticationError",))
    assert judge(c, facts(error, requests=1)).verdict == "safe"
    retried = judge(c, facts(error, requests=3))
    assert retried.verdict == "fail" and retried.failed_checks == ("no_retry_non_retryable",)


def test_retry_sooner_than_retry_after_fails():
    c = contract_for(
        make(
            script={
                "rules": [rule("request", "status", {"attempts": 1}, code=429, retry_after_s=2.0)]
            }
        )
    )
    assert c.retry_after_s == 2.0
    first = "Status@request(code=429, retry_after_s=1.0)"
    # time_scale 0.5: the server asks for the scaled 1.0 s (retry-after-ms: 1000)
    early = facts(time_scale=0.5, requests=2, request_log=[(10.0, first), (10.5, None)])
    late = facts(time_scale=0.5, requests=2, request_log=[(10.0, first), (11.0, None)])
    assert judge(c, early).failed_checks == ("retry_after",)
    assert judge(c, late).verdict == "pass"
    # at 0.1 it asks for 0.2 s (retry-after-ms: 200, Retry-After: 1): a fast run can fail it
    too_soon = facts(requests=2, request_log=[(10.0, first), (10.01, None)])
    assert judge(c, too_soon).failed_checks == ("retry_after",)
    assert judge(c, facts(requests=2, request_log=[(10.0, first), (10.2, None)])).verdict == "pass"


def test_a_retry_within_two_arrival_stamps_of_the_wait_is_not_early():
    # each request start is the kernel's arrival stamp, a tick coarse (tcpinfo.TICK_S):
    # a client that waited exactly can read up to two ticks early and still passes; one
    # that did not wait at all still fails, and the evidence gives the gap it left
    from harness.tcpinfo import TICK_S

    c = contract_for(
        make(
            script={
                "rules": [rule("request", "status", {"attempts": 1}, code=429, retry_after_s=1.0)]
            }
        )
    )
    first = "Status@request(code=429, retry_after_s=0.05)"
    # time_scale 0.05: told 0.05 s; read as 0.9 of it less two ticks, plus a hair
    edge = 0.05 * 0.9 - 2 * TICK_S + 0.001
    honoured = facts(time_scale=0.05, requests=2, request_log=[(5.0, first), (5.0 + edge, None)])
    assert judge(c, honoured).verdict == "pass"
    at_once = facts(time_scale=0.05, requests=2, request_log=[(5.0, first), (5.002, None)])
    assert judge(c, at_once).failed_checks == ("retry_after",)
    assert evidence_for(c, at_once, ("retry_after",)) == {
        "retry_after": "retried 0.002 s after a Retry-After of 0.05 s"
    }


@pytest.mark.parametrize("action", ["duplicate_event", "swap_events", "drop_event"])
def test_a_content_edit_on_every_request_wants_no_reply_but_a_matched_one_does(action):
    # No match: every attempt gets the altered stream, so no client can return the reply
    # the provider meant; detecting it and raising is safe, returning it is dishonest.
    every = contract_for(make(script={"reply": "tool_call", "rules": [rule("event:4", action)]}))
    assert every.ideal == "reply_or_error"
    assert judge(every, facts(Outcome("error", "MalformedEvent"), requests=3)).verdict == "safe"
    once = contract_for(
        make(script={"reply": "tool_call", "rules": [rule("event:4", action, {"attempts": 1})]})
    )
    assert once.ideal == "reply"


def test_request_budget_derives_from_the_fault_not_from_the_targets_budget_table():
    # [budget] is the regression gate of the scenario's targets (the reference's retries);
    # the contract allows any correct client a few retries per call.
    c = contract_for(
        make(script={"rules": [rule("event:3", "hang")]}, budget={"max_requests": 1}),
    )
    assert c.max_requests == 5
    two_calls = make(request={"calls": 2}, script={"rules": [rule("event:3", "hang")]})
    assert contract_for(two_calls).max_requests == 10
    # a fault on attempts 1..6: the 7th request is the one that gets past it
    late = make(script={"rules": [rule("request", "status", {"attempts": list(range(1, 7))})]})
    assert contract_for(late).max_requests == 7 and contract_for(late).ideal == "reply"


def test_a_retry_after_admits_one_retry_after_the_wait_within_the_bound():
    def scenario(wait_s: float, **fields) -> object:
        status = rule("request", "status", {"attempts": 1}, code=429, retry_after_s=wait_s)
        return make(script={"rules": [status]}, **fields)

    c = contract_for(scenario(30.0))  # ceiling_s 60: the wait fits, one retry admitted
    assert (c.max_requests, c.retry_after_s, c.ideal) == (2, 30.0, "reply_or_error")
    first = "Status@request(code=429, retry_after_s=1.5)"
    # time_scale 0.05: told 1.5 s; the honouring client's retry after it passes
    waited = facts(time_scale=0.05, requests=2, request_log=[(1.0, first), (2.6, None)])
    assert judge(c, waited).verdict == "pass"
    eager = facts(time_scale=0.05, requests=2, request_log=[(1.0, first), (1.5, None)])
    assert judge(c, eager).failed_checks == ("retry_after",)
    assert judge(c, facts(requests=3)).failed_checks == ("request_budget",)
    # a wait no shorter than the bound admits no retry at all
    assert contract_for(scenario(30.0, ceiling_s=20)).max_requests == 1


def test_hammering_is_more_requests_than_allowed_in_any_window():
    c = contract_for(
        make(script={"rules": [rule("request", "status", code=503)]}, contract={"max_requests": 50})
    )
    burst = [(1.0 + i * 0.001, "Status@request(code=503)") for i in range(8)]
    spread = [(1.0 + i * 0.5, "Status@request(code=503)") for i in range(8)]
    error = Outcome("error", "InternalServerError", ("InternalServerError",))
    assert "no_hammering" in judge(c, facts(error, requests=8, request_log=burst)).failed_checks
    assert judge(c, facts(error, requests=8, request_log=spread)).verdict == "safe"


def test_dishonest_replies_leaks_late_requests_and_a_failed_follow_up_fail():
    c = contract_for(make(script={"rules": [rule("event:3", "fin")]}))
    for kind in ("truncated_as_complete", "wrong_content", "error_as_reply"):
        assert judge(c, facts(Outcome(kind))).failed_checks == ("honest_reply",)
    assert judge(c, facts(leaks=2)).failed_checks == ("no_leaks",)
    assert judge(c, facts(late_requests=1)).failed_checks == ("no_late_requests",)
    assert judge(c, facts(follow_up_ok=False)).failed_checks == ("alive_after",)
    assert judge(c, facts(follow_up_ok=True)).verdict == "pass"
    assert judge(c, facts(requests=6)).failed_checks == ("request_budget",)


def test_crash_is_not_a_clean_error_and_not_run_cases_are_not_run_not_failed():
    c = contract_for(make(script={"rules": [rule("event:3", "fin")]}))
    crash = Outcome("error", "TargetCrashed", ("TargetCrashed",))
    assert judge(c, facts(crash)).failed_checks == ("clean_error",)
    # a case that never ran was judged by no check: neither a pass nor a fail (issue 24)
    for kind in ("not_applicable", "skipped"):
        assert judge(c, facts(Outcome(kind))) == Verdict("not_run")


def _chain_of(raise_it) -> list[dict[str, str]]:
    try:
        raise_it()
    except Exception as exc:  # noqa: BLE001 - the chain of whatever it raised
        return describe_chain(exc)
    raise AssertionError("raised nothing")


class AgentGenerationError(Exception):
    """smolagents' catch-all: every exception of a model call, re-raised ``from`` it."""


def _agent_over_a_crash() -> None:
    choices = None
    try:
        choices[0]  # smolagents 1.26.0 OpenAIModel.generate on a reply without choices
    except Exception as e:
        raise AgentGenerationError(f"Error while generating output:\n{e}") from e


def _typed_while_handling() -> None:
    try:
        {}["retry-after"]
    except KeyError:
        raise AgentGenerationError("no retry-after header")  # noqa: B904 - context only


def test_a_wrapper_raised_from_a_crash_is_not_a_clean_error():
    # audit of smolagents 1.26.0 (2026-12-06): nonstream_no_choices was judged safe, its
    # TypeError hidden under the agent's catch-all AgentGenerationError
    c = contract_for(make(script={"rules": [rule("event:3", "fin")]}))
    wrapper = Outcome("error", "AgentGenerationError", ("AgentGenerationError",))
    chain = _chain_of(_agent_over_a_crash)
    assert wrapped_types(chain) == ("TypeError",)
    crashed = facts(wrapper, wrapped=wrapped_types(chain))
    assert judge(c, crashed).failed_checks == ("clean_error",)
    assert evidence_for(c, crashed, ("clean_error",))["clean_error"].startswith(
        "raised AgentGenerationError from TypeError: a crash of the client under another name"
    )
    # an exception met while handling another is not what the error was made from
    handled = _chain_of(_typed_while_handling)
    assert [link["via"] for link in handled] == ["raised", "context"]
    assert wrapped_types(handled) == ()
    assert judge(c, facts(wrapper, wrapped=wrapped_types(handled))).verdict == "safe"


def test_claimed_attempts_beyond_those_that_reached_the_wire_fail_accounting():
    c = contract_for(make(script={"rules": [rule("event:3", "fin")]}))
    error = Outcome("error", "APIConnectionError", ("APIConnectionError",))
    over = facts(error, claimed_attempts=3, wire_attempts=1)
    assert judge(c, over).failed_checks == ("accounting",)
    assert evidence_for(c, over, ("accounting",))["accounting"].startswith(
        "claims 3 attempts, 1 reached the wire"
    )
    assert judge(c, facts(error, claimed_attempts=1, wire_attempts=1)).verdict == "safe"
    # unknown on either side (the client does not say; a network path in between)
    assert judge(c, facts(error, claimed_attempts=3)).verdict == "safe"
    assert judge(c, facts(error, wire_attempts=0)).verdict == "safe"


def test_failed_bound_says_where_the_call_ended_and_the_bound():
    c = contract_for(make(script={"rules": [rule("request", "hang")]}, contract={"bound_s": 20}))
    late = facts(Outcome("error", "HardCeiling", ("HardCeiling",)), elapsed_s=3.0, ceiling_s=3.0)
    assert judge(c, late).failed_checks == ("bounded",)
    assert evidence_for(c, late, ("bounded",)) == {
        "bounded": "ended at the 3.00 s ceiling, bound 2.00 s"
    }
    shown = contract_facts(c, late)
    assert shown["bound_s"] == 2.0 and shown["bound_from"] == "scenario"
    assert "bounded" in shown["checks"] and "retry_after" not in shown["checks"]


def test_slow_but_alive_stream_killed_by_a_deadline_fails_no_false_kill():
    c = contract_for(make(script={"rules": [rule("event:2", "slow", delay_s=1.0)]}))
    assert c.alive and c.ideal == "reply"
    v = judge(c, facts(Outcome("false_kill", "StreamIdleTimeout", ("StreamIdleTimeout",))))
    assert v.verdict == "fail" and "no_false_kill" in v.failed_checks


EXECUTED = Outcome("executed_truncated_tool_call", detail="ran record_note with {}")


@pytest.mark.parametrize(
    "script",
    [
        {"reply": "tool_call", "rules": [rule("event:0", "cut_tool_call", at="string")]},
        {"rules": [rule("event:3", "fin")]},  # reply_or_error
        {"rules": [rule("event:2", "slow", delay_s=1.0)]},  # reply
        {},  # healthy
    ],
)
def test_executing_a_cut_tool_call_fails_every_contract(script):
    c = contract_for(make(script=script))
    v = judge(c, facts(EXECUTED))
    assert v.verdict == "fail" and v.failed_checks == ("no_truncated_tool_execution",)
    # even with every other fact clean and a follow-up that worked
    assert judge(c, facts(EXECUTED, follow_up_ok=True, leaks=0)).verdict == "fail"


def test_every_catalog_contract_fails_an_executed_cut_tool_call():
    for s in load_catalog():
        v = judge(contract_for(s), facts(EXECUTED, ceiling_s=1e9))
        assert "no_truncated_tool_execution" in v.failed_checks, s.name


def test_contract_table_overrides_the_derived_fields():
    s = make(
        script={"rules": [rule("event:3", "hang")]},
        contract={"ideal": "reply", "max_requests": 2, "bound_s": 5, "no_leaks": False},
    )
    c = contract_for(s)
    assert (c.ideal, c.max_requests, c.bound_s, c.no_leaks) == ("reply", 2, 5, False)
    # bound_s is scenario seconds: 5 x 0.1 = 0.5 s real
    v = judge(c, facts(OK, elapsed_s=0.7, leaks=3))
    assert v.failed_checks == ("bounded",)


@pytest.mark.parametrize(
    ("table", "field", "allowed"),
    [
        ('ideal = "perfect"', "contract.ideal", "reply_or_error"),
        ("max_requests = 0", "contract.max_requests", None),
        ("speed = 1", "contract.speed", "ideal"),
    ],
)
def test_bad_contract_table_names_the_file_and_the_field(tmp_path: Path, table, field, allowed):
    path = tmp_path / "x.toml"
    path.write_text(f'name = "x"\nsummary = "s"\n[contract]\n{table}\n', encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert info.value.file == str(path) and info.value.field == field
    if allowed:
        assert allowed in (info.value.allowed or "")


def test_every_catalog_scenario_has_a_contract_and_check_names_are_stable():
    assert len(set(CHECKS)) == len(CHECKS) == 15
    for s in load_catalog():
        c = contract_for(s)
        assert c.ideal in ("reply", "reply_or_error") and c.max_requests >= 1, s.name


def test_the_reference_stacks_expected_outcome_satisfies_every_catalog_contract():
    # The static half of the witness (tests/test_catalog.py runs the other half): what the
    # reference stack is expected to do, with its own [budget] of requests, is pass or
    # safe under the derived contract -- no contract asks what no client can do.
    for s in load_catalog():
        c = contract_for(s)
        expected = Expected.parse(s.expected["reference"])
        for option in expected.alternatives or (expected,):
            assert option.kind in ("ok", "error"), (s.name, option)
            outcome = Outcome(option.kind, option.errors[0] if option.errors else None)
            requests = s.budget.max_requests_of("reference") or s.request.calls
            v = judge(c, facts(outcome, ceiling_s=1e9, requests=requests))
            assert v.verdict in ("pass", "safe"), (s.name, v)


# ------------------------------------------------- satisfiable contracts (harness fuzz)


def test_a_pace_no_call_can_finish_within_its_ceiling_is_not_alive():
    # slow per byte from the headers on: ~2 KB at 0.1 s a byte, far past a 60 s ceiling
    # (harness fuzz on the reference: its deadlines "killed" a stream no call could wait out)
    crawl = make(script={"rules": [rule("headers", "slow", per="byte")]}, ceiling_s=60)
    assert paced_s(crawl) > crawl.ceiling_s
    assert not crawl.is_alive
    c = contract_for(crawl)
    assert c.ideal == "reply_or_error" and not c.alive
    # the same pace per event fits: still slow but alive, a kill is false
    steady = make(script={"rules": [rule("headers", "slow")]}, ceiling_s=60)
    assert 0 < paced_s(steady) < steady.ceiling_s
    assert steady.is_alive and contract_for(steady).alive


@pytest.mark.parametrize(
    ("fields", "visible"),
    [
        ({"api": "chat", "script": {"rules": [rule("event:1", "duplicate_event")]}}, False),
        ({"api": "messages", "script": {"rules": [rule("event:3", "drop_event")]}}, False),
        # Responses restates the answer in response.completed: an edit shows
        ({"api": "responses", "script": {"rules": [rule("event:3", "swap_events")]}}, True),
        # a tool call's arguments are JSON: an edit breaks them
        (
            {
                "api": "chat",
                "script": {"reply": "tool_call", "rules": [rule("event:4", "duplicate_event")]},
            },
            True,
        ),
        # a body edited whole shows its broken structure
        (
            {
                "api": "chat",
                "stream": False,
                "script": {"rules": [rule("event:0", "drop_field", field="choices")]},
            },
            True,
        ),
        # the first matching rule wins: an edit on attempt 1 and a cut (a drip) on every
        # other attempt -- the edited attempt is never also cut (CI's seeded fuzz found
        # the reference judged here before)
        (
            {
                "api": "chat",
                "script": {
                    "rules": [
                        rule("event:1", "duplicate_event", {"attempts": [1]}),
                        rule("headers", "drip"),
                    ]
                },
            },
            False,
        ),
    ],
)
def test_honest_reply_asks_only_for_the_edits_a_client_can_see(fields, visible):
    scenario = make(**fields)
    c = contract_for(scenario)
    assert c.edits_visible is visible
    changed = Outcome("wrong_content", "differs at character 6")
    verdict = judge(c, facts(changed))
    assert ("honest_reply" in verdict.failed_checks) is visible
    # an error text returned as the reply is dishonest whatever the edit
    assert "honest_reply" in judge(c, facts(Outcome("error_as_reply"))).failed_checks


def test_a_shorter_text_is_excused_only_where_the_script_cuts_no_stream():
    edit = rule("event:1", "duplicate_event", {"attempts": [1]})
    shorter = Outcome("truncated_as_complete", "a prefix")
    alone = contract_for(make(script={"rules": [edit]}))
    assert "honest_reply" not in judge(alone, facts(shorter)).failed_checks
    # a truncate on the other attempts: a shorter text is that cut, never excused
    cut = contract_for(make(script={"rules": [edit, rule("event:3", "truncate")]}))
    assert not cut.edits_visible
    assert judge(cut, facts(shorter)).failed_checks == ("honest_reply",)
    assert "honest_reply" not in judge(cut, facts(Outcome("wrong_content"))).failed_checks


def test_a_pacing_toxic_slower_than_the_ceiling_is_not_alive_and_a_gentle_one_is():
    def behind(toxic):
        return make(
            script={"rules": []},
            ceiling_s=20,
            network={"backend": "toxiproxy", "toxics": [toxic]},
        )

    # harness fuzz on the reference: latency 30 s a write, "killed" by its own deadlines
    crawl = behind({"type": "latency", "latency": 30000})
    assert paced_s(crawl) > crawl.ceiling_s and not crawl.is_alive
    assert contract_for(crawl).ideal == "reply_or_error"
    gentle = behind({"type": "latency", "latency": 100})
    assert 0 < paced_s(gentle) < gentle.ceiling_s and gentle.is_alive
    assert paced_s(behind({"type": "bandwidth", "rate": 0})) == float("inf")

    # harness fuzz on the reference: a close delayed 30 s where the close ends the body
    def closed_late(framing):
        return make(
            script={"rules": [], "framing": framing},
            ceiling_s=20,
            network={"backend": "toxiproxy", "toxics": [{"type": "slow_close", "delay": 30000}]},
        )

    assert paced_s(closed_late("close")) == 30 and not closed_late("close").is_alive
    assert paced_s(closed_late("chunked")) == 0 and closed_late("chunked").is_alive
    # within the ceiling but past PACE_MARGIN of it: a client that ends it is right too
    units = len(reply_plan(gentle).units)
    edge = behind({"type": "latency", "latency": int(0.9 * 20_000 / units)})
    assert PACE_MARGIN * 20 < paced_s(edge) <= 20 and not edge.is_alive
    assert contract_for(edge).ideal == "reply_or_error"


def test_a_no_retry_status_on_the_retry_leaves_the_first_retry_free():
    # harness fuzz on the reference: a 500 on attempt 1, then a 401 on attempt 2 -- the
    # first retry was right, and nothing may follow the 401
    c = contract_for(
        make(
            script={
                "rules": [
                    rule("request", "status", {"attempts": [1]}, code=500),
                    rule("request", "status", {"attempts": [2]}, code=401),
                ]
            }
        )
    )
    first, final = "status@request(code=500)", "status@request(code=401)"
    retried = facts(requests=2, request_log=[(1.0, first), (1.5, final)])
    assert judge(c, retried).verdict != "fail"
    again = facts(requests=3, request_log=[(1.0, first), (1.5, final), (2.0, None)])
    assert judge(c, again).failed_checks == ("no_retry_non_retryable",)
    assert evidence_for(c, again, ("no_retry_non_retryable",)) == {
        "no_retry_non_retryable": "1 request(s) after a status no retry can fix, for 1 call(s)"
    }


def test_a_retry_after_on_a_later_attempt_owes_the_first_retry_nothing():
    c = contract_for(
        make(
            script={
                "rules": [
                    rule("request", "status", {"attempts": [1]}, code=500),
                    rule("request", "status", {"attempts": [2]}, code=429, retry_after_s=2.0),
                ]
            }
        )
    )
    five, limited = "status@request(code=500)", "status@request(code=429, retry_after_s=1.0)"
    # at 0.5: the 500 owes nothing (a quick retry), the 429 owes 1 s (scaled)
    log = [(10.0, five), (10.05, limited), (11.1, None)]
    assert judge(c, facts(time_scale=0.5, requests=3, request_log=log)).verdict == "pass"
    early = [(10.0, five), (10.05, limited), (10.2, None)]
    failed = judge(c, facts(time_scale=0.5, requests=3, request_log=early)).failed_checks
    assert failed == ("retry_after",)


def test_an_edit_is_invisible_only_where_it_leaves_another_answer_that_reads_whole():
    def visible(api, reply, phase, action, **params):
        script = {"reply": reply, "rules": [rule(phase, action, **params)]}
        return contract_for(make(api=api, script=script)).edits_visible

    # harness fuzz on the reference: a Messages argument fragment inside a JSON string
    # duplicated -- still a JSON object, another path: no client can tell
    assert not visible("messages", "tool_call", "event:4", "duplicate_event")
    # the same edit where it breaks the JSON: a client sees it (the catalog's scenario)
    assert visible("chat", "tool_call", "event:4", "duplicate_event")
    # an edit that changes nothing of the answer: every client must return it whole
    assert visible("chat", "tool_call", "event:0", "drop_field", field="finish_reason")
    # response.completed restates the answer: a swapped text delta shows
    assert visible("responses", "text", "event:5", "swap_events")


def test_a_long_retry_after_ends_the_call_at_the_first_request_its_rule_answers():
    # harness fuzz on the reference: a drip takes attempt 1, a 429 asking 90 s takes
    # attempt 2 -- the retry after the drip was right; none after the 429
    scenario = make(
        ceiling_s=60,
        script={
            "rules": [
                rule("headers", "drip", {"attempts": [1]}),
                rule("accept", "status", {"attempts": [1, 2]}, code=429, retry_after_s=90.0),
            ]
        },
    )
    assert contract_for(scenario).max_requests == 2
    alone = make(
        ceiling_s=60,
        script={
            "rules": [rule("accept", "status", {"attempts": [1, 2]}, code=429, retry_after_s=90.0)]
        },
    )
    assert contract_for(alone).max_requests == 1


def test_a_relay_swallowing_the_close_that_ends_a_close_delimited_body_stops_it():
    # harness fuzz on the reference: framing = "close" behind swallow_close -- the body's
    # end is the close the relay swallows, so no client can see it end: not alive
    def behind(framing):
        return make(
            script={"rules": [], "framing": framing},
            network={"backend": "relay", "relay": {"mode": "swallow_close"}},
        )

    assert not behind("close").is_alive
    assert contract_for(behind("close")).ideal == "reply_or_error"
    assert behind("chunked").is_alive  # the body ends by itself; the close comes after


@pytest.mark.parametrize(
    ("at", "hidden"), [("start", True), ("request", True), ("headers", False), ("event:2", False)]
)
def test_a_status_the_network_may_eat_creates_no_duty(at, hidden):
    # harness fuzz on the reference: a Toxiproxy timeout from the start ate a 404 (and its
    # Retry-After) and closed; the client saw a closed connection and rightly retried
    scenario = make(
        ceiling_s=20,
        script={
            "rules": [
                rule(
                    "accept",
                    "status",
                    {"attempts": [1, 2]},
                    code=404,
                    retry_after="Fri, 01 Jan 2100 00:00:00 GMT",
                )
            ]
        },
        network={
            "backend": "toxiproxy",
            "toxics": [{"type": "timeout", "timeout": 100, "at": at}],
        },
    )
    c = contract_for(scenario)
    assert c.ideal == "reply_or_error"
    assert c.no_retry is not hidden and bool(c.no_retry_faults) is not hidden
    answered = "status@accept(code=404, retry_after=Fri, 01 Jan 2100 00:00:00 GMT)"
    log = [(1.0, answered), (1.2, answered), (1.4, None)]
    closed = Outcome("error", "RetriesExhausted", ("RetriesExhausted", "PeerClosed"))
    verdict = judge(c, facts(outcome=closed, requests=3, request_log=log))
    assert ("no_retry_non_retryable" in verdict.failed_checks) is not hidden
