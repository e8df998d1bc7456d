"""Lineage against real clients: the official SDKs talk to the fault server, which places
each request in its conversation (``harness.apis.lineage``) -- a retry (the openai
SDK's own retry on a 500), a continuation by each API's tool-result form and by text,
and a new conversation."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest

from harness.faults import script_from_dict
from harness.replies import DEFAULT_TOOL_SPEC, tools_for_api
from harness.server import FaultServer

pytestmark = pytest.mark.timeout(60)
USER = {"role": "user", "content": "note the weather"}


def _openai(server: FaultServer, retries: int = 0) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=retries)


def _lineages(server: FaultServer) -> list[dict[str, Any]]:
    return [r.lineage for r in server.requests()]


def test_the_sdks_own_retry_on_a_500_is_a_retry(server: FaultServer) -> None:
    rule = {
        "match": {"attempts": 1},
        "fault": {"phase": "request", "action": "status", "code": 500},
    }
    server.load(script_from_dict({"rules": [rule]}))
    with _openai(server, retries=1) as client:
        reply = client.chat.completions.create(
            model="m", messages=[USER], stream=True, stream_options={"include_usage": True}
        )
        assert "".join(c.choices[0].delta.content or "" for c in reply if c.choices)
    first, second = server.requests()
    assert first.lineage == {
        "kind": "new",
        "of": None,
        "call": first.index,
        "appended": [],
        "replaced": [],
    }
    assert second.lineage == {
        "kind": "retry",
        "of": first.index,
        "call": first.index,
        "appended": [],
        "replaced": [],
    }


def test_a_chat_tool_result_continues_the_call_and_gets_text(server: FaultServer) -> None:
    server.load(script_from_dict({"reply": "tool_call", "events": 4}))
    tools = tools_for_api([DEFAULT_TOOL_SPEC], "chat")
    with _openai(server) as client:
        first = client.chat.completions.create(model="m", messages=[USER], tools=tools)
        message = first.choices[0].message
        [call] = message.tool_calls or []
        turns = [
            USER,
            message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "recorded"},
        ]
        # the final-answer call offers no tools: still the conversation's next call
        final = client.chat.completions.create(model="m", messages=turns)
    assert final.choices[0].message.content and not final.choices[0].message.tool_calls
    a, b = server.requests()
    assert b.lineage == {
        "kind": "continuation",
        "of": a.index,
        "call": b.index,
        "appended": ["assistant:tool_call", "tool:tool_result"],
        "replaced": [],
    }
    shape = [e.detail for e in server.timeline() if e.kind == "request_shape"]
    assert shape[0]["tools"] == ("record_note",) and shape[1]["tools"] == ()
    assert shape[1]["roles"] == ("user", "assistant", "tool") and shape[1]["messages"] == 3
    assert shape[1]["lineage"] == "continuation" and shape[1]["of"] == a.index


def test_a_responses_function_call_output_continues_the_call(server: FaultServer) -> None:
    server.load(script_from_dict({"reply": "tool_call", "events": 4}))
    tools = tools_for_api([DEFAULT_TOOL_SPEC], "responses")
    with _openai(server) as client:
        first = client.responses.create(model="m", input=[USER], tools=tools)
        [item] = [o for o in first.output if o.type == "function_call"]
        assert item.name == "record_note" and json.loads(item.arguments)["path"].endswith(".txt")
        turns: list[Any] = [
            USER,
            {
                "type": "function_call",
                "call_id": item.call_id,
                "name": item.name,
                "arguments": item.arguments,
            },
            {"type": "function_call_output", "call_id": item.call_id, "output": "recorded"},
        ]
        final = client.responses.create(model="m", input=turns, tools=tools)
        # the same output by previous_response_id (the server keeps nothing: it reads ids)
        chained = client.responses.create(
            model="m",
            previous_response_id=first.id,
            input=[turns[2]],
            tools=tools,
        )
    assert final.output_text and chained.output_text
    a, b, c = server.requests()
    assert b.lineage["kind"] == "continuation" and b.lineage["of"] == a.index
    assert b.lineage["appended"] == ["assistant:tool_call", "tool:tool_result"]
    assert c.lineage == {
        "kind": "continuation",
        "of": a.index,
        "call": c.index,
        "appended": ["tool:tool_result"],
        "replaced": [],
    }


def test_a_messages_tool_result_block_continues_the_call(server: FaultServer) -> None:
    server.load(script_from_dict({"reply": "tool_call", "events": 4}))
    tools = tools_for_api([DEFAULT_TOOL_SPEC], "messages")
    base = server.base_url.removesuffix("/v1")
    with anthropic.Anthropic(base_url=base, api_key="k", max_retries=0) as client:
        first = client.messages.create(
            model="m", max_tokens=100, messages=[USER], tools=tools, system="be brief"
        )
        [use] = [b for b in first.content if b.type == "tool_use"]
        assert set(use.input) == {"path", "text"}
        turns: list[Any] = [
            USER,
            {"role": "assistant", "content": [b.model_dump() for b in first.content]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "done"}],
            },
        ]
        with client.messages.stream(
            model="m", max_tokens=100, messages=turns, tools=tools, system="be brief"
        ) as stream:
            final = stream.get_final_message()
    assert final.stop_reason == "end_turn"
    a, b = server.requests()
    assert b.lineage["kind"] == "continuation" and b.lineage["of"] == a.index
    assert b.lineage["appended"] == ["assistant:tool_call", "user:tool_result"]


def test_a_text_observation_continues_and_another_prompt_is_new(server: FaultServer) -> None:
    server.load(script_from_dict({"events": 3}))
    with _openai(server) as client:
        first = client.chat.completions.create(model="m", messages=[USER])
        said = first.choices[0].message.content
        turns = [
            USER,
            {"role": "assistant", "content": said},
            {"role": "user", "content": "Observation: it rains."},
        ]
        client.chat.completions.create(model="m", messages=turns, stream=True).close()
        other = [{"role": "user", "content": "a different question"}]
        client.chat.completions.create(model="m", messages=other)
    a, b, c = server.requests()
    assert (b.lineage["kind"], b.lineage["of"]) == ("continuation", a.index)
    assert b.lineage["appended"] == ["assistant:text", "user:text"]
    assert c.lineage == {"kind": "new", "of": None, "call": c.index, "appended": [], "replaced": []}


def test_a_text_observation_of_a_tool_call_gets_the_final_answer_and_so_does_its_retry(
    server: FaultServer,
) -> None:
    # smolagents 1.26.0's ToolCallingAgent (audit, 2026-12-06): the tool call goes back as
    # an assistant text ("Calling tools: [...]"), its output as a user turn
    # ("Observation: ..."), tools still offered; the server answered it with another
    # tool call until the agent's step limit
    server.load(script_from_dict({"reply": "tool_call", "events": 4}))
    tools = tools_for_api([DEFAULT_TOOL_SPEC], "chat")
    with _openai(server) as client:
        first = client.chat.completions.create(model="m", messages=[USER], tools=tools)
        [call] = first.choices[0].message.tool_calls or []
        turns = [
            USER,
            {"role": "assistant", "content": f"Calling tools:\n[{call.model_dump()}]"},
            {"role": "user", "content": f"Call id: {call.id}\nObservation:\nrecorded"},
        ]
        final = client.chat.completions.create(model="m", messages=turns, tools=tools)
        # the same call asked again (a retry): the same answer
        asked_again = client.chat.completions.create(model="m", messages=turns, tools=tools)
        # a client asking the model to go on with a cut answer (hermes's continuation)
        # echoes no call: the model has acted on nothing and calls its tool
        cut = [
            USER,
            {"role": "assistant", "content": "I will"},
            {"role": "user", "content": "Go on."},
        ]
        again = client.chat.completions.create(model="m", messages=cut, tools=tools)
    for reply in (final, asked_again):
        assert reply.choices[0].message.content and not reply.choices[0].message.tool_calls
    a, b, c, d = server.requests()
    assert b.lineage["appended"] == ["assistant:text", "user:text"]
    assert (c.lineage["kind"], c.lineage["of"]) == ("retry", b.index)
    assert again.choices[0].message.tool_calls and d.lineage["kind"] == "continuation"
