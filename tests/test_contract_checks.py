"""The contract-check registry: one module per check, the verdict and the docs read it."""

from __future__ import annotations

import pytest

from harness.contract import CHECKS, Contract, Facts, judge
from harness.contract.check import REGISTRY, Check, checks, register, render_checks_table
from harness.contract.evidence import contract_facts, evidence_for
from harness.outcome import Outcome

pytestmark = pytest.mark.timeout(30)


def test_every_check_is_one_registered_module_with_its_row() -> None:
    registered = checks()
    assert tuple(c.name for c in registered) == CHECKS
    assert len({c.rank for c in registered}) == len(registered)
    for check in registered:
        assert type(check).__module__ == f"harness.contract.checks.{check.name}"
        assert check.fails_when and check.needs and check.shown_in, check.name


def test_a_new_check_is_one_class_the_verdict_evidence_and_table_follow() -> None:
    class TooManyRequests(Check):
        name = "test_only_one_request"
        rank = 10_000
        fails_when = "more than one request"
        needs = "the server's request count"
        shown_in = "`requests`"

        def applies(self, contract: Contract, facts: Facts) -> bool:
            return facts.requests is not None

        def holds(self, contract: Contract, facts: Facts) -> bool:
            return not facts.requests or facts.requests <= 1

        def evidence(self, contract: Contract, facts: Facts) -> str:
            return f"{facts.requests} requests"

    register(TooManyRequests)
    try:
        contract = Contract(ideal="reply", max_requests=5)
        two = Facts(outcome=Outcome("ok"), time_scale=1.0, ceiling_s=6.0, requests=2)
        verdict = judge(contract, two)
        assert verdict.failed_checks == ("test_only_one_request",)
        assert evidence_for(contract, two, verdict.failed_checks) == {
            "test_only_one_request": "2 requests"
        }
        assert contract_facts(contract, two)["checks"][-1] == "test_only_one_request"
        assert render_checks_table().splitlines()[-1] == (
            "| `test_only_one_request` | more than one request | the server's request count "
            "| `requests` |"
        )
    finally:
        REGISTRY.pop("test_only_one_request")
    assert "test_only_one_request" not in {c.name for c in checks()}


def test_a_check_name_is_registered_once() -> None:
    class Again(Check):
        name = "bounded"

    with pytest.raises(ValueError, match="'bounded' is empty or taken"):
        register(Again)


def test_the_contract_reads_action_traits_never_action_names() -> None:
    # Two test-only actions under new names, with the traits of status and hang: the
    # derivation and the checks treat them as they treat those.
    from dataclasses import dataclass

    from harness.faults import ACTIONS
    from harness.faults import register as register_action
    from harness.faults.actions.hang import Hang
    from harness.faults.actions.status import Status
    from harness.scenario import scenario_from_dict

    @dataclass(frozen=True)
    class Refuse(Status):
        name = "test_only_refuse"

    @dataclass(frozen=True)
    class Hold(Hang):
        name = "test_only_hold"

    def scenario(phase: str, action: str, **params):
        fault = {"phase": phase, "action": action, **params}
        return scenario_from_dict(
            {"name": "x", "summary": "x", "script": {"rules": [{"fault": fault}]}}
        )

    from harness.contract import contract_for

    register_action(Refuse)
    register_action(Hold)
    try:
        refused = contract_for(scenario("request", "test_only_refuse", code=401))
        assert refused.no_retry and refused.ideal == "reply_or_error"
        waited = contract_for(scenario("request", "test_only_refuse", code=429, retry_after_s=1.0))
        assert waited.retry_after_s == 1.0
        label = "test_only_refuse@request(code=429, retry_after_s=1.0)"
        early = Facts(
            outcome=Outcome("ok"),
            time_scale=1.0,
            ceiling_s=6.0,
            requests=2,
            request_log=[(1.0, label), (1.1, None)],
        )
        assert "retry_after" in judge(waited, early).failed_checks
        assert contract_for(scenario("headers", "test_only_hold")).dead_peer == "waiting"
        timed = contract_for(scenario("headers", "test_only_hold", duration_s=1.0))
        assert timed.dead_peer is None
    finally:
        ACTIONS.pop("test_only_refuse")
        ACTIONS.pop("test_only_hold")


def test_the_report_diff_reads_which_checks_the_outcome_decides_from_the_registry() -> None:
    from harness.report.diff_rules import OUTCOME_CHECKS

    assert OUTCOME_CHECKS == {
        "complete_reply",
        "clean_error",
        "honest_reply",
        "no_false_kill",
        "no_truncated_tool_execution",
    }
