"""Reading the three provider APIs' answers: classify each SSE item, collect text, tool
calls and reasoning, and tell a complete answer from a truncated one.

The reference client reads the raw body (through the SDK's raw-response path) and
decodes it with :mod:`harness.sse`, because the SDK's own stream iterator hides SSE
comments, and "comments but no content" is a stall this project must see.

Per API, what is content, what is keep-alive, and what is the terminal marker is the
API's own module (``harness.apis``: its fold, shared with the fault server that writes
the same events); this module is the fold's sink. Every event that is
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
from typing import Any, NoReturn

from harness.apis import api_for
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
    """Interprets one attempt's SSE items for ``api``; collects text and the end state.

    The API's own fold (:meth:`harness.apis.base.Api.fold`) reads each event; this is
    its sink (:class:`harness.apis.base.Sink`)."""

    api: str
    parts: list[str] = field(default_factory=list)
    finish_reason: str | None = None
    complete: bool = False
    events: int = 0
    reasoning_parts: list[str] = field(default_factory=list)
    tools: ToolCalls = field(default_factory=ToolCalls)
    _step: list[str] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._api = api_for(self.api)  # an unknown API raises here, never reads as another

    def feed(self, item: Event | Comment) -> Step:
        if isinstance(item, Comment):
            return Step("comment")
        if self.complete:
            return Step("comment")  # after the terminal marker nothing counts (see terminal)
        self.events += 1
        self._step.clear()
        kind = self._api.fold(item.event, item.data, self)
        if kind == "comment":
            return Step("comment")
        return Step("content", "".join(self._step))

    @property
    def text(self) -> str:
        return "".join(self.parts)

    @property
    def reasoning(self) -> str:
        return "".join(self.reasoning_parts)

    def parsed(self) -> Parsed:
        """The complete answer (call after :func:`require_terminal`)."""
        return Parsed(self.text, self.finish_reason, self.tools.finish(), self.reasoning)

    # ------------------------------------------------------------ the API's sink

    def json(self, data: str) -> dict[str, Any]:
        return _json(data)

    def add_text(self, text: str) -> None:
        if text:
            self.parts.append(text)
            self._step.append(text)

    def replace_text(self, text: str) -> None:
        self.parts[:] = [text]

    def add_reasoning(self, text: str) -> None:
        self.reasoning_parts.append(text)

    def tool(self, key: Any, **piece: Any) -> None:
        self.tools.piece(key, **piece)

    def has_tool(self, key: Any) -> bool:
        return self.tools.has(key)

    def finish(self, reason: str | None) -> None:
        self.finish_reason = reason

    def end(self) -> None:
        self.complete = True

    def error(self, err: Any) -> NoReturn:
        raise _stream_error(err)

    def malformed(self, message: str) -> NoReturn:
        raise MalformedEvent(message)


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
    reader = _DocumentReader(api)
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
    reader.body = text
    reader._api.read_document(doc, reader)
    return reader.parsed()


@dataclass
class _DocumentReader(StreamReader):
    """The sink of a whole document: a malformed one is named with its first bytes."""

    body: str = ""

    def malformed(self, message: str) -> NoReturn:
        raise MalformedEvent(f"{message}: {self.body[:120]!r}")


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
