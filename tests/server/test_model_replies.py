"""The fault server answers as a model would: a tool call only to a request that offers
tools, naming one of them, with arguments valid against its JSON schema; text after a
tool result in any API's form."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.faults import FaultSpecError, script_from_dict
from harness.replies import (
    DEFAULT_TOOL_SPEC,
    render_tool_call,
    schema_arguments,
    seed_for_request,
    tool_arguments,
    tools_for_api,
)
from harness.server.apis import plan_reply

pytestmark = pytest.mark.timeout(60)

SEARCH = {
    "name": "search",
    "description": "one string argument",
    "parameters": {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
        "additionalProperties": False,
    },
}
BOOKING = {
    "name": "book",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "enum": ["Oslo", "Kyoto"]},
            "nights": {"type": "integer", "minimum": 1, "maximum": 14},
            "price": {"type": "number", "minimum": 10},
            "smoking": {"type": "boolean"},
            "guests": {
                "type": "array",
                "minItems": 1,
                "items": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
            "note": {"type": ["string", "null"], "maxLength": 12},
        },
        "required": ["city", "nights", "guests"],
    },
}


def _body(api: str, tools: list[dict[str, Any]] | None, turns: list[Any] | None = None) -> dict:
    key = "input" if api == "responses" else "messages"
    body: dict[str, Any] = {key: turns or [{"role": "user", "content": "x"}], "stream": True}
    if tools is not None:
        body["tools"] = tools_for_api(tools, api)
    return body


def _calls(plan: Any) -> list[tuple[str, dict[str, Any]]]:
    """(name, arguments) of each tool call in the plan's expected text."""
    out = []
    for part in plan.expected_text.split("<tool_call ")[1:]:
        name, _, args = part.partition(">")
        out.append((name, json.loads(args)))
    return out


def _valid(value: Any, schema: dict[str, Any]) -> None:
    """Check ``value`` against ``schema`` (the keywords the generator reads; jsonschema
    is not in this venv)."""
    if "enum" in schema:
        assert value in schema["enum"]
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    py = {
        "string": str,
        "integer": int,
        "number": (int, float),
        "boolean": bool,
        "array": list,
        "object": dict,
        "null": type(None),
    }
    typed = [py[k] for k in kinds if k]
    assert not typed or any(isinstance(value, t) for t in typed), (value, schema)
    if isinstance(value, dict):
        props = schema.get("properties", {})
        assert set(schema.get("required", ())) <= set(value)
        if schema.get("additionalProperties") is False:
            assert set(value) <= set(props)
        for k, v in value.items():
            if k in props:
                _valid(v, props[k])
    if isinstance(value, list):
        assert len(value) >= schema.get("minItems", 0)
        for v in value:
            _valid(v, schema.get("items", {}))
    if isinstance(value, int | float) and not isinstance(value, bool):
        assert value >= schema.get("minimum", value) and value <= schema.get("maximum", value)
    if isinstance(value, str) and "maxLength" in schema:
        assert len(value) <= schema["maxLength"]


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
@pytest.mark.parametrize("shape", ["tool_call", "parallel_tool_calls"])
def test_a_request_that_offers_no_tools_gets_text(api: str, shape: str) -> None:
    for tools in (None, []):
        plan = plan_reply(api, _body(api, tools), events=4, shape=shape)
        assert "tool_args" not in plan.kinds and "text" in plan.kinds
        assert "<tool_call" not in plan.expected_text


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_the_call_names_an_offered_tool_with_arguments_valid_against_its_schema(api: str) -> None:
    offered = [SEARCH, BOOKING]
    plan = plan_reply(api, _body(api, offered), events=5, shape="tool_call")
    [(name, args)] = _calls(plan)
    assert name == "search"  # the first offered
    _valid(args, SEARCH["parameters"])
    assert isinstance(args["query"], str) and args["query"]
    # the script's ``tool`` knob picks another offered one
    plan = plan_reply(api, _body(api, offered), events=5, shape="parallel_tool_calls", tool="book")
    calls = _calls(plan)
    assert [n for n, _ in calls] == ["book", "book"]
    for _, args in calls:
        _valid(args, BOOKING["parameters"])
    # a named tool the request does not offer: the first offered, never an unoffered name
    plan = plan_reply(api, _body(api, [SEARCH]), events=5, shape="tool_call", tool="book")
    assert [n for n, _ in _calls(plan)] == ["search"]


def test_the_default_tool_keeps_its_note_shape() -> None:
    body = _body("chat", [DEFAULT_TOOL_SPEC])
    plan = plan_reply("chat", body, events=6, shape="tool_call")
    [(name, args)] = _calls(plan)
    assert name == "record_note" and args["path"].endswith(".txt") and args["text"]
    # the same bytes as before tools were read: the catalog's measured expectations hold
    assert plan.expected_text == render_tool_call(
        "record_note", tool_arguments(seed_for_request(body), 0, words=6)
    )


@pytest.mark.parametrize(
    ("api", "result"),
    [
        ("chat", {"role": "tool", "tool_call_id": "c", "content": "ok"}),
        ("responses", {"type": "function_call_output", "call_id": "c", "output": "ok"}),
        ("messages", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c"}]}),
    ],
)
def test_after_a_tool_result_in_any_form_the_answer_is_text(api: str, result: dict) -> None:
    turns = [{"role": "user", "content": "x"}, result]
    plan = plan_reply(api, _body(api, [SEARCH], turns), events=3, shape="tool_call")
    assert "tool_args" not in plan.kinds and "text" in plan.kinds


def test_the_tool_knob_is_validated() -> None:
    assert script_from_dict({"reply": "tool_call", "tool": "search"}).tool == "search"
    with pytest.raises(FaultSpecError, match="tool"):
        script_from_dict({"reply": "tool_call", "tool": ""})
    assert script_from_dict({"answer_tool": "final_answer"}).answer_tool == "final_answer"
    with pytest.raises(FaultSpecError, match="answer_tool"):
        script_from_dict({"answer_tool": 3})


#: An agent framework's own tool for the final answer (smolagents' ``final_answer``).
FINAL = {
    "name": "final_answer",
    "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}},
}


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
@pytest.mark.parametrize("shape", ["text", "reasoning"])
def test_an_offered_answer_tool_carries_the_text_reply_and_the_text_is_expected(api, shape):
    body = _body(api, [FINAL, SEARCH])
    text = plan_reply(api, _body(api, None), events=4, shape=shape).expected_text
    plan = plan_reply(api, body, events=4, shape=shape, answer_tool="final_answer")
    # the text a reply would carry, as the answer tool's one argument, in fragments
    assert "tool_args" in plan.kinds and "text" not in plan.kinds
    assert plan.kinds.count("tool_args") == 4 and plan.tool_calls == 1
    assert plan.expected_text == text  # what the agent hands its caller
    streamed = b"".join(plan.units).decode()
    assert "final_answer" in streamed and "search" not in streamed
    if shape == "reasoning":
        assert "reasoning" in "".join(plan.kinds)
    # not offered: the text reply, as without the knob
    plain = plan_reply(api, _body(api, [SEARCH]), events=4, shape=shape, answer_tool="final_answer")
    assert "text" in plain.kinds and plain.expected_text == text


@pytest.mark.parametrize(
    ("api", "result"),
    [
        ("chat", {"role": "tool", "tool_call_id": "c", "content": "ok"}),
        ("responses", {"type": "function_call_output", "call_id": "c", "output": "ok"}),
        ("messages", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c"}]}),
    ],
)
def test_an_agent_loop_calls_its_work_tool_then_answers_through_the_answer_tool(api, result):
    offered = [FINAL, SEARCH]  # the answer tool first: a tool call still names the other
    plan = plan_reply(
        api, _body(api, offered), events=3, shape="tool_call", answer_tool="final_answer"
    )
    [(name, args)] = _calls(plan)
    assert name == "search"
    _valid(args, SEARCH["parameters"])
    turns = [{"role": "user", "content": "x"}, result]
    after = plan_reply(
        api, _body(api, offered, turns), events=3, shape="tool_call", answer_tool="final_answer"
    )
    assert after.tool_calls == 1 and "text" not in after.kinds
    assert "<tool_call" not in after.expected_text and after.expected_text
    # offered nothing but the answer tool: the model answers through it at once
    only = plan_reply(
        api, _body(api, [FINAL]), events=3, shape="tool_call", answer_tool="final_answer"
    )
    assert only.tool_calls == 1 and "text" not in only.kinds
    assert only.expected_text and "<tool_call" not in only.expected_text


_leaf = st.sampled_from(
    [
        {"type": "string"},
        {"type": "integer", "minimum": -3, "maximum": 3},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
        {"enum": ["a", 1, None]},
        {"type": "string", "maxLength": 4},
    ]
)
_schema = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.builds(lambda items: {"type": "array", "items": items, "minItems": 1}, inner),
        st.builds(
            lambda props: {"type": "object", "properties": props, "required": sorted(props)},
            st.dictionaries(st.sampled_from(["a", "b", "path", "q"]), inner, max_size=3),
        ),
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["x", "y", "path"]), _schema, min_size=1, max_size=3))
def test_generated_arguments_are_valid_for_any_schema(props: dict[str, Any]) -> None:
    schema = {"type": "object", "properties": props, "required": sorted(props)}
    _valid(json.loads(schema_arguments(schema, "seed", 0, words=3)), schema)


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
@pytest.mark.parametrize("tools", [5, "search", {"name": "search"}, None])
def test_a_tools_field_that_is_not_a_list_offers_nothing(api: str, tools: Any) -> None:
    # every request's offered tools are read (an answer tool may be among them): a body
    # may say anything, and one that offers no list gets the text answer, never an error
    body = {**_body(api, None), "tools": tools}
    for shape in ("text", "tool_call"):
        plan = plan_reply(api, body, events=3, shape=shape, answer_tool="final_answer")
        assert "text" in plan.kinds and "<tool_call" not in plan.expected_text
