"""A case plan to judge a hand-made observation with (``harness.judge.judge_case``)."""

from __future__ import annotations

from dataclasses import replace

from harness.outcome import Expected
from harness.planning import CasePlan, RunSettings, plan_case
from harness.scenario import Scenario


def case_plan(
    scenario: Scenario,
    target: str = "reference",
    *,
    expected: Expected | None = None,
    max_requests: int | None = None,
    time_scale: float = 1.0,
    ceiling_s: float = 60.0,
) -> CasePlan:
    """The runner's plan for ``scenario`` x ``target``, with the judged-by facts given."""
    plan = plan_case(scenario, target, RunSettings(time_scale=time_scale))
    return replace(
        plan,
        expected=expected,
        max_requests=max_requests,
        time_scale=time_scale,
        ceiling_s=ceiling_s,
    )
