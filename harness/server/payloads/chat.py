"""chat.completions: the chunk stream (or one ``chat.completion`` document)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.server.lineage import Conversation, Turn, plain
from harness.server.payloads.common import HOLE, BuildInput, Units, data_unit, dumps

__all__ = ["build", "conversation"]


def conversation(body: Mapping[str, Any]) -> Conversation:
    """The conversation a chat request carries: its messages in order (``role: tool``
    a tool result, an assistant message with ``tool_calls`` a tool call)."""
    turns = []
    for m in body.get("messages") or ():
        if not isinstance(m, Mapping):
            turns.append(Turn("?", "other", plain(m)))
            continue
        role = str(m.get("role") or "?")
        kind = "tool_result" if role in ("tool", "function") else "text"
        if role == "assistant" and m.get("tool_calls"):
            kind = "tool_call"
        turns.append(Turn(role, kind, plain(m)))
    tools = body.get("tools") or ()
    names = tuple(
        str(t["function"].get("name"))
        for t in tools
        if isinstance(t, Mapping) and isinstance(t.get("function"), Mapping)
    )
    return Conversation(tuple(turns), plain(tools) if tools else None, names)


def build(req: BuildInput) -> Units:
    content, dialect = req.content, req.dialect
    cid = f"chatcmpl-{req.seed}"
    completion = content.output_tokens
    usage = {
        "prompt_tokens": req.prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": req.prompt_tokens + completion,
    }
    finish = "tool_calls" if content.tool_calls else "stop"
    out = Units()
    if not req.stream:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": content.text if content.deltas else None,
            "refusal": None,
        }
        if content.reasoning:
            message[dialect.reasoning_field] = "".join(content.reasoning)
        if content.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in content.tool_calls
            ]
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
        doc = {
            "id": cid,
            "object": "chat.completion",
            "created": req.created,
            "model": req.model,
            **dialect.chunk_extra,
            "choices": [choice],
            "usage": usage,
        }
        out.add(dumps(doc), "document")
        return out

    def chunk(delta: dict[str, Any], reason: str | None, **extra: Any) -> bytes:
        choice: dict[str, Any] = {"index": 0, "delta": delta}
        if dialect.choice_logprobs:
            choice["logprobs"] = None
        choice["finish_reason"] = reason
        choice.update(dialect.choice_extra)
        doc = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": req.created,
            "model": req.model,
            **dialect.chunk_extra,
            "choices": [choice],
            **extra,
        }
        return data_unit(doc)

    def bare(**extra: Any) -> bytes:
        doc = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": req.created,
            "model": req.model,
            **dialect.chunk_extra,
            "choices": [],
            **extra,
        }
        return data_unit(doc)

    for text in dialect.comments:
        out.add(b": " + text.encode() + b"\n\n", "comment")
    if dialect.empty_first_chunk:
        out.add(bare(), "open")
    role: dict[str, Any] = {"role": "assistant"}
    if dialect.role_content:
        role["content"] = ""
    if dialect.role_refusal:
        role["refusal"] = None
    out.add(chunk(role, None), "open")
    if content.reasoning:
        out.fill(chunk({dialect.reasoning_field: HOLE}, None), content.reasoning, "reasoning")
    if content.deltas:
        out.fill(chunk({"content": HOLE}, None), content.deltas, "text")
    for i, call in enumerate(content.tool_calls):
        start = {
            "index": i,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        out.add(chunk({"tool_calls": [start]}, None), "open")
        template = chunk({"tool_calls": [{"index": i, "function": {"arguments": HOLE}}]}, None)
        out.fill(template, list(call.fragments), "tool_args", call=i)
    if dialect.usage == "finish":
        out.add(chunk({}, finish, usage=usage), "finish")
    else:
        out.add(chunk({}, finish), "finish")
    options = req.body.get("stream_options")
    wants_usage = isinstance(options, Mapping) and options.get("include_usage")
    if dialect.usage == "always" or (dialect.usage == "on_request" and wants_usage):
        out.add(bare(usage=usage), "usage")
    out.add(b"data: [DONE]\n\n", "terminal")
    return out


def error_event(kind: str, message: str) -> bytes:
    """An in-band error chunk as OpenAI-compatible aggregators send it mid-stream."""
    code = {"overloaded": 529, "rate_limit": 429, "server_error": 500}[kind]
    err_type = {"overloaded": "overloaded_error", "rate_limit": "rate_limit_error"}.get(
        kind, "server_error"
    )
    return data_unit({"error": {"message": message, "type": err_type, "code": code}})
