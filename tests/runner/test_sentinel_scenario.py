"""The runner's sentinel detector, end to end: a reply whose text is an error message is
``error_as_reply`` (failing ``honest_reply``), never ``ok``. This scenario tests the
harness, not a client (no client can tell the provider's text from a reply), so it lives
here and not in the catalog, where every client would be scored against it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.runner import RunSettings, run_case
from harness.scenario import load_catalog, load_scenario
from harness.server import FaultServer

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "error_text_as_reply.toml"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("target", ["reference", "openai-sdk"])
def test_an_error_text_returned_as_the_reply_is_flagged_not_ok(target):
    scenario = load_scenario(SCENARIO)
    with FaultServer() as server:
        result = run_case(scenario, target, server=server, settings=RunSettings(time_scale=0.05))
    assert result.outcome.kind == "error_as_reply", result.message
    assert "API call failed" in result.outcome.detail
    assert result.matched and (result.verdict, result.failed_checks) == ("fail", ("honest_reply",))


def test_the_harness_self_test_is_not_in_the_catalog():
    assert "error_text_as_reply" not in {s.name for s in load_catalog()}
