"""Assembling tool calls and reasoning from stream deltas, per API.

Tool calls arrive in pieces: chat ``delta.tool_calls[]`` keyed by ``index`` (id and
name in the first piece, argument fragments after), Responses ``function_call``
output items plus ``response.function_call_arguments.delta/.done``, Anthropic
``tool_use`` blocks plus ``input_json_delta``. :class:`ToolCalls` keeps one builder
per key in arrival order; :meth:`ToolCalls.finish` parses the arguments of a
*complete* stream (a stream cut inside a call never gets here: the truncation guard
raises first). Reasoning (chat ``reasoning_content`` / ``reasoning``, Responses
reasoning summary and text deltas, Anthropic ``thinking_delta``) is concatenated.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.client.errors import MalformedEvent

__all__ = ["ToolCall", "ToolCalls"]


@dataclass(frozen=True)
class ToolCall:
    """One complete tool call: ``arguments`` parsed, ``raw_arguments`` as sent."""

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str


@dataclass
class _Builder:
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)
    final: str | None = None  # a ".done" event's full arguments win over the pieces
    start_input: Any = None  # Anthropic: the input given in content_block_start


@dataclass
class ToolCalls:
    """Tool calls under assembly, keyed by index / item id / block index."""

    calls: dict[Any, _Builder] = field(default_factory=dict)

    def piece(
        self,
        key: Any,
        *,
        id: Any = None,
        name: Any = None,
        arguments: Any = None,
        final: Any = None,
        start_input: Any = None,
    ) -> None:
        b = self.calls.setdefault(key, _Builder())
        if isinstance(id, str) and id:
            b.id = id
        if isinstance(name, str) and name:
            b.name = b.name or name
        if isinstance(arguments, str) and arguments:
            b.parts.append(arguments)
        if isinstance(final, str):
            b.final = final
        if start_input is not None:
            b.start_input = start_input

    def has(self, key: Any) -> bool:
        return key in self.calls

    def finish(self) -> tuple[ToolCall, ...]:
        """The calls with parsed arguments; :class:`MalformedEvent` if a complete
        stream delivered arguments that are not a JSON object, or a call with no
        function name (its first piece lost: no tool can be run for it, and every API
        names the function)."""
        out = []
        for b in self.calls.values():
            if not b.name:
                raise MalformedEvent(f"tool call {b.id or '(no id)'!r} has no function name")
            raw = b.final if b.final is not None else "".join(b.parts)
            if not raw and isinstance(b.start_input, dict) and b.start_input:
                raw = json.dumps(b.start_input, ensure_ascii=False)
            try:
                args = json.loads(raw) if raw.strip() else {}
            except json.JSONDecodeError as exc:
                raise MalformedEvent(
                    f"tool call {b.name or b.id!r} arguments are not JSON: {raw[:80]!r}"
                ) from exc
            if not isinstance(args, dict):
                raise MalformedEvent(f"tool call {b.name or b.id!r} arguments are not an object")
            out.append(ToolCall(b.id, b.name, args, raw))
        return tuple(out)
