"""Reading the three provider APIs' answers: classify each SSE item, collect text, tool
calls and reasoning, and tell a complete answer from a truncated one.

The reference client reads the raw body (through the SDK's raw-response path) and
decodes it with :mod:`harness.sse`, because the SDK's own stream iterator hides SSE
comments, and "comments but no content" is a stall this project must see.

Per API, what is content, what is keep-alive, and what is the terminal marker is
:mod:`harness.client.terminal` (shared with the guard transport). Every event that is
not keep-alive is progress -- reasoning deltas and tool-call argument fragments
included, so a long reasoning pause is never a stall and satisfies the first-byte
deadline; only text deltas are handed to ``on_delta``::

    chat       choices[0].delta.content (text), .reasoning_content / .reasoning,
               .tool_calls[] (by index); terminal "data: [DONE]"
    responses  response.output_text.delta, reasoning summary/text deltas, function_call
               items + function_call_arguments.delta/.done; terminal response.completed
               (or response.incomplete); response.failed / error -> ProviderError
    messages   content_block_delta: text_delta, thinking_delta, input_json_delta (by
               block index); "ping" is keep-alive; terminal message_stop;
               error -> ProviderError (overloaded_error: 529, retryable)

Non-streamed bodies are one JSON document; whitespace-only chunks are keep-alive
(servers pad a slow JSON body with spaces). :func:`require_terminal` is the
truncation guard: a stream that ended without its terminal marker is
:class:`TruncatedStream`, even when the connection ended "cleanly" (a close-delimited
body ending on FIN) and even when it ended inside a tool call's arguments: a partial
tool call is never returned.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.client import terminal
from harness.client.assembly import ToolCall, ToolCalls
from harness.client.errors import MalformedEvent, ProviderError, TruncatedStream
from harness.json_text import OUT, JsonScan
from harness.sse import Comment, Event

__all__ = [
    "Parsed",
    "Step",
    "StreamReader",
    "parse_body",
    "parse_document",
    "require_terminal",
]


@dataclass(frozen=True)
class Parsed:
    """A complete answer's content: text, tool calls (arguments parsed), reasoning."""

    text: str
    finish_reason: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str = ""


@dataclass(frozen=True)
class Step:
    """What one decoded item meant: ``"content"`` (progress, maybe with text) or ``"comment"``."""

    kind: str
    text: str = ""


@dataclass
class StreamReader:
    """Interprets one attempt's SSE items for ``api``; collects text and the end state."""

    api: str
    parts: list[str] = field(default_factory=list)
    finish_reason: str | None = None
    complete: bool = False
    events: int = 0
    reasoning_parts: list[str] = field(default_factory=list)
    tools: ToolCalls = field(default_factory=ToolCalls)

    def feed(self, item: Event | Comment) -> Step:
        if isinstance(item, Comment):
            return Step("comment")
        if self.complete:
            return Step("comment")  # after the terminal marker nothing counts (see terminal)
        self.events += 1
        if self.api == "chat":
            return self._chat(item)
        if self.api == "responses":
            return self._responses(item)
        return self._messages(item)

    @property
    def text(self) -> str:
        return "".join(self.parts)

    @property
    def reasoning(self) -> str:
        return "".join(self.reasoning_parts)

    def parsed(self) -> Parsed:
        """The complete answer (call after :func:`require_terminal`)."""
        return Parsed(self.text, self.finish_reason, self.tools.finish(), self.reasoning)

    # ------------------------------------------------------------------ per API

    def _chat(self, ev: Event) -> Step:
        if terminal.is_done(ev.data):
            self.complete = True
            return Step("content")
        doc = _json(ev.data)
        if doc.get("error"):
            raise _stream_error(doc["error"])
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
                    self.reasoning_parts.append(thought)
                for pos, tc in enumerate(delta.get("tool_calls") or ()):
                    if isinstance(tc, dict):
                        fn = tc.get("function") or {}
                        self.tools.piece(
                            tc.get("index", pos),
                            id=tc.get("id"),
                            name=fn.get("name"),
                            arguments=fn.get("arguments"),
                        )
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        return self._content(text)

    def _responses(self, ev: Event) -> Step:
        if terminal.is_done(ev.data):
            return Step("content")  # only after the terminal event is it an end (see terminal)
        doc = _json(ev.data)
        kind = doc.get("type") or ev.event or ""
        if kind == "response.output_text.delta":
            return self._content(str(doc.get("delta") or ""))
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            self.reasoning_parts.append(str(doc.get("delta") or ""))
        elif kind in ("response.output_item.added", "response.output_item.done"):
            item = doc.get("item") or {}
            if isinstance(item, dict) and item.get("type") == "function_call":
                self.tools.piece(
                    item.get("id") or doc.get("output_index"),
                    id=item.get("call_id") or item.get("id"),
                    name=item.get("name"),
                    final=item.get("arguments") if kind.endswith(".done") else None,
                )
        elif kind == "response.function_call_arguments.delta":
            self.tools.piece(
                doc.get("item_id") or doc.get("output_index"), arguments=doc.get("delta")
            )
        elif kind == "response.function_call_arguments.done":
            self.tools.piece(
                doc.get("item_id") or doc.get("output_index"), final=doc.get("arguments")
            )
        elif kind == "response.completed":
            self.complete, self.finish_reason = True, "stop"
            self._final_text(doc.get("response"))
        elif kind == "response.incomplete":
            details = (doc.get("response") or {}).get("incomplete_details") or {}
            self.complete, self.finish_reason = True, str(details.get("reason") or "incomplete")
        elif kind in ("response.failed", "error"):
            err = (
                (doc.get("response") or {}).get("error")
                if kind == "response.failed"
                else doc.get("error", doc)
            )
            raise _stream_error(err or doc)
        elif doc.get("error"):
            raise _stream_error(doc["error"])  # as the openai SDK does for any event
        return Step("content")

    def _final_text(self, response: Any) -> None:
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
            self.parts[:] = ["".join(texts)]

    def _messages(self, ev: Event) -> Step:
        doc = _json(ev.data)
        kind = doc.get("type") or ev.event or ""
        if terminal.is_keepalive_event("messages", kind):
            return Step("comment")
        if kind == "content_block_start":
            block = doc.get("content_block") or {}
            if isinstance(block, dict) and block.get("type") == "tool_use":
                self.tools.piece(
                    doc.get("index"),
                    id=block.get("id"),
                    name=block.get("name"),
                    start_input=block.get("input"),
                )
        elif kind == "content_block_delta":
            delta = doc.get("delta") or {}
            dtype = delta.get("type") if isinstance(delta, dict) else None
            if dtype == "text_delta":
                return self._content(str(delta.get("text") or ""))
            if dtype == "thinking_delta":
                self.reasoning_parts.append(str(delta.get("thinking") or ""))
            elif dtype == "input_json_delta" and self.tools.has(doc.get("index")):
                self.tools.piece(doc.get("index"), arguments=delta.get("partial_json"))
        elif kind == "message_delta":
            stop = (doc.get("delta") or {}).get("stop_reason")
            if stop:
                self.finish_reason = str(stop)
        elif kind == "message_stop":
            self.complete = True
        elif kind == "error":
            raise _stream_error(doc.get("error") or doc)
        return Step("content")

    def _content(self, text: str) -> Step:
        if text:
            self.parts.append(text)
        return Step("content", text)


def require_terminal(reader: StreamReader) -> None:
    """The truncation guard: raise :class:`TruncatedStream` unless the terminal marker came."""
    if not reader.complete:
        calls = len(reader.tools.calls)
        raise TruncatedStream(
            f"{reader.api} stream ended after {reader.events} events without"
            f" {terminal.marker(reader.api)} ({len(reader.text)} characters of partial text"
            + (f" and {calls} partial tool call(s)" if calls else "")
            + " discarded)"
        )


def parse_body(api: str, body: bytes) -> tuple[str, str | None]:
    """Text and finish reason of a non-streamed JSON body (see :func:`parse_document`)."""
    parsed = parse_document(api, body)
    return parsed.text, parsed.finish_reason


def parse_document(api: str, body: bytes) -> Parsed:
    """The answer in a non-streamed JSON body; a body cut short is
    :class:`TruncatedStream`, one that is not JSON is :class:`MalformedEvent`."""
    text = body.decode("utf-8", errors="replace")
    if not text.strip():
        raise TruncatedStream(f"{api} body ended empty")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        if _unclosed(text):
            raise TruncatedStream(f"{api} body ended mid-document after {len(body)} bytes") from exc
        raise MalformedEvent(f"{api} body is not JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise MalformedEvent(f"{api} body is not a JSON object")
    if doc.get("error"):
        raise _stream_error(doc["error"])
    tools = ToolCalls()
    if api == "chat":
        choices = doc.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            # no choice is no answer: returning "" would call an empty reply complete
            # (found by harness fuzz: drop_field choices on a non-streamed body)
            raise MalformedEvent(f"{api} body has no choices: {text[:120]!r}")
        choice = choices[0]
        message = choice.get("message") or {}
        for i, tc in enumerate(message.get("tool_calls") or ()):
            fn = tc.get("function") or {}
            tools.piece(i, id=tc.get("id"), name=fn.get("name"), final=fn.get("arguments"))
        thought = message.get("reasoning_content") or message.get("reasoning") or ""
        return Parsed(
            str(message.get("content") or ""),
            choice.get("finish_reason"),
            tools.finish(),
            thought if isinstance(thought, str) else "",
        )
    if api == "responses":
        parts, thoughts = [], []
        for item in doc.get("output") or ():
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call":
                tools.piece(
                    item.get("id"),
                    id=item.get("call_id"),
                    name=item.get("name"),
                    final=item.get("arguments"),
                )
            for c in item.get("content") or ():
                if isinstance(c, dict) and c.get("type") == "output_text":
                    parts.append(c.get("text", ""))
            for c in item.get("summary") or ():
                if isinstance(c, dict):
                    thoughts.append(c.get("text", ""))
        status = doc.get("status")
        finish = "stop" if status == "completed" else status
        return Parsed("".join(parts), finish, tools.finish(), "".join(thoughts))
    texts, thoughts = [], []
    for i, b in enumerate(doc.get("content") or ()):
        if not isinstance(b, dict):
            continue
        if b.get("type") == "text":
            texts.append(b.get("text", ""))
        elif b.get("type") == "thinking":
            thoughts.append(b.get("thinking", ""))
        elif b.get("type") == "tool_use":
            tools.piece(i, id=b.get("id"), name=b.get("name"), start_input=b.get("input"))
    return Parsed("".join(texts), doc.get("stop_reason"), tools.finish(), "".join(thoughts))


def _unclosed(text: str) -> bool:
    """True if ``text`` looks like the start of a JSON document that was cut off: it opens
    with ``{`` or ``[`` and ends inside a string or with brackets still open."""
    body = text.strip()
    if not body.startswith(("{", "[")):
        return False
    scan, depth = JsonScan(), 0
    for ch in body:
        if scan.step(ch) == OUT:
            depth += (ch in "{[") - (ch in "}]")
    return scan.in_string or depth > 0


def _json(data: str) -> dict[str, Any]:
    try:
        doc = json.loads(data)
    except json.JSONDecodeError as exc:
        raise MalformedEvent(f"event data is not JSON: {data[:80]!r}") from exc
    if not isinstance(doc, dict):
        raise MalformedEvent(f"event data is not a JSON object: {data[:80]!r}")
    return doc


def _stream_error(err: Any) -> ProviderError:
    """An in-band error as :class:`ProviderError`; overloaded (529) and rate-limit (429)
    errors are retryable like the same status on a status line."""
    if isinstance(err, dict):
        message = str(err.get("message") or err)
    else:
        message = str(err)
    return ProviderError(
        f"provider error inside the stream: {message}",
        status=terminal.error_status(err),
        provider_message=message,
    )
