"""Per-API stream reading, keep-alive classification and the truncation guard."""

from __future__ import annotations

import json

import pytest

from harness.client import errors
from harness.client.streams import StreamReader, parse_body, require_terminal
from harness.sse import Comment, Event


def chat(content: str | None = None, finish: str | None = None) -> Event:
    delta = {} if content is None else {"content": content}
    return Event(json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}))


def test_chat_collects_text_and_needs_done() -> None:
    r = StreamReader("chat")
    for ev in (chat("Hel"), chat("lo"), chat(None, "stop")):
        r.feed(ev)
    assert (r.text, r.finish_reason) == ("Hello", "stop")
    with pytest.raises(errors.TruncatedStream, match=r"\[DONE\]"):
        require_terminal(r)
    r.feed(Event("[DONE]"))
    require_terminal(r)


def test_comments_are_keepalive_in_every_api() -> None:
    for api in ("chat", "responses", "messages"):
        assert StreamReader(api).feed(Comment("keepalive")).kind == "comment"


def test_messages_ping_is_keepalive_and_message_stop_terminates() -> None:
    r = StreamReader("messages")
    assert r.feed(Event(json.dumps({"type": "ping"}), event="ping")).kind == "comment"
    step = r.feed(
        Event(
            json.dumps(
                {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "ok"}}
            )
        )
    )
    assert (step.kind, step.text) == ("content", "ok")
    r.feed(Event(json.dumps({"type": "message_delta", "delta": {"stop_reason": "end_turn"}})))
    assert not r.complete
    r.feed(Event(json.dumps({"type": "message_stop"})))
    assert r.complete and r.finish_reason == "end_turn"


def test_responses_completed_terminates_and_failed_is_provider_error() -> None:
    r = StreamReader("responses")
    r.feed(Event(json.dumps({"type": "response.created"})))
    r.feed(Event(json.dumps({"type": "response.output_text.delta", "delta": "a"})))
    r.feed(Event(json.dumps({"type": "response.completed"})))
    assert r.complete and r.text == "a"
    with pytest.raises(errors.ProviderError):
        StreamReader("responses").feed(
            Event(
                json.dumps({"type": "response.failed", "response": {"error": {"message": "boom"}}})
            )
        )


def test_broken_json_is_malformed_event() -> None:
    with pytest.raises(errors.MalformedEvent):
        StreamReader("chat").feed(Event('{"choices": [{"delta": {"content": "x"'))


def test_error_object_inside_a_stream_is_a_provider_error() -> None:
    with pytest.raises(errors.ProviderError, match="overloaded"):
        StreamReader("messages").feed(
            Event(
                json.dumps(
                    {
                        "type": "error",
                        "error": {"type": "overloaded_error", "message": "overloaded"},
                    }
                )
            )
        )


def test_non_stream_body_cut_short_is_truncated_and_garbage_is_malformed() -> None:
    doc = json.dumps({"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]})
    assert parse_body("chat", doc.encode()) == ("hi", "stop")
    with pytest.raises(errors.TruncatedStream):
        parse_body("chat", doc[:-5].encode())
    with pytest.raises(errors.TruncatedStream):
        parse_body("chat", b"   ")
    with pytest.raises(errors.MalformedEvent):
        parse_body("chat", b"<html>oops</html>")


def test_non_stream_bodies_of_each_api() -> None:
    responses = {
        "status": "completed",
        "output": [{"content": [{"type": "output_text", "text": "r"}]}],
    }
    messages = {"content": [{"type": "text", "text": "m"}], "stop_reason": "end_turn"}
    assert parse_body("responses", json.dumps(responses).encode()) == ("r", "stop")
    assert parse_body("messages", json.dumps(messages).encode()) == ("m", "end_turn")
