"""Anthropic Messages: the typed event stream (or one ``message`` document), both roles.

Writing: :func:`conversation`, :func:`build`, :func:`error_event`, the ``ping``
keep-alive. Reading: :class:`Messages`' fold (content_block_delta: text_delta,
thinking_delta, input_json_delta by block index; ``ping`` is keep-alive; terminal
message_stop; ``error`` is an in-band provider error, overloaded_error retryable). The
error document is Anthropic's ``{"type": "error", "error": {type, message}}``; the
reference client sends it with the openai SDK's ``post`` (raw response)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from harness.apis.base import Api, Sink, neutral_spec, tool_opts
from harness.apis.lineage import Conversation, Turn, plain
from harness.apis.payload import HOLE, BuildInput, Units, dumps, named_unit

__all__ = ["API", "PING", "Messages", "build", "conversation", "error_event"]

_RAW_HEADER = "X-Stainless-Raw-Response"  # the SDK's own switch for an unread raw response
_ANTHROPIC_VERSION = "2023-06-01"


def conversation(body: Mapping[str, Any]) -> Conversation:
    """The conversation a Messages request carries: ``system``, then its messages (a
    user message with a ``tool_result`` block is a tool result, an assistant message
    with a ``tool_use`` block a tool call)."""
    turns = []
    system = body.get("system")
    if system:
        turns.append(Turn("system", "text", plain(system)))
    for m in body.get("messages") or ():
        if not isinstance(m, Mapping):
            turns.append(Turn("?", "other", plain(m)))
            continue
        role = str(m.get("role") or "?")
        content = m.get("content")
        types = (
            {b.get("type") for b in content if isinstance(b, Mapping)}
            if isinstance(content, list)
            else set()
        )
        kind = (
            "tool_result"
            if "tool_result" in types
            else "tool_call"
            if "tool_use" in types
            else "text"
        )
        turns.append(Turn(role, kind, plain(m)))
    tools = body.get("tools") or ()
    names = tuple(str(t.get("name")) for t in tools if isinstance(t, Mapping) and t.get("name"))
    return Conversation(tuple(turns), plain(tools) if tools else None, names)


#: Exactly the bytes the server always sent (json.dumps default separators).
PING = b'event: ping\ndata: {"type": "ping"}\n\n'


def build(req: BuildInput) -> Units:
    content, dialect = req.content, req.dialect
    mid = f"msg_{req.seed}"
    stop = "tool_use" if content.tool_calls else "end_turn"
    output_tokens = content.output_tokens
    signature = f"sig_{req.seed}"
    blocks: list[dict[str, Any]] = []
    if content.reasoning:
        blocks.append(
            {"type": "thinking", "thinking": "".join(content.reasoning), "signature": signature}
        )
    if content.deltas:
        blocks.append({"type": "text", "text": content.text})
    for c in content.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": c.id, "name": c.name, "input": json.loads(c.arguments)}
        )
    out = Units()
    if not req.stream:
        doc = {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": req.model,
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": req.prompt_tokens, "output_tokens": output_tokens},
        }
        out.add(dumps(doc), "document")
        return out
    start = {
        "id": mid,
        "type": "message",
        "role": "assistant",
        "model": req.model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": req.prompt_tokens, "output_tokens": 1},
    }
    if dialect.rich_blocks:
        start["usage"] = {
            "input_tokens": req.prompt_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 1,
            "service_tier": "standard",
        }
    out.add(named_unit("message_start", {"type": "message_start", "message": start}), "open")

    def block_start(index: int, block: dict[str, Any]) -> None:
        doc = {"type": "content_block_start", "index": index, "content_block": block}
        out.add(named_unit("content_block_start", doc), "open")

    def block_deltas(
        index: int, delta: dict[str, Any], items: list[str], kind: str, call: int | None = None
    ) -> None:
        doc = {"type": "content_block_delta", "index": index, "delta": delta}
        out.fill(named_unit("content_block_delta", doc), items, kind, call=call)

    def block_stop(index: int) -> None:
        doc = {"type": "content_block_stop", "index": index}
        out.add(named_unit("content_block_stop", doc), "close")

    index = 0
    pinged = False
    if content.reasoning:
        block_start(index, {"type": "thinking", "thinking": "", "signature": ""})
        if dialect.ping:
            out.add(PING, "ping")
            pinged = True
        block_deltas(
            index, {"type": "thinking_delta", "thinking": HOLE}, content.reasoning, "reasoning"
        )
        sig = {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "signature_delta", "signature": signature},
        }
        out.add(named_unit("content_block_delta", sig), "close")
        block_stop(index)
        index += 1
    if content.deltas:
        block_start(index, {"type": "text", "text": ""})
        if dialect.ping and not pinged:
            out.add(PING, "ping")
            pinged = True
        block_deltas(index, {"type": "text_delta", "text": HOLE}, content.deltas, "text")
        block_stop(index)
        index += 1
    for i, call in enumerate(content.tool_calls):
        block: dict[str, Any] = {"type": "tool_use", "id": call.id, "name": call.name}
        if dialect.rich_blocks:
            block["caller"] = {"type": "direct"}
        block_start(index, {**block, "input": {}})
        if dialect.rich_blocks:
            empty = {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": ""},
            }
            out.add(named_unit("content_block_delta", empty), "open")
        if dialect.ping and not pinged:
            out.add(PING, "ping")
            pinged = True
        block_deltas(
            index,
            {"type": "input_json_delta", "partial_json": HOLE},
            list(call.fragments),
            "tool_args",
            call=i,
        )
        block_stop(index)
        index += 1
    usage: dict[str, Any] = {"output_tokens": output_tokens}
    if dialect.full_delta_usage:
        usage = {
            "input_tokens": req.prompt_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": output_tokens,
        }
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": None},
        "usage": usage,
    }
    out.add(named_unit("message_delta", delta), "finish")
    out.add(named_unit("message_stop", {"type": "message_stop"}), "terminal")
    return out


def error_event(kind: str, message: str) -> bytes:
    """Anthropic's in-stream ``event: error`` (e.g. ``overloaded_error``)."""
    err_type = {"overloaded": "overloaded_error", "rate_limit": "rate_limit_error"}.get(
        kind, "api_error"
    )
    return named_unit("error", {"type": "error", "error": {"type": err_type, "message": message}})


class Messages(Api):
    name = "messages"
    route = "/messages"
    terminal_marker = "message_stop"
    terminal_events = frozenset({"message_stop"})
    keepalive_events = frozenset({"ping"})
    keepalive_unit = PING
    frame = (b"event: content_block_delta\ndata: ", b"\n\n")
    sdk_returns_response = True
    requires_max_tokens = True

    def fold(self, event: str, data: str, sink: Sink) -> str:
        doc = sink.json(data)
        kind = doc.get("type") or event or ""
        if kind in self.keepalive_events:
            return "comment"
        if kind == "content_block_start":
            block = doc.get("content_block") or {}
            if isinstance(block, dict) and block.get("type") == "tool_use":
                sink.tool(
                    doc.get("index"),
                    id=block.get("id"),
                    name=block.get("name"),
                    start_input=block.get("input"),
                )
        elif kind == "content_block_delta":
            delta = doc.get("delta") or {}
            dtype = delta.get("type") if isinstance(delta, dict) else None
            if dtype == "text_delta":
                sink.add_text(str(delta.get("text") or ""))
            elif dtype == "thinking_delta":
                sink.add_reasoning(str(delta.get("thinking") or ""))
            elif dtype == "input_json_delta" and sink.has_tool(doc.get("index")):
                sink.tool(doc.get("index"), arguments=delta.get("partial_json"))
        elif kind == "message_delta":
            stop = (doc.get("delta") or {}).get("stop_reason")
            if stop:
                sink.finish(str(stop))
        elif kind == "message_stop":
            sink.end()
        elif kind == "error":
            sink.error(doc.get("error") or doc)
        return "content"

    def read_document(self, doc: dict[str, Any], sink: Sink) -> None:
        for i, b in enumerate(doc.get("content") or ()):
            if not isinstance(b, dict):
                continue
            if b.get("type") == "text":
                sink.add_text(b.get("text", ""))
            elif b.get("type") == "thinking":
                sink.add_reasoning(b.get("thinking", ""))
            elif b.get("type") == "tool_use":
                sink.tool(i, id=b.get("id"), name=b.get("name"), start_input=b.get("input"))
        sink.finish(doc.get("stop_reason"))

    def conversation(self, body: Mapping[str, Any], seed: str) -> Conversation:
        return conversation(body)

    def build(self, given: BuildInput) -> Units:
        return build(given)

    def error_event(self, kind: str, message: str) -> bytes:
        return error_event(kind, message)

    def error_document(self, kind: str, message: str, code: str) -> dict[str, Any]:
        return {"type": "error", "error": {"type": kind, "message": message}}

    def sdk_request(
        self, sdk: Any, call: Any, *, api_key: str, extra: dict[str, Any], response_type: type
    ) -> Any:
        headers = {
            _RAW_HEADER: "stream",
            "anthropic-version": _ANTHROPIC_VERSION,
            "x-api-key": api_key,
        }
        body = {
            "model": call.model,
            "messages": call.messages,
            "max_tokens": call.max_tokens or 1024,
            "stream": call.stream,
            **tool_opts(call),
        }
        return sdk.post(
            self.route, cast_to=response_type, body=body, options={"headers": headers, **extra}
        )

    def tools(self, tools: Any) -> list[dict[str, Any]]:
        out = []
        for t in tools:
            spec, params = neutral_spec(t)
            out.append({**spec, "input_schema": params})
        return out

    def request_template(self, prompt: list[dict[str, Any]]) -> dict[str, Any]:
        return {"model": "test-model", "max_tokens": 256, "messages": prompt}


API = Messages()
