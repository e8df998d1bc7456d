"""Payload faults edit the events of a healthy reply; the official SDKs' own parsers
(openai, anthropic) are the oracles for what a client then sees."""

from __future__ import annotations

import importlib
import json
import pkgutil

import anthropic
import httpx
import openai
import pytest

import harness.faults.actions as actions_pkg
from harness.faults import ACTIONS, script_from_dict
from harness.replies import DEFAULT_TOOL_SPEC as NOTE
from harness.replies import tools_for_api
from harness.server import FaultServer
from harness.sse import Event, SSEDecoder

pytestmark = pytest.mark.timeout(30)

PATHS = {"chat": "/chat/completions", "responses": "/responses", "messages": "/messages"}


def _load(server: FaultServer, fault: dict, **script: object) -> None:
    rule = {"match": {"attempts": 1}, "fault": fault}
    server.load(script_from_dict({"rules": [rule], **script}))


def _raw(server: FaultServer, api: str) -> bytes:
    body = {"model": "m", "stream": True, "max_tokens": 5, "tools": tools_for_api([NOTE], api)}
    body["input" if api == "responses" else "messages"] = [{"role": "user", "content": "hi"}]
    r = httpx.post(server.base_url + PATHS[api], json=body, timeout=10)
    return r.content


def _events(raw: bytes) -> list[Event]:
    d = SSEDecoder()
    return [e for e in d.feed(raw) + d.flush() if isinstance(e, Event)]


def _arguments(api: str, events: list[Event]) -> str:
    """The tool-call arguments the events delivered, accumulated as a client would."""
    out = ""
    for ev in events:
        if ev.data == "[DONE]":
            continue
        doc = json.loads(ev.data)
        if api == "chat":
            for choice in doc.get("choices", []):
                for tc in choice["delta"].get("tool_calls") or []:
                    out += tc.get("function", {}).get("arguments") or ""
        elif doc.get("type") == "response.function_call_arguments.delta":
            out += doc["delta"]
        elif (
            doc.get("type") == "content_block_delta" and doc["delta"]["type"] == "input_json_delta"
        ):
            out += doc["delta"]["partial_json"]
    return out


TERMINAL = {"chat": "[DONE]", "responses": "response.completed", "messages": "message_stop"}


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
@pytest.mark.parametrize("at", ["string", "json", "utf8"])
def test_cut_tool_call_ends_the_body_cleanly_inside_the_arguments(
    server: FaultServer, api: str, at: str
) -> None:
    _load(server, {"phase": "event:0", "action": "cut_tool_call", "at": at}, reply="tool_call")
    raw = _raw(server, api)
    events = _events(raw)
    assert TERMINAL[api] not in raw.decode("utf-8", "replace")
    args = _arguments(api, events)
    with pytest.raises(json.JSONDecodeError):
        json.loads(args)
    if at == "string":
        json.loads(args + '"}')  # closing the open string is enough
    elif at == "json":
        assert args.rstrip()[-1] in ",:{"
    else:
        with pytest.raises(UnicodeDecodeError):
            raw.decode("utf-8")  # the last event stops inside a multi-byte character
    assert server.wait_for("fault", timeout=5).detail["action"] == "cut_tool_call"


def test_cut_tool_call_is_a_truncated_tool_call_to_the_openai_sdk(server: FaultServer) -> None:
    _load(server, {"phase": "event:0", "action": "cut_tool_call"}, reply="tool_call")
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    args, finish = "", None
    for chunk in client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "x"}],
        stream=True,
        tools=tools_for_api([NOTE], "chat"),
    ):
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            for tc in choice.delta.tool_calls or []:
                args += tc.function.arguments or ""
    assert finish is None and args  # the SDK hands back the partial call without complaint
    with pytest.raises(json.JSONDecodeError):
        json.loads(args)


@pytest.mark.parametrize("stream", [True, False])
def test_cut_tool_call_leaves_a_reply_with_no_tool_call_whole(
    server: FaultServer, stream: bool
) -> None:
    """An agent's last call offers no tools (smolagents' final answer, a framework
    asking for a summary): a model answers it in text, so a cut of "the tool call" has
    nothing to cut. It used to cut the text reply at unit 0 (an empty body the agent
    returned as its answer: ``wrong_content``), as if the scenario's fault were reached."""
    rule = {"fault": {"phase": "event:0", "action": "cut_tool_call", "at": "string"}}
    server.load(script_from_dict({"rules": [rule], "reply": "tool_call", "events": 6}))
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    messages = [{"role": "user", "content": "x"}]
    if stream:
        chunks = list(client.chat.completions.create(model="m", messages=messages, stream=True))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        finish = next(c.choices[0].finish_reason for c in reversed(chunks) if c.choices)
    else:
        reply = client.chat.completions.create(model="m", messages=messages)
        text, finish = reply.choices[0].message.content or "", reply.choices[0].finish_reason
    (record,) = server.requests()
    assert text and text == record.expected_text and finish == "stop"
    assert not [e for e in server.timeline() if e.kind == "fault"]
    # the same rule on a request that offers the tool still cuts it
    with pytest.raises(json.JSONDecodeError):
        args = ""
        for chunk in client.chat.completions.create(
            model="m", messages=messages, stream=True, tools=tools_for_api([NOTE], "chat")
        ):
            for tc in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                args += tc.function.arguments or ""
        json.loads(args)
    assert server.wait_for("fault", timeout=5).detail["action"] == "cut_tool_call"


def test_inband_overloaded_error_raises_in_the_anthropic_sdk(server: FaultServer) -> None:
    _load(server, {"phase": "event:4", "action": "inband_error", "kind": "overloaded"})
    client = anthropic.Anthropic(
        base_url=server.base_url.removesuffix("/v1"), api_key="k", max_retries=0
    )
    with pytest.raises(anthropic.APIStatusError) as info:
        with client.messages.stream(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        ) as s:
            s.get_final_message()
    assert "overloaded" in str(info.value.body)


def test_inband_error_chunk_raises_in_the_openai_sdk_chat_stream(server: FaultServer) -> None:
    _load(server, {"phase": "event:3", "action": "inband_error", "kind": "rate_limit"})
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    with pytest.raises(openai.APIError, match="injected in-band error"):
        for _ in client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], stream=True
        ):
            pass


def test_inband_error_is_response_failed_on_the_responses_api(server: FaultServer) -> None:
    _load(server, {"phase": "event:5", "action": "inband_error"})
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    kinds = [e.type for e in client.responses.create(model="m", input="x", stream=True)]
    assert kinds[-1] == "response.failed" and "response.completed" not in kinds


def test_drop_field_finish_reason_leaves_every_chunk_without_one(server: FaultServer) -> None:
    _load(server, {"phase": "event:0", "action": "drop_field", "field": "finish_reason"})
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    chunks = list(
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], stream=True
        )
    )
    assert chunks and all(c.choices[0].finish_reason is None for c in chunks if c.choices)


@pytest.mark.parametrize(("action", "n"), [("duplicate_event", 2), ("swap_events", 2)])
def test_duplicate_and_swap_change_the_text_the_sdk_assembles(
    server: FaultServer, action: str, n: int
) -> None:
    _load(server, {"phase": f"event:{n}", "action": action}, events=4)
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    messages = [{"role": "user", "content": "x"}]
    faulted = "".join(
        c.choices[0].delta.content or ""
        for c in client.chat.completions.create(model="m", messages=messages, stream=True)
        if c.choices
    )
    expected = server.requests()[-1].expected_text
    assert (
        faulted != expected and sorted(faulted) != sorted("") and len(faulted) >= len(expected) - 0
    )
    if action == "swap_events":
        assert sorted(faulted) == sorted(expected)


def test_drop_event_terminal_removes_only_the_terminal_marker(server: FaultServer) -> None:
    _load(server, {"phase": "event:0", "action": "drop_event", "type": "terminal"})
    raw = _raw(server, "messages")
    names = [e.event for e in _events(raw)]
    assert "message_stop" not in names and names[-1] == "message_delta"


def test_comment_inserts_processing_lines_that_the_sdk_ignores(server: FaultServer) -> None:
    _load(server, {"phase": "event:1", "action": "comment", "count": 3})
    raw = _raw(server, "chat")
    assert raw.count(b": OPENROUTER PROCESSING\n\n") == 3 and raw.endswith(b"data: [DONE]\n\n")


def test_every_action_module_registers_exactly_one_action() -> None:
    """Adding an action is one module under harness/faults/actions (plus its test):
    discovery registers it, no other file names it."""
    names = sorted(m.name for m in pkgutil.iter_modules(actions_pkg.__path__))
    registered = {}
    for name in names:
        module = importlib.import_module(f"{actions_pkg.__name__}.{name}")
        found = [cls for cls in ACTIONS.values() if cls.__module__ == module.__name__]
        assert len(found) == 1, name
        registered[found[0].name] = found[0]
    assert registered == ACTIONS
