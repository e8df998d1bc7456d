"""Responses: the typed event stream (or one ``response`` document), both roles.

Writing: :func:`conversation`, :func:`build`, :func:`error_event` (``response.failed``).
Reading: :class:`Responses`' fold (output_text deltas, reasoning summary/text deltas,
function_call items and their argument deltas; terminal response.completed or
response.incomplete; response.failed and ``error`` are in-band provider errors; a
``data: [DONE]`` after the terminal event ends the stream, as the openai SDK's reader
has it)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from harness.apis.base import Api, Sink, neutral_spec, tool_opts
from harness.apis.chat import is_done
from harness.apis.lineage import Conversation, Turn, plain
from harness.apis.payload import HOLE, BuildInput, Units, dumps, named_unit

__all__ = ["API", "Responses", "build", "conversation", "error_event", "reply_id"]

#: Input item types and what they are in a conversation.
_ITEM_KINDS = {
    "function_call_output": ("tool", "tool_result"),
    "function_call": ("assistant", "tool_call"),
    "reasoning": ("assistant", "reasoning"),
}


def reply_id(seed: str) -> str:
    """The ``id`` of the reply to a request with ``seed`` (what ``previous_response_id``
    names when a client continues from it)."""
    return f"resp_{seed}"


def conversation(body: Mapping[str, Any], seed: str = "") -> Conversation:
    """The conversation a Responses request carries: ``instructions``, then its input
    items (a ``function_call_output`` item is a tool result, a ``function_call`` one a
    tool call); ``previous_response_id`` names the reply it continues."""
    turns = []
    if body.get("instructions"):
        turns.append(Turn("system", "text", plain(body["instructions"])))
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items or ():
        if not isinstance(item, Mapping):
            turns.append(Turn("?", "other", plain(item)))
            continue
        role, kind = _ITEM_KINDS.get(str(item.get("type")), (str(item.get("role") or "?"), "text"))
        turns.append(Turn(role, kind, plain(item)))
    tools = body.get("tools") or ()
    names = tuple(str(t.get("name")) for t in tools if isinstance(t, Mapping) and t.get("name"))
    previous = body.get("previous_response_id")
    return Conversation(
        tuple(turns),
        plain(tools) if tools else None,
        names,
        reply_id=reply_id(seed) if seed else "",
        previous=str(previous) if previous else None,
    )


_SEQ = -7777  # placeholder sequence number in delta templates
_SEQ_JSON = b'"sequence_number":%d' % _SEQ


def build(req: BuildInput) -> Units:
    content, dialect = req.content, req.dialect
    rid, mid, rsid = reply_id(req.seed), f"msg_{req.seed}", f"rs_{req.seed}"
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

    def text_item(
        added: dict[str, Any],
        loc: dict[str, Any],
        names: tuple[str, str],
        part: dict[str, Any],
        pieces: list[str],
        unit_kind: str,
        done: tuple[str, dict[str, Any], dict[str, Any]],
        logprobs: bool = False,
    ) -> None:
        """An output item of one text part (the reasoning summary, the message): the item
        and its part added, the text's deltas, then text, part and item done. ``names``:
        the part's and the text's event names; ``done``: the text, the part, the item;
        ``logprobs``: the message's text events carry an empty list of them."""
        part_event, text_event = names
        more: dict[str, Any] = {"logprobs": []} if logprobs else {}
        text_done, part_done, item_done = done
        ev("response.output_item.added", "open", output_index=index, item=added)
        ev(f"response.{part_event}.added", "open", **loc, part=part)
        deltas(f"response.{text_event}.delta", pieces, unit_kind, loc, after=more)
        ev(f"response.{text_event}.done", "close", **loc, text=text_done, **more)
        ev(f"response.{part_event}.done", "close", **loc, part=part_done)
        ev("response.output_item.done", "close", output_index=index, item=item_done)

    if content.reasoning:
        text_item(
            {"id": rsid, "type": "reasoning", "summary": []},
            {"item_id": rsid, "output_index": index, "summary_index": 0},
            ("reasoning_summary_part", "reasoning_summary_text"),
            {"type": "summary_text", "text": ""},
            content.reasoning,
            "reasoning",
            (reasoning, summary_done, reasoning_item),
        )
        index += 1
    if content.deltas:
        text_item(
            {
                "id": mid,
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            },
            {"item_id": mid, "output_index": index, "content_index": 0},
            ("content_part", "output_text"),
            {"type": "output_text", "text": "", "annotations": []},
            content.deltas,
            "text",
            (text, part_done, message_item),
            logprobs=True,
        )
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


_REASONING_DELTAS = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")


class Responses(Api):
    name = "responses"
    route = "/responses"
    terminal_marker = "response.completed"
    terminal_events = frozenset({"response.completed", "response.incomplete"})
    frame = (b"event: response.output_text.delta\ndata: ", b"\n\n")

    def fold(self, event: str, data: str, sink: Sink) -> str:
        if is_done(data):
            return "content"  # only after the terminal event is it an end (the reader's rule)
        doc = sink.json(data)
        kind = doc.get("type") or event or ""
        if kind == "response.output_text.delta":
            sink.add_text(str(doc.get("delta") or ""))
        elif kind in _REASONING_DELTAS:
            sink.add_reasoning(str(doc.get("delta") or ""))
        elif kind in ("response.output_item.added", "response.output_item.done"):
            item = doc.get("item") or {}
            if isinstance(item, dict) and item.get("type") == "function_call":
                sink.tool(
                    item.get("id") or doc.get("output_index"),
                    id=item.get("call_id") or item.get("id"),
                    name=item.get("name"),
                    final=item.get("arguments") if kind.endswith(".done") else None,
                )
        elif kind == "response.function_call_arguments.delta":
            sink.tool(doc.get("item_id") or doc.get("output_index"), arguments=doc.get("delta"))
        elif kind == "response.function_call_arguments.done":
            sink.tool(doc.get("item_id") or doc.get("output_index"), final=doc.get("arguments"))
        elif kind == "response.completed":
            sink.end()
            sink.finish("stop")
            _final_text(doc.get("response"), sink)
        elif kind == "response.incomplete":
            details = (doc.get("response") or {}).get("incomplete_details") or {}
            sink.end()
            sink.finish(str(details.get("reason") or "incomplete"))
        elif kind in ("response.failed", "error"):
            err = (
                (doc.get("response") or {}).get("error")
                if kind == "response.failed"
                else doc.get("error", doc)
            )
            sink.error(err or doc)
        elif doc.get("error"):
            sink.error(doc["error"])  # as the openai SDK does for any event
        return "content"

    def read_document(self, doc: dict[str, Any], sink: Sink) -> None:
        for item in doc.get("output") or ():
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call":
                sink.tool(
                    item.get("id"),
                    id=item.get("call_id"),
                    name=item.get("name"),
                    final=item.get("arguments"),
                )
            for c in item.get("content") or ():
                if isinstance(c, dict) and c.get("type") == "output_text":
                    sink.add_text(c.get("text", ""))
            for c in item.get("summary") or ():
                if isinstance(c, dict):
                    sink.add_reasoning(c.get("text", ""))
        status = doc.get("status")
        sink.finish("stop" if status == "completed" else status)

    def conversation(self, body: Mapping[str, Any], seed: str) -> Conversation:
        return conversation(body, seed)

    def build(self, given: BuildInput) -> Units:
        return build(given)

    def error_event(self, kind: str, message: str) -> bytes:
        return error_event(kind, message)

    def sdk_request(
        self, sdk: Any, call: Any, *, api_key: str, extra: dict[str, Any], response_type: type
    ) -> Any:
        opts = {"max_output_tokens": call.max_tokens} if call.max_tokens else {}
        return sdk.responses.with_streaming_response.create(
            model=call.model,
            input=call.messages,
            stream=call.stream,
            **opts,
            **tool_opts(call),
            **extra,
        )

    def tools(self, tools: Any) -> list[dict[str, Any]]:
        out = []
        for t in tools:
            spec, params = neutral_spec(t)
            out.append({"type": "function", **spec, "parameters": params})
        return out

    def request_template(self, prompt: list[dict[str, Any]]) -> dict[str, Any]:
        return {"model": "test-model", "input": prompt}


def _final_text(response: Any, sink: Sink) -> None:
    """The text ``response.completed`` carries is the answer, as the openai SDK's
    ``get_final_response()`` has it: deltas that arrived reordered, duplicated or
    short (their ``sequence_number``s say so) do not change it. Without any output
    text there (some gateways send an empty ``output``), the deltas stand."""
    output = response.get("output") if isinstance(response, dict) else None
    texts = [
        c.get("text")
        for item in output or ()
        if isinstance(item, dict) and item.get("type") == "message"
        for c in item.get("content") or ()
        if isinstance(c, dict) and c.get("type") == "output_text"
    ]
    if texts and all(isinstance(t, str) for t in texts):
        sink.replace_text("".join(texts))


API = Responses()
