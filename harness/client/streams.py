"""Reading the three provider APIs' answers: classify each SSE item, collect the text,
and tell a complete answer from a truncated one.

The reference client reads the raw body (through the SDK's raw-response path) and
decodes it with :mod:`harness.sse`, because the SDK's own stream iterator hides SSE
comments, and "comments but no content" is a stall this project must see.

Per API, what is content, what is keep-alive, and what is the terminal marker::

    chat       data chunks (choices[0].delta.content); terminal "data: [DONE]"
    responses  typed events (response.output_text.delta); terminal response.completed
               (or response.incomplete); response.failed / error -> ProviderError
    messages   content_block_delta (text_delta); "ping" is keep-alive, never progress;
               terminal message_stop; error -> ProviderError
    SSE ``:`` comments are keep-alive in every API.

Non-streamed bodies are one JSON document; whitespace-only chunks are keep-alive
(servers pad a slow JSON body with spaces). :func:`require_terminal` is the
truncation guard: a stream that ended without its terminal marker is
:class:`TruncatedStream`, even when the connection ended "cleanly" (a close-delimited
body ending on FIN).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.client.errors import MalformedEvent, ProviderError, TruncatedStream
from harness.sse import Comment, Event

__all__ = ["APIS", "Step", "StreamReader", "parse_body", "require_terminal"]

APIS = ("chat", "responses", "messages")

_ERROR_STATUS = {"rate_limit_error": 429, "overloaded_error": 529, "api_error": 500}


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

    def feed(self, item: Event | Comment) -> Step:
        if isinstance(item, Comment):
            return Step("comment")
        self.events += 1
        if self.api == "chat":
            return self._chat(item)
        if self.api == "responses":
            return self._responses(item)
        return self._messages(item)

    @property
    def text(self) -> str:
        return "".join(self.parts)

    # ------------------------------------------------------------------ per API

    def _chat(self, ev: Event) -> Step:
        if ev.data.strip() == "[DONE]":
            self.complete = True
            return Step("content")
        doc = _json(ev.data)
        if "error" in doc:
            raise _stream_error(doc["error"])
        text = ""
        for choice in doc.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                text += delta["content"]
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        return self._content(text)

    def _responses(self, ev: Event) -> Step:
        doc = _json(ev.data)
        kind = doc.get("type") or ev.event or ""
        if kind == "response.output_text.delta":
            return self._content(str(doc.get("delta") or ""))
        if kind == "response.completed":
            self.complete, self.finish_reason = True, "stop"
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
        return Step("content")

    def _messages(self, ev: Event) -> Step:
        doc = _json(ev.data)
        kind = doc.get("type") or ev.event or ""
        if kind == "ping":
            return Step("comment")
        if kind == "content_block_delta":
            delta = doc.get("delta") or {}
            if isinstance(delta, dict) and delta.get("type") == "text_delta":
                return self._content(str(delta.get("text") or ""))
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
        marker = {"chat": "[DONE]", "responses": "response.completed", "messages": "message_stop"}[
            reader.api
        ]
        raise TruncatedStream(
            f"{reader.api} stream ended after {reader.events} events without {marker}"
            f" ({len(reader.text)} characters of partial text discarded)"
        )


def parse_body(api: str, body: bytes) -> tuple[str, str | None]:
    """Text and finish reason of a non-streamed JSON body; a body cut short is
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
    if "error" in doc and doc.get("error"):
        raise _stream_error(doc["error"])
    if api == "chat":
        choice = (doc.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        return str(message.get("content") or ""), choice.get("finish_reason")
    if api == "responses":
        parts = [
            c.get("text", "")
            for item in doc.get("output") or ()
            if isinstance(item, dict)
            for c in item.get("content") or ()
            if isinstance(c, dict) and c.get("type") == "output_text"
        ]
        status = doc.get("status")
        return "".join(parts), "stop" if status == "completed" else status
    blocks = [
        b.get("text", "")
        for b in doc.get("content") or ()
        if isinstance(b, dict) and b.get("type") == "text"
    ]
    return "".join(blocks), doc.get("stop_reason")


def _unclosed(text: str) -> bool:
    """True if ``text`` looks like the start of a JSON document that was cut off: it opens
    with ``{`` or ``[`` and ends inside a string or with brackets still open."""
    body = text.strip()
    if not body.startswith(("{", "[")):
        return False
    depth, in_string, escaped = 0, False, False
    for ch in body:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
    return in_string or depth > 0


def _json(data: str) -> dict[str, Any]:
    try:
        doc = json.loads(data)
    except json.JSONDecodeError as exc:
        raise MalformedEvent(f"event data is not JSON: {data[:80]!r}") from exc
    if not isinstance(doc, dict):
        raise MalformedEvent(f"event data is not a JSON object: {data[:80]!r}")
    return doc


def _stream_error(err: Any) -> ProviderError:
    if isinstance(err, dict):
        message = str(err.get("message") or err)
        status = _ERROR_STATUS.get(str(err.get("type")), 500)
    else:
        message, status = str(err), 500
    return ProviderError(
        f"provider error inside the stream: {message}", status=status, provider_message=message
    )
