"""Responses: the typed event stream (or one ``response`` document)."""

from __future__ import annotations

import itertools
from typing import Any

from harness.server.payloads.common import HOLE, BuildInput, Units, dumps, named_unit

__all__ = ["build", "error_event"]

_SEQ = -7777  # placeholder sequence number in delta templates
_SEQ_JSON = b'"sequence_number":%d' % _SEQ


def build(req: BuildInput) -> Units:
    content, dialect = req.content, req.dialect
    rid, mid, rsid = f"resp_{req.seed}", f"msg_{req.seed}", f"rs_{req.seed}"
    text = content.text
    reasoning = "".join(content.reasoning)
    output_tokens = content.output_tokens
    usage = {
        "input_tokens": req.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": len(content.reasoning)},
        "total_tokens": req.prompt_tokens + output_tokens,
    }

    def response(status: str, output: list[Any], with_usage: bool) -> dict[str, Any]:
        return {
            "id": rid,
            "object": "response",
            "created_at": req.created,
            "status": status,
            "model": req.model,
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "error": None,
            "incomplete_details": None,
            "instructions": req.body.get("instructions"),
            "metadata": {},
            "temperature": 1.0,
            "top_p": 1.0,
            "text": {"format": {"type": "text"}},
            "usage": usage if with_usage else None,
        }

    summary_done = {"type": "summary_text", "text": reasoning}
    reasoning_item = {"id": rsid, "type": "reasoning", "summary": [summary_done]}
    part_done = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    message_item = {
        "id": mid,
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [part_done],
    }
    call_items = [
        {
            "id": f"fc_{req.seed}_{i}",
            "type": "function_call",
            "status": "completed",
            "call_id": c.id,
            "name": c.name,
            "arguments": c.arguments,
        }
        for i, c in enumerate(content.tool_calls)
    ]
    final: list[Any] = []
    if content.reasoning:
        final.append(reasoning_item)
    if content.deltas:
        final.append(message_item)
    final += call_items
    out = Units()
    if not req.stream:
        out.add(dumps(response("completed", final, True)), "document")
        return out

    seq = itertools.count()
    extra = {"obfuscation": "pad"} if dialect.obfuscation else {}

    def ev(kind: str, unit_kind: str, **fields: Any) -> None:
        out.add(named_unit(kind, {"type": kind, "sequence_number": next(seq), **fields}), unit_kind)

    def deltas(
        kind: str,
        items: list[str],
        unit_kind: str,
        loc: dict[str, Any],
        *,
        call: int | None = None,
        after: dict[str, Any] | None = None,
    ) -> None:
        doc = {"type": kind, "sequence_number": _SEQ, **loc, "delta": HOLE, **(after or {})}
        template = named_unit(kind, {**doc, **extra})
        first = len(out.units)
        out.fill(template, items, unit_kind, call=call)
        for i in range(first, len(out.units)):
            n = b'"sequence_number":%d' % next(seq)
            out.units[i] = out.units[i].replace(_SEQ_JSON, n, 1)
            if i in out.fragments:
                c, frag, head, tail = out.fragments[i]
                out.fragments[i] = (c, frag, head.replace(_SEQ_JSON, n, 1), tail)

    ev("response.created", "open", response=response("in_progress", [], False))
    ev("response.in_progress", "open", response=response("in_progress", [], False))
    index = 0
    if content.reasoning:
        loc = {"item_id": rsid, "output_index": index, "summary_index": 0}
        ev(
            "response.output_item.added",
            "open",
            output_index=index,
            item={"id": rsid, "type": "reasoning", "summary": []},
        )
        ev(
            "response.reasoning_summary_part.added",
            "open",
            **loc,
            part={"type": "summary_text", "text": ""},
        )
        deltas("response.reasoning_summary_text.delta", content.reasoning, "reasoning", loc)
        ev("response.reasoning_summary_text.done", "close", **loc, text=reasoning)
        ev("response.reasoning_summary_part.done", "close", **loc, part=summary_done)
        ev("response.output_item.done", "close", output_index=index, item=reasoning_item)
        index += 1
    if content.deltas:
        loc = {"item_id": mid, "output_index": index, "content_index": 0}
        ev(
            "response.output_item.added",
            "open",
            output_index=index,
            item={
                "id": mid,
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            },
        )
        ev(
            "response.content_part.added",
            "open",
            **loc,
            part={"type": "output_text", "text": "", "annotations": []},
        )
        deltas("response.output_text.delta", content.deltas, "text", loc, after={"logprobs": []})
        ev("response.output_text.done", "close", **loc, text=text, logprobs=[])
        ev("response.content_part.done", "close", **loc, part=part_done)
        ev("response.output_item.done", "close", output_index=index, item=message_item)
        index += 1
    for i, (call, item) in enumerate(zip(content.tool_calls, call_items, strict=True)):
        added = {**item, "status": "in_progress", "arguments": ""}
        ev("response.output_item.added", "open", output_index=index, item=added)
        loc = {"item_id": item["id"], "output_index": index}
        deltas(
            "response.function_call_arguments.delta", list(call.fragments), "tool_args", loc, call=i
        )
        ev("response.function_call_arguments.done", "close", **loc, arguments=call.arguments)
        ev("response.output_item.done", "close", output_index=index, item=item)
        index += 1
    ev("response.completed", "terminal", response=response("completed", final, True))
    return out


def error_event(kind: str, message: str) -> bytes:
    """``response.failed`` with the error inside, as the Responses API reports a
    failure after the stream began."""
    code = {"overloaded": "server_is_overloaded", "rate_limit": "rate_limit_exceeded"}.get(
        kind, "server_error"
    )
    doc = {
        "type": "response.failed",
        "sequence_number": 0,
        "response": {
            "id": "resp_failed",
            "object": "response",
            "status": "failed",
            "error": {"code": code, "message": message},
            "output": [],
        },
    }
    return named_unit("response.failed", doc)
