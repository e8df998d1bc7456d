"""What event:N counts per API, and that N < events always cuts before the terminal marker."""

from __future__ import annotations

import json

import pytest

from harness.faults import script_from_dict
from harness.server import FaultServer
from harness.server.apis import plan_reply
from tests.server.rawhttp import read_until, send, sse_events

pytestmark = pytest.mark.timeout(20)
MESSAGES = [{"role": "user", "content": "count me"}]
TERMINAL = {
    "chat": b"data: [DONE]",
    "responses": b"response.completed",
    "messages": b"message_stop",
}
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}


def body_for(api: str) -> dict:
    if api == "responses":
        return {"model": "m", "input": "count me", "stream": True}
    return {"model": "m", "messages": MESSAGES, "stream": True, "max_tokens": 10}


@pytest.mark.parametrize(
    ("api", "preamble", "trailer"),
    [("chat", 1, 2), ("responses", 4, 4), ("messages", 3, 3)],
)
def test_plan_units_are_preamble_deltas_and_trailer(api: str, preamble: int, trailer: int) -> None:
    plan = plan_reply(api, body_for(api), events=5)
    assert len(plan.units) == preamble + 5 + trailer
    assert TERMINAL[api] in plan.units[-1]
    assert plan.expected_text.count(" ") == 4


def test_chat_usage_chunk_only_when_asked() -> None:
    body = {**body_for("chat"), "stream_options": {"include_usage": True}}
    units = plan_reply("chat", body, events=3).units
    assert json.loads(units[-2][6:])["usage"]["completion_tokens"] == 3
    assert len(units) == len(plan_reply("chat", body_for("chat"), events=3).units) + 1


def test_content_replaces_the_seeded_words() -> None:
    plan = plan_reply("chat", body_for("chat"), events=8, content="ERROR sentinel here")
    assert plan.expected_text == "ERROR sentinel here" and len(plan.units) == 1 + 3 + 2


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
@pytest.mark.parametrize("n", [0, 1, 4, 7])
def test_fin_at_event_n_below_events_cuts_before_the_terminal_marker(
    server: FaultServer, api: str, n: int
) -> None:
    server.load(
        script_from_dict(
            {"events": 8, "rules": [{"fault": {"phase": f"event:{n}", "action": "fin"}}]}
        )
    )
    with send(server.port, PATHS[api], body_for(api)) as s:
        got = read_until(s, 5)
    payload, complete = got.body()
    assert got.ending == "eof" and not complete
    assert TERMINAL[api] not in payload
    assert len(sse_events(payload)) == n


def test_messages_status_error_uses_the_anthropic_error_shape(server: FaultServer) -> None:
    server.load(
        script_from_dict(
            {
                "rules": [
                    {
                        "fault": {
                            "phase": "request",
                            "action": "status",
                            "code": 529,
                            "message": "overloaded",
                        }
                    }
                ]
            }
        )
    )
    with send(server.port, PATHS["messages"], body_for("messages")) as s:
        got = read_until(s, 5, complete=True)
    doc = json.loads(got.body()[0])
    assert got.status == 529 and doc["type"] == "error" and doc["error"]["message"] == "overloaded"


def test_responses_sequence_numbers_are_consecutive() -> None:
    plan = plan_reply("responses", body_for("responses"), events=6)
    seqs = [json.loads(u.split(b"data: ", 1)[1])["sequence_number"] for u in plan.units]
    assert seqs == list(range(len(plan.units)))


def test_non_stream_body_is_one_unit_cut_exactly_by_bytes_n(server: FaultServer) -> None:
    body = {"model": "m", "messages": MESSAGES}
    server.load(script_from_dict({"rules": [{"fault": {"phase": "bytes:25", "action": "fin"}}]}))
    with send(server.port, PATHS["chat"], body) as s:
        got = read_until(s, 5)
    payload, complete = got.body()
    assert got.ending == "eof" and not complete and len(payload) == 25
    assert payload.startswith(b'{"id":"chatcmpl-')


def test_non_stream_event_0_is_before_the_body(server: FaultServer) -> None:
    body = {"model": "m", "messages": MESSAGES}
    server.load(script_from_dict({"rules": [{"fault": {"phase": "event:0", "action": "fin"}}]}))
    with send(server.port, PATHS["chat"], body) as s:
        got = read_until(s, 5)
    assert got.status == 200 and got.body() == (b"", False)


def test_keepalive_on_messages_stream_is_ping_events(server: FaultServer) -> None:
    server.load(
        script_from_dict({"events": 2, "event_interval_s": 0.06, "keepalive_comment_s": 0.02})
    )
    with send(server.port, PATHS["messages"], body_for("messages")) as s:
        payload, complete = read_until(s, 5, until=b"0\r\n\r\n").body()
    events = sse_events(payload)
    assert complete and events[-1].event == "message_stop"
    assert b": keepalive" not in payload
    assert [e.event for e in events].count("ping") >= 3  # 1 planned + keep-alives


@pytest.mark.parametrize(
    ("api", "result"),
    [
        ("chat", {"role": "tool", "tool_call_id": "c", "content": "ok"}),
        ("responses", {"type": "function_call_output", "call_id": "c", "output": "ok"}),
        ("messages", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c"}]}),
    ],
)
def test_a_tool_call_reply_answers_a_tool_result_with_text(api: str, result: dict) -> None:
    from harness.replies import DEFAULT_TOOL_SPEC, tools_for_api
    from harness.server.apis import plan_reply

    key = "input" if api == "responses" else "messages"
    tools = tools_for_api([DEFAULT_TOOL_SPEC], api)
    first = plan_reply(
        api,
        {key: [{"role": "user", "content": "x"}], "stream": True, "tools": tools},
        events=3,
        shape="tool_call",
    )
    after = plan_reply(
        api,
        {key: [{"role": "user", "content": "x"}, result], "stream": True, "tools": tools},
        events=3,
        shape="tool_call",
    )
    assert "tool_args" in first.kinds and "text" not in first.kinds
    assert "tool_args" not in after.kinds and "text" in after.kinds
    assert not after.expected_text.startswith("<tool_call")
