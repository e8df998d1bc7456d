"""The hermes target's harmless tool: what counts as cut arguments, and a turn in which
hermes ran the tool with them is reported as ExecutedTruncatedToolCall, classified as
executed_truncated_tool_call (checked on the driver's result builder, without hermes)."""

from __future__ import annotations

import json

import pytest

from harness.outcome import classify
from harness.replies import tool_arguments
from harness.targets.hermes.in_venv.hermes_driver import tool as hermes_tool
from harness.targets.hermes.in_venv.hermes_driver.turns import protocol_result
from harness.targets.runtime.wellformed import problems

TURN = {
    "index": 0,
    "text": "done.",
    "completed": True,
    "failed": False,
    "partial": False,
    "turn_exit_reason": "text_response(finish_reason=stop)",
    "error": None,
    "api_calls": 2,
    "exception": None,
}


@pytest.mark.parametrize("call", range(3))
def test_the_fault_servers_complete_arguments_are_never_truncated(call: int) -> None:
    assert not hermes_tool.truncated(json.loads(tool_arguments(f"seed{call}", call, words=5)))


@pytest.mark.parametrize(
    "args", [{}, {"path": "notes/ca"}, {"path": "notes/a.txt"}, {"text": "x"}, "not a dict", None]
)
def test_arguments_missing_a_field_or_cut_inside_the_path_are_truncated(args: object) -> None:
    assert hermes_tool.truncated(args)


def test_a_turn_that_ran_the_tool_with_cut_arguments_is_reported_as_raised() -> None:
    full = json.loads(tool_arguments("s", 0, words=3))
    ok = protocol_result({"turns": [{**TURN, "tool_calls": [full]}]})
    assert ok["status"] == "returned"
    bad = protocol_result({"turns": [{**TURN, "tool_calls": [{"path": "notes/ca"}]}]})
    assert bad["status"] == "raised" and bad["error"] == "ExecutedTruncatedToolCall"
    assert bad["mro"] == ["ExecutedTruncatedToolCall", "Exception"]
    message = {"event": "result", "t": 1.0, "events": [], "events_dropped": 0, **bad}
    assert problems(message) == []
    # one place maps the report to its own outcome, and every contract fails it
    assert classify(bad, expected_text="done.", alive=False).kind == "executed_truncated_tool_call"
    assert classify(ok, expected_text="done.", alive=False).kind == "ok"


def test_the_tool_records_its_arguments_under_hermes_home(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    assert json.loads(hermes_tool._record({"path": "a.txt", "text": "ü"})) == {"recorded": True}
    assert hermes_tool.executed() == [{"arguments": {"path": "a.txt", "text": "ü"}}]
