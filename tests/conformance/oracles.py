"""Parse the same bytes two ways: with the reference stack's stream reader and with the
official SDK's own stream parser (openai ``Stream`` + its chat / Responses accumulators,
anthropic ``Stream`` + ``accumulate_event``), to the same plain :class:`Parsed` shape.

The SDK parsers read a real ``httpx``/``httpx2`` ``Response`` whose body is an in-memory
byte stream split into the given chunks: nothing here is a mock of the SDK; only the
socket is left out, because the point is the parser, and chunk boundaries must be
exactly the ones Hypothesis chose.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import anthropic
import openai
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import RawMessageStreamEvent
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent

from harness.client.streams import StreamReader, require_terminal
from harness.sse import SSEDecoder

OPENAI_HTTP = importlib.import_module(
    "httpx2" if int(openai.__version__.split(".")[0]) >= 3 else "httpx"
)
ANTHROPIC_HTTP = importlib.import_module(
    "httpx2" if hasattr(importlib.import_module("anthropic._streaming"), "httpx2") else "httpx"
)
URL = "http://127.0.0.1:9/v1"  # never connected to: the body is in memory


@dataclass(frozen=True)
class Parsed:
    text: str
    tool_calls: tuple[tuple[str, str, Any], ...]  # (id, name, arguments as parsed JSON)
    reasoning: str
    finish_reason: str | None


def reference(api: str, chunks: Iterable[bytes]) -> Parsed:
    """The reference stack: harness.sse + StreamReader + the truncation guard."""
    reader, decoder = StreamReader(api), SSEDecoder()
    for chunk in chunks:
        for item in decoder.feed(chunk):
            reader.feed(item)
    for item in decoder.flush():
        reader.feed(item)
    require_terminal(reader)
    got = reader.parsed()
    calls = tuple((c.id, c.name, c.arguments) for c in got.tool_calls)
    return Parsed(got.text, calls, got.reasoning, got.finish_reason)


def sdk(api: str, chunks: Iterable[bytes]) -> Parsed:
    return {"chat": _openai_chat, "responses": _openai_responses, "messages": _anthropic}[api](
        list(chunks)
    )


def _response(http: Any, chunks: list[bytes]) -> Any:
    class Body(http.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            yield from chunks

    request = http.Request("POST", URL + "/x")
    headers = {"content-type": "text/event-stream"}
    return http.Response(200, headers=headers, stream=Body(), request=request)


def _openai_chat(chunks: list[bytes]) -> Parsed:
    client = openai.OpenAI(api_key="k", base_url=URL)
    stream = openai.Stream(
        cast_to=ChatCompletionChunk, response=_response(OPENAI_HTTP, chunks), client=client
    )
    state = ChatCompletionStreamState()
    reasoning = ""
    for chunk in stream:
        state.handle_chunk(chunk)
        for choice in chunk.choices:
            extra = (choice.delta.model_extra or {}) if choice.delta is not None else {}
            thought = extra.get("reasoning_content") or extra.get("reasoning")
            if isinstance(thought, str) and choice.index == 0:
                reasoning += thought
    final = state.get_final_completion().choices[0]
    calls = tuple(
        (tc.id, tc.function.name, json.loads(tc.function.arguments or "{}"))
        for tc in final.message.tool_calls or ()
    )
    return Parsed(final.message.content or "", calls, reasoning, final.finish_reason)


def _openai_responses(chunks: list[bytes]) -> Parsed:
    client = openai.OpenAI(api_key="k", base_url=URL)
    stream = openai.Stream(
        cast_to=ResponseStreamEvent, response=_response(OPENAI_HTTP, chunks), client=client
    )
    final = None
    for event in stream:
        if event.type == "response.completed":
            final = event.response
    if final is None:
        raise AssertionError("the SDK saw no response.completed")
    calls, reasoning = [], ""
    for item in final.output:
        if item.type == "function_call":
            calls.append((item.call_id, item.name, json.loads(item.arguments or "{}")))
        elif item.type == "reasoning":
            reasoning += "".join(s.text for s in item.summary)
    finish = "stop" if final.status == "completed" else final.status
    return Parsed(final.output_text, tuple(calls), reasoning, finish)


def _anthropic(chunks: list[bytes]) -> Parsed:
    client = anthropic.Anthropic(api_key="k", base_url=URL.removesuffix("/v1"))
    stream = anthropic.Stream(
        cast_to=RawMessageStreamEvent, response=_response(ANTHROPIC_HTTP, chunks), client=client
    )
    snapshot, bufs, stopped = None, {}, False
    for event in stream:
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=bufs)
        stopped = stopped or event.type == "message_stop"
    if snapshot is None or not stopped:
        raise AssertionError("the SDK saw no message_stop")
    text = "".join(b.text for b in snapshot.content if b.type == "text")
    thinking = "".join(b.thinking for b in snapshot.content if b.type == "thinking")
    calls = tuple((b.id, b.name, b.input) for b in snapshot.content if b.type == "tool_use")
    return Parsed(text, calls, thinking, snapshot.stop_reason)
