"""``anthropic-sdk``: the official Anthropic SDK at its defaults, end to end on the fault server."""

from __future__ import annotations

import pytest

from harness.runner import RunSettings, run_case
from harness.scenario import scenario_from_dict

pytest.importorskip("anthropic")

FAST = 0.02
TARGET = "anthropic-sdk"


def make(name: str, expected: str = "ok", **fields) -> object:
    return scenario_from_dict(
        {"name": name, "summary": name, "api": "messages", "expected": {TARGET: expected}, **fields}
    )


@pytest.mark.timeout(300)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
def test_healthy_messages_call_returns_the_full_reply_with_no_leak(server, stream):
    result = run_case(
        make("healthy", stream=stream),
        TARGET,
        server=server,
        settings=RunSettings(time_scale=FAST, min_ceiling_s=30.0),
    )
    assert result.outcome.kind == "ok", result.message
    assert result.finish_reason == "end_turn"
    assert result.requests == 1
    assert result.leaks is not None and result.leaks.total == 0


@pytest.mark.timeout(300)
def test_stream_without_message_stop_comes_back_as_a_complete_answer(server):
    # The SDK's stream helper ends cleanly when the body ends, message_stop or not.
    s = make(
        "truncated",
        "truncated_as_complete",
        script={"rules": [{"fault": {"phase": "event:3", "action": "truncate"}}]},
    )
    result = run_case(
        s, TARGET, server=server, settings=RunSettings(time_scale=FAST, min_ceiling_s=30.0)
    )
    assert result.outcome.kind == "truncated_as_complete", result.message
    assert result.finish_reason is None


@pytest.mark.timeout(300)
def test_chat_scenarios_are_not_applicable(server):
    s = scenario_from_dict({"name": "c", "summary": "c", "expected": {TARGET: "not_applicable"}})
    result = run_case(
        s, TARGET, server=server, settings=RunSettings(time_scale=FAST, min_ceiling_s=30.0)
    )
    assert result.outcome.kind == "not_applicable"
