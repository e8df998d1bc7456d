"""Scorecards of 1, 3 and 12 targets with long scenario names and long outcomes, for
the picture's and the browser's no-clipping checks."""

from __future__ import annotations

import dataclasses

from harness.report.scorecard import Scorecard, build_scorecard
from tests.report.test_reports import case

#: 60 characters: the longest scenario name the scorecard must show whole.
LONG_NAME = "responses_nonstream_close_delimited_fin_with_a_very_long_tai"
assert len(LONG_NAME) == 60

_SHAPES = (
    ("ok", None, "pass", ()),
    ("error", "StreamIdleTimeout", "safe", ()),
    ("hung", None, "fail", ("bounded", "alive_after", "no_leaks")),
    ("error", "RetriesExhausted:ExecutedTruncatedToolCall", "fail", ("clean_error",)),
    ("truncated_as_complete", None, "fail", ("honest_reply", "request_budget")),
    ("not_applicable", None, "fail", ("not_applicable",)),
)


def scorecard_of(n_targets: int, *, n_scenarios: int = 8) -> Scorecard:
    """``n_targets`` targets (one an out-of-tree path with a long name) x scenarios."""
    targets = ["reference", "openai-sdk", "tests.report.scorecard_fixtures:LongNamedTarget"]
    targets += [f"third-party-client-number-{i}" for i in range(3, 12)]
    scenarios = [LONG_NAME] + [f"chat_scenario_{i:02d}" for i in range(1, n_scenarios)]
    results = []
    for ti, target in enumerate(targets[:n_targets]):
        for si, name in enumerate(scenarios):
            kind, error, verdict, checks = _SHAPES[(ti + si) % len(_SHAPES)]
            r = case(scenario=name, target=target, kind=kind, error=error, expected="")
            results.append(dataclasses.replace(r, verdict=verdict, failed_checks=checks))
    wall = {t: 123.45 + i for i, t in enumerate(targets[:n_targets])}
    return build_scorecard(results, wall_s=wall, title=f"Scorecard of {n_targets} targets")


def _long_named_target():  # a Target subclass importable by path, named unlike its path
    from harness.targets.clients.openai_sdk import OpenAISDKTarget

    class LongNamedTarget(OpenAISDKTarget):
        name = "my-own-agent-with-a-long-display-name"

    LongNamedTarget.__module__ = __name__
    LongNamedTarget.__qualname__ = "LongNamedTarget"
    return LongNamedTarget


LongNamedTarget = _long_named_target()
