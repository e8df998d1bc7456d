"""The reference stack on agent-shaped replies from the real fault server: tool calls and
reasoning come back complete, a cut tool call is never returned, an in-band overload is
retried, and a long reasoning pause is not a stall."""

from __future__ import annotations

import json

import pytest

from harness.client import ReferenceClient, errors
from harness.faults import script_from_dict
from harness.replies import render_tool_call, render_tool_calls

from .support import FAST, USER

pytestmark = pytest.mark.timeout(30)

TOOLS = [
    {
        "type": "function",
        "function": {"name": "record_note", "parameters": {"type": "object", "properties": {}}},
    }
]


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
@pytest.mark.parametrize("stream", [True, False])
def test_parallel_tool_calls_come_back_complete_with_parsed_arguments(
    fault_server, api, stream
) -> None:
    fault_server.load(script_from_dict({"reply": "parallel_tool_calls", "events": 5}))
    with ReferenceClient(fault_server.base_url, settings=FAST) as client:
        reply = client.complete(USER, api=api, stream=stream, tools=TOOLS, tool_choice="auto")
    expected = fault_server.requests()[-1].expected_text
    got = "".join(render_tool_call(c.name, c.raw_arguments) for c in reply.tool_calls)
    assert len(reply.tool_calls) == 2 and got == expected
    assert all(set(c.arguments) == {"path", "text"} for c in reply.tool_calls)
    assert json.loads(reply.tool_calls[1].raw_arguments) == reply.tool_calls[1].arguments


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_reasoning_then_text_returns_both(fault_server, api) -> None:
    fault_server.load(script_from_dict({"reply": "reasoning", "reasoning_events": 3}))
    with ReferenceClient(fault_server.base_url, settings=FAST) as client:
        reply = client.complete(USER, api=api)
    assert reply.text == fault_server.requests()[-1].expected_text
    assert reply.reasoning.startswith("thinking about") and reply.reasoning not in reply.text


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
@pytest.mark.parametrize("at", ["string", "json", "utf8"])
def test_a_cut_tool_call_raises_truncated_stream_on_every_attempt(fault_server, api, at) -> None:
    rule = {"fault": {"phase": "event:0", "action": "cut_tool_call", "at": at}}
    fault_server.load(script_from_dict({"reply": "tool_call", "rules": [rule]}))
    with ReferenceClient(fault_server.base_url, settings=FAST.replace(max_attempts=2)) as client:
        with pytest.raises(errors.RetriesExhausted) as info:
            client.complete(USER, api=api, tools=TOOLS)
    assert [type(e) for e in info.value.attempts] == [errors.TruncatedStream] * 2


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_inband_overloaded_mid_stream_is_retried_and_the_retry_succeeds(fault_server, api) -> None:
    rule = {"match": {"attempts": 1}, "fault": {"phase": "event:4", "action": "inband_error"}}
    fault_server.load(script_from_dict({"rules": [rule]}))
    deltas: list[str] = []
    with ReferenceClient(fault_server.base_url, settings=FAST) as client:
        reply = client.complete(USER, api=api, on_delta=deltas.append)
    assert reply.attempts == 2 and reply.text == fault_server.requests()[-1].expected_text


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_a_reasoning_pause_longer_than_the_stale_deadline_is_not_killed(fault_server, api) -> None:
    # 8 reasoning events 0.1 s apart: 0.8 s with no text, stale_call_s 0.3 and
    # first_byte 0.3: only "any event is progress" lets this call live
    fault_server.load(
        script_from_dict(
            {"reply": "reasoning", "reasoning_events": 8, "event_interval_s": 0.1, "events": 2}
        )
    )
    settings = FAST.replace(first_byte_s=0.3, stream_idle_s=0.3, stale_call_s=0.3, max_attempts=1)
    with ReferenceClient(fault_server.base_url, settings=settings) as client:
        reply = client.complete(USER, api=api)
    assert reply.attempts == 1 and reply.text == fault_server.requests()[-1].expected_text


def test_render_tool_calls_joins_fragments_in_index_or_arrival_order() -> None:
    calls = {1: ["b", '{"x"', ": 1}"], 0: ["a", "{}"]}
    by_index = render_tool_call("a", "{}") + render_tool_call("b", '{"x": 1}')
    assert render_tool_calls(calls) == by_index
    ids = {"fc_2": ["b", "{", "}"], "fc_1": [""]}
    assert render_tool_calls(ids, by_key=False) == render_tool_call("b", "{}") + "<tool_call >"
