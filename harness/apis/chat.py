"""chat.completions: the chunk stream (or one ``chat.completion`` document), both roles.

Writing: :func:`conversation` reads a request, :func:`build` a healthy reply's units,
:func:`error_event` the in-band error chunk. Reading: :class:`Chat`'s fold (choices[0]'s
delta: content, reasoning_content / reasoning, tool_calls by index; terminal
``data: [DONE]``, any data starting with it, as the openai SDK's reader has it; a
truthy ``"error"`` is an in-band provider error)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.apis.base import Api, Sink, neutral_spec, tool_opts
from harness.apis.lineage import Conversation, Turn, plain
from harness.apis.payload import HOLE, BuildInput, Units, data_unit, dumps

__all__ = ["API", "DONE", "Chat", "build", "conversation", "error_event", "is_done"]

#: The chat stream's end sentinel (and what some Responses servers send after the end).
DONE = "[DONE]"


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


def is_done(data: str) -> bool:
    """The ``[DONE]`` sentinel: any data that *starts* with it, as the openai SDK's
    reader has it (``sse.data.startswith("[DONE]")``), so ``[DONE] `` ends the stream
    and `` [DONE]`` (two spaces after ``data:``) does not."""
    return data.startswith(DONE)


class Chat(Api):
    name = "chat"
    route = "/chat/completions"
    terminal_marker = DONE
    marker_in_data = True

    def kind(self, event: str, data: str) -> str:
        return "terminal" if is_done(data) else "content"

    def fold(self, event: str, data: str, sink: Sink) -> str:
        if is_done(data):
            sink.end()
            return "content"
        doc = sink.json(data)
        if doc.get("error"):
            sink.error(doc["error"])
        text = ""
        for choice in doc.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if isinstance(delta, dict):
                if isinstance(delta.get("content"), str):
                    text += delta["content"]
                thought = delta.get("reasoning_content") or delta.get("reasoning")
                if isinstance(thought, str):
                    sink.add_reasoning(thought)
                for pos, tc in enumerate(delta.get("tool_calls") or ()):
                    if isinstance(tc, dict):
                        fn = tc.get("function") or {}
                        sink.tool(
                            tc.get("index", pos),
                            id=tc.get("id"),
                            name=fn.get("name"),
                            arguments=fn.get("arguments"),
                        )
            if choice.get("finish_reason"):
                sink.finish(str(choice["finish_reason"]))
        if text:
            sink.add_text(text)
        return "content"

    def read_document(self, doc: dict[str, Any], sink: Sink) -> None:
        choices = doc.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            # no choice is no answer: returning "" would call an empty reply complete
            # (found by harness fuzz: drop_field choices on a non-streamed body)
            sink.malformed(f"{self.name} body has no choices")
        choice = choices[0]
        message = choice.get("message") or {}
        for i, tc in enumerate(message.get("tool_calls") or ()):
            fn = tc.get("function") or {}
            sink.tool(i, id=tc.get("id"), name=fn.get("name"), final=fn.get("arguments"))
        thought = message.get("reasoning_content") or message.get("reasoning") or ""
        sink.add_text(str(message.get("content") or ""))
        sink.add_reasoning(thought if isinstance(thought, str) else "")
        sink.finish(choice.get("finish_reason"))

    def conversation(self, body: Mapping[str, Any], seed: str) -> Conversation:
        return conversation(body)

    def build(self, given: BuildInput) -> Units:
        return build(given)

    def error_event(self, kind: str, message: str) -> bytes:
        return error_event(kind, message)

    def sdk_request(
        self, sdk: Any, call: Any, *, api_key: str, extra: dict[str, Any], response_type: type
    ) -> Any:
        opts: dict[str, Any] = {"max_tokens": call.max_tokens} if call.max_tokens else {}
        return sdk.chat.completions.with_streaming_response.create(
            model=call.model,
            messages=call.messages,
            stream=call.stream,
            **opts,
            **tool_opts(call),
            **extra,
        )

    def tools(self, tools: Any) -> list[dict[str, Any]]:
        out = []
        for t in tools:
            spec, params = neutral_spec(t)
            out.append({"type": "function", "function": {**spec, "parameters": params}})
        return out


API = Chat()
