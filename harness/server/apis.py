"""Payload shapes of the three provider APIs the fault server speaks.

Given a parsed request body and the script's reply settings, :func:`plan_reply`
returns a :class:`ReplyPlan`: the exact body units (SSE events, or one JSON document
for a non-streamed call) of a *healthy* reply, in order, each with a kind tag. The
body writer sends these units and injects faults between or inside them; payload
faults edit them first. The builders are each API's module (``harness.apis``: ``chat.py``,
``responses.py``, ``messages.py``); dialect profiles (``dialects.py``) vary them benignly.

What a reply carries (``FaultScript.reply``)::

    text                 ``events`` text deltas
    tool_call            one function call, its JSON arguments in ``events`` fragments,
                         as a model makes one: only to a request that offers tools,
                         naming one of them (the script's ``tool`` when offered, else
                         the first), arguments valid against its JSON schema
                         (``replies.schema_arguments``); a request that offers none, or
                         carries a tool result (chat ``role: tool``, Responses
                         ``function_call_output``, Messages ``tool_result``), gets the
                         text reply (the agent ran the tool, the model answers)
    parallel_tool_calls  two calls, ``events`` fragments each (text as above)
    reasoning            ``reasoning_events`` reasoning deltas, then ``events`` text deltas

Where the script names an ``answer_tool`` the request offers (an agent framework's final
answer tool), the text a reply would carry goes as one call of that tool instead, its
first parameter the text in ``events`` fragments; the reply's expected text is that text
(what the agent hands its caller). A tool-call reply never names the answer tool.

What ``event:N`` counts (the counted units of a plan, in order; keep-alive comments,
``ping`` keep-alives from ``drip``/``keepalive_comment_s``, a dialect's comment lines and
the inserts of payload faults are never counted)::

    chat       1 role chunk; reasoning: 1 chunk per reasoning delta (delta.reasoning_content,
               or delta.reasoning in the openrouter and vllm dialects); 1 chunk per text delta; per
               tool call 1 chunk with id + name, then 1 chunk per argument fragment;
               1 finish chunk (finish_reason "stop" or "tool_calls"); 1 usage chunk if
               stream_options.include_usage; 1 "data: [DONE]"
    responses  response.created, response.in_progress; reasoning: output_item.added,
               reasoning_summary_part.added, 1 reasoning_summary_text.delta per delta,
               reasoning_summary_text.done, reasoning_summary_part.done, output_item.done;
               text: output_item.added, content_part.added, 1 output_text.delta per
               delta, output_text.done, content_part.done, output_item.done; per tool
               call: output_item.added (function_call), 1 function_call_arguments.delta
               per fragment, function_call_arguments.done, output_item.done;
               response.completed
    messages   message_start; per block: content_block_start, (after the first block's
               start: ping), its deltas (thinking_delta then 1 signature_delta; text_delta;
               input_json_delta per fragment), content_block_stop; message_delta
               (stop_reason "end_turn" or "tool_use"); message_stop
    non-stream one unit: the whole JSON document

Dialects change the count only where their source says the server sends more: the
openrouter dialect always sends the usage chunk (and two ``: OPENROUTER PROCESSING``
comments first, never counted); the anthropic dialect sends an empty
``input_json_delta`` right after each ``tool_use`` block starts.

So ``event:0`` is "right after the headers, before any event", and for a text reply with
``events`` deltas every ``event:N`` with ``N < events`` cuts the stream before its
terminal marker (``[DONE]``, ``response.completed``, ``message_stop``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.apis import Api, api_for, error_document
from harness.apis.base import COMMENT
from harness.apis.lineage import Conversation
from harness.apis.payload import BuildInput, Content, ToolCall, splice
from harness.replies import (
    fragments,
    reasoning_deltas,
    render_tool_call,
    reply_deltas,
    schema_arguments,
    seed_for_request,
)
from harness.sse import encode_comment
from harness.vocab.dialects import dialect_for

__all__ = [
    "conversation_of",
    "edit_plan",
    "ReplyPlan",
    "error_body",
    "models_body",
    "plan_reply",
    "reply_words",
]


SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"
JSON_CONTENT_TYPE = "application/json"
_COMMENT = COMMENT
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
    #: one kind per unit (``harness.apis.payload.KINDS``): open, reasoning, text, tool_args, ...
    kinds: tuple[str, ...] = ()
    #: unit index -> (tool call index, fragment, template head, template tail)
    fragments: Mapping[int, tuple[int, str, bytes, bytes]] = field(default_factory=dict)
    newline: bytes = b"\n"
    #: how many tool calls the reply carries (0: a text answer)
    tool_calls: int = 0
    #: where the answer goes as a call of the answer tool: that call's arguments as sent
    #: (the JSON the answer is wrapped in; None otherwise)
    answer_arguments: str | None = None

    def malformed(self, payload: str) -> bytes:
        """One broken unit in this API's framing (a data line of ``payload``)."""
        return self.malformed_prefix + payload.encode("utf-8") + self.malformed_suffix

    def drip(self, comment: str) -> bytes:
        """One keep-alive unit: an SSE comment (chat, responses), a ``ping`` event
        (messages), or a JSON-legal space (non-stream bodies)."""
        if not self.stream:
            return b" "
        unit = api_for(self.api).keepalive_unit
        return encode_comment(comment) if unit == _COMMENT else unit

    def comment(self, text: str) -> bytes:
        """One SSE comment line (a provider's "processing" notice), never counted."""
        return encode_comment(text)

    def error_event(self, kind: str, message: str) -> bytes:
        """This API's in-band error event (``kind``: overloaded, rate_limit, server_error)."""
        return self._nl(api_for(self.api).error_event(kind, message))

    def with_fragment(self, index: int, text: str) -> bytes:
        """Tool-argument unit ``index`` re-encoded to carry ``text`` instead."""
        _call, _frag, head, tail = self.fragments[index]
        return self._nl(splice(head, text, tail))

    def _nl(self, unit: bytes) -> bytes:
        return unit if self.newline == b"\n" else unit.replace(b"\n", self.newline)


def conversation_of(api: str, body: Mapping[str, Any]) -> Conversation:
    """The conversation ``body`` carries, read by ``api``'s module (``harness.apis``)."""
    return api_for(api).conversation(body, seed_for_request(dict(body)))


def edit_plan(api: str, *, stream: bool, kinds: tuple[str, ...], newline: bytes) -> ReplyPlan:
    """A plan with no units of its own, for payload edits on units that came from
    elsewhere (a proxied or recorded stream, ``harness.record.edits``)."""
    prefix, suffix = api_for(api).frame
    return ReplyPlan(
        api=api,
        stream=stream,
        units=(),
        content_type=SSE_CONTENT_TYPE if stream else JSON_CONTENT_TYPE,
        expected_text="",
        keepalive=_COMMENT,
        malformed_prefix=prefix.replace(b"\n", newline),
        malformed_suffix=suffix.replace(b"\n", newline),
        kinds=kinds,
        newline=newline,
    )


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
    tool: str | None = None,
    answered: bool = False,
    answer_tool: str | None = None,
) -> ReplyPlan:
    """The healthy reply for ``api`` (``chat``, ``responses``, ``messages``) to ``body``;
    ``answered``: the conversation already acts on the model's reply in a form the body
    alone does not show (a text observation, known from the request's lineage)."""
    spec = api_for(api)
    seed = seed_for_request(dict(body))
    carried = _content(
        spec,
        body,
        seed,
        shape,
        events=events,
        text=content,
        reasoning=reasoning_events,
        tool=tool,
        answered=answered,
        answer_tool=answer_tool,
    )
    profile = dialect_for(dialect, api)
    given = BuildInput(body, carried, seed=seed, created=CREATED, dialect=profile)
    built = spec.build(given)
    stream = given.stream
    units = built.units
    newline = profile.newline.encode()
    if stream and newline != b"\n":
        units = [u.replace(b"\n", newline) for u in units]
    keepalive = spec.keepalive_unit if stream else b" "
    prefix, suffix = spec.frame if stream else (b"", b"")
    expected = (
        carried.answer
        if carried.answer is not None
        else carried.text
        + "".join(render_tool_call(c.name, c.arguments) for c in carried.tool_calls)
    )
    return ReplyPlan(
        api=api,
        stream=stream,
        units=tuple(units),
        content_type=SSE_CONTENT_TYPE if stream else JSON_CONTENT_TYPE,
        expected_text=expected,
        keepalive=keepalive,
        malformed_prefix=prefix,
        malformed_suffix=suffix,
        kinds=tuple(built.kinds),
        fragments=built.fragments,
        newline=newline,
        tool_calls=len(carried.tool_calls),
        answer_arguments=carried.tool_calls[0].arguments if carried.answer is not None else None,
    )


def error_body(api: str | None, code: int, message: str, *, err_type: str | None = None) -> bytes:
    """An error document in ``api``'s shape (:meth:`harness.apis.base.Api.error_document`:
    OpenAI's ``{"error": {message, type, code}}``, Anthropic's ``{"type": "error",
    "error": {type, message}}`` for the messages API)."""
    kind = err_type or _ERROR_TYPES.get(
        code, "server_error" if code >= 500 else "invalid_request_error"
    )
    return _dumps(error_document(api, kind, message, _ERROR_CODES.get(code, str(code))))


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


def _content(
    spec: Api,
    body: Mapping[str, Any],
    seed: str,
    shape: str,
    *,
    events: int,
    text: str | None,
    reasoning: int,
    tool: str | None = None,
    answered: bool = False,
    answer_tool: str | None = None,
) -> Content:
    """What the reply carries for ``shape`` (``FaultScript.reply``), as a model would:
    a tool call only to a request that offers tools, naming one of them (``tool`` when
    offered, else the first but the answer tool) with arguments valid against its schema;
    text after a tool result (or a text observation: ``answered``), or when no tool is
    offered -- as a call of ``answer_tool`` where the request offers it."""
    deltas = reply_words(body, events=events, content=text, seed=seed)
    offered = spec.offered_tools(body)
    answering = next(((n, p) for n, p in offered if n == answer_tool), None)
    reasons = reasoning_deltas(seed, reasoning) if shape == "reasoning" else []
    work = [(n, p) for n, p in offered if n != answer_tool]
    if shape in ("text", "reasoning") or not work or answered or spec.carries_tool_result(body):
        # nothing to call, or the agent ran it: the model answers
        if answering is None:
            return Content(deltas, reasoning=reasons)
        return _answer_call(answering, "".join(deltas), seed, events, reasons)
    name, schema = next(((n, p) for n, p in work if n == tool), work[0])
    calls = 2 if shape == "parallel_tool_calls" else 1
    tool_calls = []
    for i in range(calls):
        args = schema_arguments(schema, seed, i, words=max(2, events))
        tool_calls.append(
            ToolCall(f"call_{seed[:8]}_{i}", name, args, tuple(fragments(args, events)))
        )
    return Content([], tool_calls=tool_calls)


def _answer_call(
    answering: tuple[str, Any], answer: str, seed: str, events: int, reasoning: list[str]
) -> Content:
    """The final answer as one call of the answer tool: its first parameter (``answer``
    when its schema names none) is the text, in ``events`` fragments."""
    name, schema = answering
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    param = next(iter(props), "answer") if isinstance(props, Mapping) and props else "answer"
    args = json.dumps({param: answer}, ensure_ascii=False)
    call = ToolCall(f"call_{seed[:8]}_0", name, args, tuple(fragments(args, events)))
    return Content([], reasoning=reasoning, tool_calls=[call], answer=answer)


def _dumps(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
