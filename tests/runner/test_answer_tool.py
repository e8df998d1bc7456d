"""An agent that takes its final answer from a tool of its own (``Target.answer_tool``,
smolagents' ``final_answer``) is answered through it: a healthy job ends in one model
call, a tool-call job in two (the work tool, then the answer tool), and the text the
agent hands back is what the server meant to answer. A real OpenAI SDK agent against the
embedded fault server."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from harness.runner import RunSettings, run_case
from harness.scenario import load_catalog

TESTS_DIR = str(Path(__file__).resolve().parents[1])
TARGET = "runner.agent_loop_targets:AnswerToolAgent"


def _scenario(name: str) -> Any:
    (scenario,) = [s for s in load_catalog() if s.name == name]
    return scenario


def _settings() -> RunSettings:
    return RunSettings(environ={**os.environ, "PYTHONPATH": TESTS_DIR}, time_scale=0.1)


def _offered(result: Any) -> list[tuple[str, ...]]:
    """The tools each request offered (the server's request shapes)."""
    return [e["detail"]["tools"] for e in result.timeline if e["kind"] == "request_shape"]


@pytest.mark.timeout(90)
@pytest.mark.parametrize(
    ("scenario", "called"),
    [
        ("chat_healthy_stream", ["final_answer"]),
        ("chat_tool_call", ["record_note", "final_answer"]),
    ],
)
def test_an_agent_with_an_answer_tool_gets_its_answer_through_it(server, scenario, called):
    result = run_case(_scenario(scenario), TARGET, server=server, settings=_settings())
    assert result.outcome.kind == "ok", (result.outcome, result.message)
    assert result.verdict == "pass", (result.failed_checks, result.evidence)
    # each model call's reply, as the agent read it: the answer came by its own tool
    assert result.details["answered_by"] == called
    assert result.requests == len(called)
    assert all("final_answer" in tools for tools in _offered(result))
    shapes = [e["detail"]["lineage"] for e in result.timeline if e["kind"] == "request_shape"]
    assert shapes == ["new", "continuation"][: len(called)]


@pytest.mark.timeout(90)
@pytest.mark.parametrize("scenario", ["chat_truncated_no_terminal", "chat_close_delimited_fin"])
def test_a_cut_answer_tool_call_handed_on_as_the_answer_is_truncated_as_complete(server, scenario):
    # the stream ends cleanly inside the answer's arguments; the agent hands on the cut
    # JSON it could not parse: a truncation of the answer, not some other text
    result = run_case(
        _scenario(scenario),
        "runner.agent_loop_targets:LenientAnswerToolAgent",
        server=server,
        settings=_settings(),
    )
    assert result.outcome.kind == "truncated_as_complete", (result.outcome, result.message)
    assert "answer tool call's arguments" in result.outcome.detail
    assert result.verdict == "fail" and "honest_reply" in result.failed_checks


@pytest.mark.timeout(90)
def test_a_whole_answer_tool_call_through_the_lenient_agent_is_ok(server):
    result = run_case(
        _scenario("chat_healthy_stream"),
        "runner.agent_loop_targets:LenientAnswerToolAgent",
        server=server,
        settings=_settings(),
    )
    assert result.outcome.kind == "ok", (result.outcome, result.message)
