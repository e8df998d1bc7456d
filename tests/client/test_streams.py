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


def responses_delta(n: int, delta: str) -> Event:
    doc = {"type": "response.output_text.delta", "sequence_number": n, "delta": delta}
    return Event(json.dumps(doc))


def test_responses_text_is_the_completed_response_not_the_reordered_deltas() -> None:
    # Two deltas swapped on the wire (sequence_numbers 4, 3): response.completed still
    # carries the answer, as the openai SDK's get_final_response() takes it.
    r = StreamReader("responses")
    for ev in (responses_delta(2, "Hel"), responses_delta(4, "!"), responses_delta(3, "lo")):
        r.feed(ev)
    assert r.text == "Hel!lo" and not r.complete
    message = {"type": "message", "content": [{"type": "output_text", "text": "Hello!"}]}
    done = {"type": "response.completed", "response": {"output": [message]}}
    r.feed(Event(json.dumps(done)))
    assert (r.text, r.complete) == ("Hello!", True)
    # an empty output (some gateways) leaves the deltas standing
    bare = StreamReader("responses")
    bare.feed(responses_delta(0, "a"))
    bare.feed(Event(json.dumps({"type": "response.completed", "response": {"output": []}})))
    assert bare.text == "a"


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


def test_a_non_stream_chat_body_without_choices_is_malformed_not_an_empty_reply() -> None:
    for doc in ({"id": "chatcmpl-1", "object": "chat.completion"}, {"choices": []}):
        with pytest.raises(errors.MalformedEvent, match="no choices"):
            parse_body("chat", json.dumps(doc).encode())


def test_non_stream_bodies_of_each_api() -> None:
    responses = {
        "status": "completed",
        "output": [{"content": [{"type": "output_text", "text": "r"}]}],
    }
    messages = {"content": [{"type": "text", "text": "m"}], "stop_reason": "end_turn"}
    assert parse_body("responses", json.dumps(responses).encode()) == ("r", "stop")
    assert parse_body("messages", json.dumps(messages).encode()) == ("m", "end_turn")


# --------------------------------------------------------------------------- agent shapes


def feed_all(api: str, docs: list[object], *, event: str | None = None) -> StreamReader:
    r = StreamReader(api)
    for doc in docs:
        r.feed(Event(doc if isinstance(doc, str) else json.dumps(doc), event=event))
    return r


def test_chat_parallel_tool_calls_are_assembled_by_index_and_parsed() -> None:
    def tc(index: int, **fields: object) -> dict:
        return {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, **fields}]}}]}

    r = feed_all(
        "chat",
        [
            tc(0, id="a", function={"name": "f", "arguments": ""}),
            tc(1, id="b", function={"name": "g", "arguments": '{"x"'}),
            tc(0, function={"arguments": '{"p": "ü'}),
            tc(1, function={"arguments": ": 1}"}),
            tc(0, function={"arguments": 'ber"}'}),
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
            "[DONE]",
        ],
    )
    require_terminal(r)
    calls = r.parsed().tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("a", "f", {"p": "über"}),
        ("b", "g", {"x": 1}),
    ]
    assert r.finish_reason == "tool_calls" and r.text == ""


def test_a_stream_cut_inside_a_tool_call_is_truncated_never_a_partial_call() -> None:
    r = feed_all(
        "chat",
        [
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "a",
                                    "function": {"name": "f", "arguments": '{"p": "no'},
                                }
                            ]
                        },
                    }
                ]
            }
        ],
    )
    with pytest.raises(errors.TruncatedStream, match="1 partial tool call"):
        require_terminal(r)


def test_a_complete_stream_with_broken_arguments_is_malformed() -> None:
    r = feed_all(
        "chat",
        [
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "a",
                                    "function": {"name": "f", "arguments": '{"p"'},
                                }
                            ]
                        },
                    }
                ]
            },
            "[DONE]",
        ],
    )
    require_terminal(r)
    with pytest.raises(errors.MalformedEvent, match="not JSON"):
        r.parsed()


def test_a_complete_stream_whose_tool_call_never_named_its_function_is_malformed() -> None:
    # harness fuzz on the reference: the first piece (id, name) dropped -- the arguments
    # alone came back as a tool call with an empty name, taken as the answer
    args = {"index": 0, "function": {"arguments": '{"p": 1}'}}
    r = feed_all(
        "chat",
        [
            {"choices": [{"index": 0, "delta": {"tool_calls": [args]}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
            "[DONE]",
        ],
    )
    require_terminal(r)
    with pytest.raises(errors.MalformedEvent, match="no function name"):
        r.parsed()


def test_responses_function_call_items_and_reasoning_summary() -> None:
    item = {
        "id": "fc_1",
        "type": "function_call",
        "call_id": "call_1",
        "name": "f",
        "arguments": "",
    }
    r = feed_all(
        "responses",
        [
            {"type": "response.reasoning_summary_text.delta", "delta": "hmm "},
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '{"a":'},
            {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": " 2}"},
            {
                "type": "response.function_call_arguments.done",
                "item_id": "fc_1",
                "arguments": '{"a": 2}',
            },
            {"type": "response.completed", "response": {}},
            "[DONE]",  # what some compatible servers send after the terminal event
        ],
    )
    require_terminal(r)
    got = r.parsed()
    assert [(c.id, c.name, c.arguments) for c in got.tool_calls] == [("call_1", "f", {"a": 2})]
    assert got.reasoning == "hmm "


def test_messages_tool_use_and_thinking_blocks() -> None:
    r = feed_all(
        "messages",
        [
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "so"},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": "s"},
            },
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}},
            },
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"k": '},
            },
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '"v"}'},
            },
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
            {"type": "message_stop"},
        ],
    )
    require_terminal(r)
    got = r.parsed()
    assert [(c.id, c.name, c.arguments) for c in got.tool_calls] == [("t", "f", {"k": "v"})]
    assert (got.reasoning, got.finish_reason) == ("so", "tool_use")


def test_reasoning_deltas_are_progress_not_keepalive() -> None:
    chat_step = StreamReader("chat").feed(
        Event(json.dumps({"choices": [{"index": 0, "delta": {"reasoning_content": "hm"}}]}))
    )
    msg_step = StreamReader("messages").feed(
        Event(
            json.dumps(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": "hm"},
                }
            )
        )
    )
    resp_step = StreamReader("responses").feed(
        Event(json.dumps({"type": "response.reasoning_summary_text.delta", "delta": "hm"}))
    )
    assert chat_step.kind == msg_step.kind == resp_step.kind == "content"
    assert chat_step.text == msg_step.text == resp_step.text == ""  # never handed to on_delta


@pytest.mark.parametrize(
    ("api", "doc", "status"),
    [
        ("messages", {"type": "error", "error": {"type": "overloaded_error", "message": "o"}}, 529),
        ("messages", {"type": "error", "error": {"type": "rate_limit_error", "message": "r"}}, 429),
        ("chat", {"error": {"message": "o", "type": "overloaded_error", "code": 529}}, 529),
        ("chat", {"error": {"message": "busy", "code": 429}}, 429),
        (
            "responses",
            {
                "type": "response.failed",
                "response": {"error": {"code": "server_is_overloaded", "message": "o"}},
            },
            529,
        ),
        (
            "responses",
            {
                "type": "response.failed",
                "response": {"error": {"code": "rate_limit_exceeded", "message": "r"}},
            },
            429,
        ),
    ],
)
def test_inband_overloaded_and_rate_limit_errors_are_retryable(
    api: str, doc: dict, status: int
) -> None:
    with pytest.raises(errors.ProviderError) as info:
        StreamReader(api).feed(Event(json.dumps(doc)))
    assert info.value.status == status and info.value.is_retryable()


def test_a_null_error_field_is_not_an_error_and_events_after_done_are_ignored() -> None:
    r = feed_all(
        "chat",
        [
            {
                "choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": "stop"}],
                "error": None,
            },
            "[DONE]",
            "not json at all",
        ],
    )
    require_terminal(r)
    assert r.text == "a"
