"""An OpenAI-shaped chat reply read as a naive agent loop reads it: its text and its tool
calls, from a whole message or from a stream of chunks.

The OpenAI SDK and LiteLLM (which returns the same shapes for every provider, the
Messages API included) both hand back ``choices[i].message`` / ``choices[i].delta``
objects; a target that read only ``content`` would report a tool-call reply as empty
text, a "truncated as complete" verdict on the target for our own omission.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.replies import render_tool_call, render_tool_calls
from harness.targets.base import EventLog

__all__ = ["message_text", "read_chat_stream"]


def message_text(message: Any) -> str:
    """A non-streamed ``choices[0].message``: its content, then its tool calls rendered."""
    rendered = "".join(
        render_tool_call(tc.function.name, tc.function.arguments)
        for tc in getattr(message, "tool_calls", None) or ()
    )
    return (message.content or "") + rendered


def read_chat_stream(stream: Iterable[Any], log: EventLog) -> tuple[str, str | None]:
    """Consume ``stream`` to its end: (the text with the tool calls rendered after it,
    the last finish_reason seen). Tool-call fragments are joined by their ``index``."""
    parts: list[str] = []
    calls: dict[int, list[str]] = {}  # index -> [name, arguments...]
    finish = None
    for chunk in stream:
        for choice in chunk.choices:
            delta = choice.delta
            if delta is not None and delta.content:
                parts.append(delta.content)
                log.mark("delta", f"{len(delta.content)} chars")
            for tc in (getattr(delta, "tool_calls", None) if delta is not None else None) or ():
                entry = calls.setdefault(tc.index, [""])
                if tc.function is not None and tc.function.name:
                    entry[0] = tc.function.name
                if tc.function is not None and tc.function.arguments:
                    entry.append(tc.function.arguments)
            if choice.finish_reason:
                finish = choice.finish_reason
    log.mark("stream_end", f"finish_reason={finish}")
    rendered = render_tool_calls(calls)
    return "".join(parts) + rendered, finish
