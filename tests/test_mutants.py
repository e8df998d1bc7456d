"""Mutant stacks: each known bug is killed by its catalog scenario; the real stack is not.

Each case runs the real runner path (fault server on 127.0.0.1, target child process)
once for the unmutated baseline (``mutant:none``) and once for the mutant, and judges
both by the scenario's ``reference`` expectation, as ``harness mutants`` does.
"""

from __future__ import annotations

import argparse
import io
from typing import Any

import pytest

from harness.mutants_cli import add_arguments, markdown, mutation_report, run_mutants
from harness.outcome import Outcome
from harness.paths import CATALOG_DIR
from harness.runner import CaseResult, RunSettings, run_case
from harness.scenario import load_catalog, load_scenario
from harness.server import FaultServer
from harness.targets import load_target
from harness.targets.mutants.table import (
    BASELINE_TARGET,
    MUTANTS,
    DisabledDeadlineShown,
    KeepaliveNotSet,
    _Probe,
    mutant_components,
)


def _case(scenario_name: str, target: str) -> CaseResult:
    scenario = load_scenario(CATALOG_DIR / f"{scenario_name}.toml")
    with FaultServer() as srv:
        return run_case(scenario, target, server=srv, settings=RunSettings(jobs=1))


def _passes(scenario_name: str, result: CaseResult) -> bool:
    expected = load_scenario(CATALOG_DIR / f"{scenario_name}.toml").expected_for("reference")
    assert expected is not None
    return expected.matches(result.outcome) and not result.over_budget


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_mutant_is_killed_by_its_scenario_which_the_real_stack_passes(mutant: str) -> None:
    scenario = MUTANTS[mutant].killed_by
    baseline = _case(scenario, BASELINE_TARGET)
    assert _passes(scenario, baseline), f"baseline: {baseline.outcome.label} {baseline.message}"
    killed = _case(scenario, MUTANTS[mutant].target)
    assert not _passes(scenario, killed), f"{mutant} survived {scenario}: {killed.outcome.label}"


def test_every_mutant_names_a_killer_scenario_in_the_default_catalog() -> None:
    names = {s.name for s in load_catalog()}
    for mutant in MUTANTS.values():
        assert mutant.killed_by in names, mutant
        assert (
            load_scenario(CATALOG_DIR / f"{mutant.killed_by}.toml").expected_for("reference")
            is not None
        )


def test_mutant_targets_load_by_name_and_replace_exactly_one_seam() -> None:
    from harness.client import Components

    correct = Components()
    for mutant in MUTANTS.values():
        assert load_target(mutant.target).mutant == mutant.name
        changed = [
            seam
            for seam in (
                "keepalive_options",
                "transport_factory",
                "watchdog_factory",
                "retirement_check",
                "truncation_guard",
                "parse_retry_after",
                "describe_deadlines",
            )
            if getattr(mutant_components(mutant.name), seam) is not getattr(correct, seam)
        ]
        assert changed == [mutant.seam]
    assert load_target(BASELINE_TARGET).mutant is None


def test_unknown_mutant_is_refused_with_the_allowed_names() -> None:
    with pytest.raises(ValueError, match="unknown mutant 'typo'; allowed: no-keepalive"):
        mutant_components("typo")


class _Settings:
    keepalive = True


def test_probe_reports_keepalive_off_before_anything_else() -> None:
    probe = _Probe()
    probe.keepalive_off.append("('127.0.0.1', 5)")
    probe.sockets_seen = 1
    assert isinstance(probe.violation(_Settings()), KeepaliveNotSet)


def test_probe_reports_a_description_naming_a_disabled_deadline() -> None:
    probe = _Probe()
    probe.descriptions = [
        "first byte in 120.00 s, hard ceiling in 1.00 s",
        "hard ceiling in 0.50 s",
    ]
    probe.disabled = [{"first_byte_s"}, {"first_byte_s"}]
    violation = probe.violation(_Settings())
    assert isinstance(violation, DisabledDeadlineShown)
    assert "first_byte_s" in str(violation)
    probe.descriptions = ["hard ceiling in 1.00 s"]
    probe.disabled = [{"first_byte_s"}]
    assert probe.violation(_Settings()) is None


def _result(scenario: str, target: str, outcome: Outcome, *, requests: int = 1) -> CaseResult:
    return CaseResult(
        scenario=scenario,
        target=target,
        expected="-",
        outcome=outcome,
        matched=False,
        time_scale=0.05,
        ceiling_s=3.0,
        requests=requests,
        max_requests=3,
    )


def test_mutation_report_counts_kills_only_where_the_baseline_passes() -> None:
    scenarios = [
        load_scenario(CATALOG_DIR / f"{n}.toml")
        for n in ("chat_truncated_no_terminal", "chat_healthy_stream")
    ]
    truncated = Outcome("error", "RetriesExhausted", ("RetriesExhausted", "TruncatedStream"))
    results = [
        _result("chat_truncated_no_terminal", BASELINE_TARGET, truncated),
        _result(
            "chat_truncated_no_terminal",
            "mutant:no-truncation-guard",
            Outcome("truncated_as_complete"),
        ),
        _result("chat_truncated_no_terminal", "mutant:no-keepalive", truncated),
        # the baseline fails here, so the mutant's failure is no kill
        _result("chat_healthy_stream", BASELINE_TARGET, Outcome("hung")),
        _result("chat_healthy_stream", "mutant:no-keepalive", Outcome("hung")),
    ]
    report = mutation_report(scenarios, results, ["no-truncation-guard", "no-keepalive"])
    assert report.kills == {
        "no-truncation-guard": ("chat_truncated_no_terminal",),
        "no-keepalive": (),
    }
    assert report.survivors == ("no-keepalive",)
    assert report.score == 0.5
    assert "chat_healthy_stream" in report.unreliable
    table = markdown(report)
    assert "| `no-truncation-guard` |" in table and "`chat_truncated_no_terminal`" in table
    assert "**survived**" in table and "Mutation score: 1/2 = 50%" in table


def test_mutation_report_counts_a_blown_request_budget_as_a_kill() -> None:
    scenarios = [load_scenario(CATALOG_DIR / "chat_healthy_stream.toml")]
    results = [
        _result("chat_healthy_stream", BASELINE_TARGET, Outcome("ok")),
        _result("chat_healthy_stream", "mutant:no-keepalive", Outcome("ok"), requests=9),
    ]
    report = mutation_report(scenarios, results, ["no-keepalive"])
    assert report.killed == ("no-keepalive",)


@pytest.mark.timeout(60)
def test_harness_mutants_prints_the_kill_and_a_full_score() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    out = io.StringIO()
    status = run_mutants(
        parser.parse_args(
            ["--mutant", "no-truncation-guard", "--jobs", "1", "chat_truncated_no_terminal"]
        ),
        out=out,
    )
    text = out.getvalue()
    assert status == 0, text
    assert "no-truncation-guard" in text and "killed" in text
    assert "mutation score: 1/1 = 100%" in text


def test_harness_mutants_refuses_an_unknown_mutant(capsys: Any) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert run_mutants(parser.parse_args(["--mutant", "nope"])) == 2
    assert "allowed: no-keepalive" in capsys.readouterr().err
