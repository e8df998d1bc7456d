"""Payload shapes of the three provider APIs the fault server speaks.

Given a parsed request body and the script's content settings, :func:`plan_reply`
returns a :class:`ReplyPlan`: the exact body units (SSE events, or one JSON document
for a non-streamed call) of a *healthy* reply, in order. The wire writer sends these
units and injects faults between them or inside them; this module knows nothing
about sockets, framing or faults.

What ``event:N`` counts (the ``units`` of a plan, in order; keep-alive comments,
``ping`` keep-alives from ``drip``/``keepalive_comment_s`` and ``malformed`` inserts
are never counted)::

    chat       1 role chunk, one chunk per content delta, 1 finish chunk
               (finish_reason "stop"), 1 usage chunk if stream_options.include_usage,
               1 "data: [DONE]"
    responses  response.created, response.in_progress, response.output_item.added,
               response.content_part.added, one response.output_text.delta per delta,
               response.output_text.done, response.content_part.done,
               response.output_item.done, response.completed
    messages   message_start, content_block_start, ping, one content_block_delta
               (text_delta) per delta, content_block_stop, message_delta
               (stop_reason "end_turn"), message_stop
    non-stream one unit: the whole JSON document

So ``event:0`` is "right after the headers, before any event", and with ``events``
content deltas every ``event:N`` with ``N < events`` cuts the stream before its
terminal marker (``[DONE]``, ``response.completed``, ``message_stop``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from json.encoder import encode_basestring  # what json.dumps(str, ensure_ascii=False) returns
from typing import Any

from harness.replies import reply_deltas, seed_for_request
from harness.sse import encode_comment, encode_event

__all__ = [
    "API_BY_PATH",
    "ReplyPlan",
    "error_body",
    "models_body",
    "plan_reply",
    "reply_words",
]

LLM_APIS = ("chat", "responses", "messages")
API_BY_PATH = {
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
    "/v1/messages": "messages",
}

SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"
JSON_CONTENT_TYPE = "application/json"
_PING = encode_event(json.dumps({"type": "ping"}), event="ping")
_COMMENT = encode_comment("keepalive")
#: ``created`` of every reply: fixed per process so equal requests get equal bytes.
CREATED = int(time.time())


@dataclass(frozen=True)
class ReplyPlan:
    """The healthy reply to one request: body units in order, and what they carry."""

    api: str
    stream: bool
    units: tuple[bytes, ...]
    content_type: str
    expected_text: str
    keepalive: bytes
    malformed_prefix: bytes
    malformed_suffix: bytes
    headers: tuple[str, ...] = ()

    def malformed(self, payload: str) -> bytes:
        """One broken unit in this API's framing (a data line of ``payload``)."""
        return self.malformed_prefix + payload.encode("utf-8") + self.malformed_suffix

    def drip(self, comment: str) -> bytes:
        """One keep-alive unit: an SSE comment (chat, responses), a ``ping`` event
        (messages), or a JSON-legal space (non-stream bodies)."""
        if not self.stream:
            return b" "
        if self.api == "messages":
            return _PING
        return encode_comment(comment)


def reply_words(
    body: Mapping[str, Any] | None, *, events: int, content: str | None, seed: str | None = None
) -> list[str]:
    """The content deltas of the reply: ``content`` split on spaces, else seeded words."""
    if content is not None:
        words = content.split(" ")
        return [w + " " for w in words[:-1]] + [words[-1]]
    return reply_deltas(seed if seed is not None else seed_for_request(dict(body or {})), events)


def plan_reply(
    api: str,
    body: Mapping[str, Any],
    *,
    events: int,
    content: str | None = None,
    shape: str = "text",
    reasoning_events: int = 4,
    dialect: str | None = None,
) -> ReplyPlan:
    """The healthy reply for ``api`` (``chat``, ``responses``, ``messages``) to ``body``."""
    seed = seed_for_request(dict(body))
    deltas = reply_words(body, events=events, content=content, seed=seed)
    stream = bool(body.get("stream"))
    model = str(body.get("model") or "test-model")
    prompt_tokens = max(1, len(json.dumps(body.get("messages") or body.get("input") or "")) // 4)
    builder = _BUILDERS[api]
    units, prefix, suffix = builder(
        body, deltas, stream=stream, model=model, seed=seed, prompt_tokens=prompt_tokens
    )
    keepalive = (_PING if api == "messages" else _COMMENT) if stream else b" "
    return ReplyPlan(
        api=api,
        stream=stream,
        units=tuple(units),
        content_type=SSE_CONTENT_TYPE if stream else JSON_CONTENT_TYPE,
        expected_text="".join(deltas),
        keepalive=keepalive,
        malformed_prefix=prefix,
        malformed_suffix=suffix,
    )


def error_body(api: str | None, code: int, message: str, *, err_type: str | None = None) -> bytes:
    """An error document: OpenAI's ``{"error": {message, type, code}}``, or Anthropic's
    ``{"type": "error", "error": {type, message}}`` for the messages API."""
    kind = err_type or _ERROR_TYPES.get(
        code, "server_error" if code >= 500 else "invalid_request_error"
    )
    if api == "messages":
        doc: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        doc = {
            "error": {
                "message": message,
                "type": kind,
                "param": None,
                "code": _ERROR_CODES.get(code, str(code)),
            }
        }
    return _dumps(doc)


def models_body() -> bytes:
    return _dumps(
        {
            "object": "list",
            "data": [{"id": "test-model", "object": "model", "created": 0, "owned_by": "harness"}],
        }
    )


# --------------------------------------------------------------------------- helpers

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
    431: "invalid_request_error",
}
_ERROR_CODES = {
    400: "bad_request",
    401: "invalid_api_key",
    404: "not_found",
    413: "request_too_large",
    429: "rate_limit_exceeded",
    431: "request_header_fields_too_large",
    500: "server_error",
    502: "bad_gateway",
    503: "service_unavailable",
}


#: A placeholder string: a unit is encoded once with it, then each delta is spliced in
#: (the same bytes as encoding every unit, at a fraction of the cost per event).
_HOLE = "\x00hole\x00"
_HOLE_JSON = json.dumps(_HOLE).encode()


def _fill(template: bytes, deltas: list[str]) -> list[bytes]:
    head, tail = template.split(_HOLE_JSON)
    return [head + encode_basestring(d).encode("utf-8") + tail for d in deltas]


def _fill_seq(
    template: bytes, deltas: list[str], *, first_seq: int, seq_counter: Any
) -> list[bytes]:
    """Like _fill for Responses events, whose sequence_number changes per event."""
    seq_json = b'"sequence_number":%d' % first_seq
    head, tail = template.split(_HOLE_JSON)
    out = []
    for d in deltas:
        n = next(seq_counter) if out else first_seq
        part = head.replace(seq_json, b'"sequence_number":%d' % n, 1)
        out.append(part + encode_basestring(d).encode("utf-8") + tail)
    return out


def _dumps(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _data(doc: Any) -> bytes:
    return b"data: " + _dumps(doc) + b"\n\n"


def _named(event: str, doc: Any) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + _dumps(doc) + b"\n\n"


def _chat(body, deltas, *, stream, model, seed, prompt_tokens):
    created = CREATED
    cid = f"chatcmpl-{seed}"
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": len(deltas),
        "total_tokens": prompt_tokens + len(deltas),
    }
    text = "".join(deltas)
    if not stream:
        doc = {
            "id": cid,
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": None},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": usage,
        }
        return [_dumps(doc)], b"", b""

    def chunk(delta: dict[str, Any], finish: str | None) -> bytes:
        return _data(
            {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
            }
        )

    units = [chunk({"role": "assistant", "content": ""}, None)]
    units += _fill(chunk({"content": _HOLE}, None), deltas)
    units.append(chunk({}, "stop"))
    options = body.get("stream_options")
    if isinstance(options, Mapping) and options.get("include_usage"):
        units.append(
            _data(
                {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": usage,
                }
            )
        )
    units.append(b"data: [DONE]\n\n")
    return units, b"data: ", b"\n\n"


def _responses(body, deltas, *, stream, model, seed, prompt_tokens):
    created = CREATED
    rid, mid = f"resp_{seed}", f"msg_{seed}"
    text = "".join(deltas)
    usage = {
        "input_tokens": prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": len(deltas),
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt_tokens + len(deltas),
    }

    def response(status: str, output: list[Any], with_usage: bool) -> dict[str, Any]:
        return {
            "id": rid,
            "object": "response",
            "created_at": created,
            "status": status,
            "model": model,
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "error": None,
            "incomplete_details": None,
            "instructions": body.get("instructions"),
            "metadata": {},
            "temperature": 1.0,
            "top_p": 1.0,
            "text": {"format": {"type": "text"}},
            "usage": usage if with_usage else None,
        }

    part_done = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    item_done = {
        "id": mid,
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [part_done],
    }
    if not stream:
        return [_dumps(response("completed", [item_done], True))], b"", b""

    seq = iter(range(1_000_000))

    def ev(kind: str, **fields: Any) -> bytes:
        return _named(kind, {"type": kind, "sequence_number": next(seq), **fields})

    loc = {"item_id": mid, "output_index": 0, "content_index": 0}
    units = [
        ev("response.created", response=response("in_progress", [], False)),
        ev("response.in_progress", response=response("in_progress", [], False)),
        ev(
            "response.output_item.added",
            output_index=0,
            item={
                "id": mid,
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            },
        ),
        ev(
            "response.content_part.added",
            **loc,
            part={"type": "output_text", "text": "", "annotations": []},
        ),
    ]
    delta_template = ev("response.output_text.delta", **loc, delta=_HOLE, logprobs=[])
    units += _fill_seq(delta_template, deltas, first_seq=len(units), seq_counter=seq)
    units += [
        ev("response.output_text.done", **loc, text=text, logprobs=[]),
        ev("response.content_part.done", **loc, part=part_done),
        ev("response.output_item.done", output_index=0, item=item_done),
        ev("response.completed", response=response("completed", [item_done], True)),
    ]
    return units, b"event: response.output_text.delta\ndata: ", b"\n\n"


def _messages(body, deltas, *, stream, model, seed, prompt_tokens):
    mid = f"msg_{seed}"
    text = "".join(deltas)
    if not stream:
        doc = {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": prompt_tokens, "output_tokens": len(deltas)},
        }
        return [_dumps(doc)], b"", b""
    start = {
        "id": mid,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": prompt_tokens, "output_tokens": 1},
    }
    units = [
        _named("message_start", {"type": "message_start", "message": start}),
        _named(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        _PING,
    ]
    units += _fill(
        _named(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": _HOLE},
            },
        ),
        deltas,
    )
    units += [
        _named("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _named(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": len(deltas)},
            },
        ),
        _named("message_stop", {"type": "message_stop"}),
    ]
    return units, b"event: content_block_delta\ndata: ", b"\n\n"


_BUILDERS = {"chat": _chat, "responses": _responses, "messages": _messages}
