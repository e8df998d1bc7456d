"""Anthropic Messages: the typed event stream (or one ``message`` document)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from harness.server.lineage import Conversation, Turn, plain
from harness.server.payloads.common import HOLE, BuildInput, Units, dumps, named_unit

__all__ = ["PING", "build", "conversation", "error_event"]


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
