"""The real openai SDK against the fault server, on an HTTP client we own: httpx for
openai 2.x, httpx2 for openai 3.x (the conftest re-runs this file under both lines)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from harness.faults import script_from_dict
from harness.server import FaultServer
from harness.sse import Event, SSEDecoder

pytestmark = pytest.mark.timeout(30)
MESSAGES = [{"role": "user", "content": "hello there"}]


#: the HTTP library this openai line is built on
SDK_HTTP: Any = importlib.import_module(
    "httpx2" if int(openai.__version__.split(".")[0]) >= 3 else "httpx"
)


@pytest.fixture
def client(server: FaultServer) -> Iterator[openai.OpenAI]:
    http = SDK_HTTP.Client(timeout=10)
    with openai.OpenAI(
        base_url=server.base_url, api_key="any", http_client=http, max_retries=0
    ) as c:
        yield c


def test_chat_non_streaming_returns_the_full_reply(
    server: FaultServer, client: openai.OpenAI
) -> None:
    reply = client.chat.completions.create(model="test-model", messages=MESSAGES)
    assert reply.choices[0].finish_reason == "stop"
    assert reply.choices[0].message.content == server.requests()[0].expected_text
    assert reply.usage is not None and reply.usage.completion_tokens == 8


def test_chat_streaming_returns_the_full_reply_and_usage(
    server: FaultServer, client: openai.OpenAI
) -> None:
    stream = client.chat.completions.create(
        model="test-model", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == server.requests()[0].expected_text
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
    assert server.requests()[0].stream is True


def test_responses_non_streaming_returns_the_full_reply(
    server: FaultServer, client: openai.OpenAI
) -> None:
    reply = client.responses.create(model="test-model", input="hello there")
    assert reply.status == "completed"
    assert reply.output_text == server.requests()[0].expected_text


def test_responses_streaming_events_parse_and_complete(
    server: FaultServer, client: openai.OpenAI
) -> None:
    events = list(client.responses.create(model="test-model", input="hello there", stream=True))
    types = [e.type for e in events]
    assert types[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert types[-1] == "response.completed"
    expected = server.requests()[0].expected_text
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == expected
    assert events[-1].response.output_text == expected
    assert [e.sequence_number for e in events] == list(range(len(events)))


def test_responses_stream_helper_accumulates_the_final_response(
    server: FaultServer, client: openai.OpenAI
) -> None:
    with client.responses.stream(model="test-model", input="hello there") as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert final.output_text == server.requests()[0].expected_text


def test_chat_stream_cut_by_fin_raises_in_the_sdk(
    server: FaultServer, client: openai.OpenAI
) -> None:
    server.load(script_from_dict({"rules": [{"fault": {"phase": "event:3", "action": "fin"}}]}))
    with pytest.raises((SDK_HTTP.RemoteProtocolError, openai.APIConnectionError)):
        list(client.chat.completions.create(model="test-model", messages=MESSAGES, stream=True))


def test_close_delimited_stream_cut_by_fin_looks_complete_to_the_sdk(
    server: FaultServer, client: openai.OpenAI
) -> None:
    # The silent-truncation shape from DESIGN.md: no error, and no [DONE] either.
    server.load(
        script_from_dict(
            {"framing": "close", "rules": [{"fault": {"phase": "event:3", "action": "fin"}}]}
        )
    )
    chunks = list(
        client.chat.completions.create(model="test-model", messages=MESSAGES, stream=True)
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text and text != server.requests()[0].expected_text
    assert server.requests()[0].expected_text.startswith(text)


def test_status_429_reaches_the_sdk_with_message_and_retry_after(
    server: FaultServer, client: openai.OpenAI
) -> None:
    server.load(
        script_from_dict(
            {
                "rules": [
                    {
                        "fault": {
                            "phase": "request",
                            "action": "status",
                            "code": 429,
                            "retry_after_s": 3,
                            "message": "rate limited here",
                        }
                    }
                ]
            }
        )
    )
    with pytest.raises(openai.RateLimitError) as info:
        client.chat.completions.create(model="test-model", messages=MESSAGES)
    assert info.value.response.headers["retry-after"] == "3"
    assert "rate limited here" in str(info.value)


@pytest.mark.parametrize("framing", ["chunked", "content-length", "close"])
@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("stream", [True, False])
def test_every_framing_completes_with_the_sdk(
    server: FaultServer, client: openai.OpenAI, framing: str, api: str, stream: bool
) -> None:
    server.load(script_from_dict({"framing": framing}))
    if api == "chat":
        result = client.chat.completions.create(
            model="test-model", messages=MESSAGES, stream=stream
        )
        text = (
            "".join(c.choices[0].delta.content or "" for c in result)
            if stream
            else result.choices[0].message.content
        )
    else:
        result = client.responses.create(model="test-model", input="hello there", stream=stream)
        text = (
            "".join(e.delta for e in result if e.type == "response.output_text.delta")
            if stream
            else result.output_text
        )
    assert text == server.requests()[0].expected_text


def test_anthropic_messages_stream_parses_with_harness_sse(server: FaultServer) -> None:
    body = {"model": "claude-test", "max_tokens": 64, "stream": True, "messages": MESSAGES}
    with httpx.Client(timeout=10) as http:
        with http.stream(
            "POST", server.url + "/v1/messages", json=body, headers={"x-api-key": "k"}
        ) as resp:
            assert resp.status_code == 200
            dec = SSEDecoder()
            events = [
                e for chunk in resp.iter_raw() for e in dec.feed(chunk) if isinstance(e, Event)
            ]
    import json

    names = [e.event for e in events]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    docs = [json.loads(e.data) for e in events]
    assert all(d["type"] == e.event for d, e in zip(docs, events, strict=True))
    text = "".join(d["delta"]["text"] for d in docs if d["type"] == "content_block_delta")
    assert text == server.requests()[0].expected_text
    assert docs[-2]["delta"]["stop_reason"] == "end_turn"


def test_anthropic_messages_non_streaming(server: FaultServer) -> None:
    body = {"model": "claude-test", "max_tokens": 64, "messages": MESSAGES}
    doc = httpx.post(server.url + "/v1/messages", json=body, timeout=10).json()
    assert doc["type"] == "message" and doc["stop_reason"] == "end_turn"
    assert doc["content"][0]["text"] == server.requests()[0].expected_text


def test_close_racing_the_next_request_on_a_pooled_connection_fails_that_request(
    server: FaultServer,
) -> None:
    # DESIGN.md: a close that races the request surfaces as RemoteProtocolError, not retried by httpx
    server.load(
        script_from_dict(
            {
                "rules": [
                    {
                        "match": {"request_on_connection": 1},
                        "fault": {"phase": "idle", "action": "fin"},
                    }
                ]
            }
        )
    )
    body = {"model": "m", "messages": MESSAGES}
    with httpx.Client(timeout=10) as http:
        assert http.post(server.base_url + "/chat/completions", json=body).status_code == 200
        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            http.post(server.base_url + "/chat/completions", json=body)
    assert server.wait_for("fault", timeout=5).detail == {"action": "fin", "phase": "idle"}


def test_idle_close_before_reuse_is_noticed_and_httpx_reconnects(server: FaultServer) -> None:
    server.load(
        script_from_dict(
            {"rules": [{"fault": {"phase": "idle", "action": "close_idle", "after_s": 0}}]}
        )
    )
    body = {"model": "m", "messages": MESSAGES}
    with httpx.Client(timeout=10) as http:
        assert http.post(server.base_url + "/chat/completions", json=body).status_code == 200
        server.wait_for("closed", timeout=5)
        assert http.post(server.base_url + "/chat/completions", json=body).status_code == 200
    assert [r.connection for r in server.requests()] == [1, 2]
