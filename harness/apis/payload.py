"""What every payload builder shares: the reply's content, and a unit list with tags.

Units are encoded once per request; deltas are spliced into a template encoded with a
placeholder (the same bytes as encoding every unit, at a fraction of the cost per
event). Each unit carries a *kind* tag, so payload faults can find "the first
tool-call argument fragment" or "the terminal event" without knowing the API.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from json.encoder import encode_basestring  # what json.dumps(str, ensure_ascii=False) returns
from typing import Any

from harness.vocab.dialects import Dialect

__all__ = [
    "HOLE",
    "BuildInput",
    "Content",
    "ToolCall",
    "Units",
    "data_unit",
    "dumps",
    "named_unit",
]

#: Unit kinds (``ReplyPlan.kinds``).
KINDS = (
    "open",  # preamble: role chunk, created/in_progress, message_start, block starts
    "reasoning",  # one reasoning / thinking delta
    "text",  # one text delta
    "tool_args",  # one tool-call argument fragment
    "close",  # block / item / part done events
    "finish",  # the event carrying finish_reason / stop_reason
    "usage",  # a usage-only chunk
    "ping",  # Anthropic's ping (keep-alive, part of the healthy plan)
    "terminal",  # [DONE], response.completed, message_stop
    "document",  # a non-streamed JSON body
)

HOLE = "\x00hole\x00"
_HOLE_JSON = json.dumps(HOLE).encode()


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str
    fragments: tuple[str, ...]


@dataclass(frozen=True)
class Content:
    """What a reply carries: text deltas, reasoning deltas, tool calls."""

    deltas: list[str]
    reasoning: list[str] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    #: The final answer a call of the answer tool carries (None: no such call): what the
    #: job's caller gets back from the agent, so the reply's expected text.
    answer: str | None = None

    @property
    def text(self) -> str:
        return "".join(self.deltas)

    @property
    def output_tokens(self) -> int:
        """The usage every API reports: one token per text delta, reasoning delta and
        tool-argument fragment."""
        return (
            len(self.deltas) + len(self.reasoning) + sum(len(c.fragments) for c in self.tool_calls)
        )


@dataclass(frozen=True)
class BuildInput:
    """What every payload builder (``chat``, ``responses``, ``messages``: ``build``)
    is given: the request, the content to carry and the per-request facts. One type, so
    a new fact is added here and in the builder that uses it, not in every signature."""

    body: Mapping[str, Any]
    content: Content
    seed: str
    created: int
    dialect: Dialect

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def model(self) -> str:
        return str(self.body.get("model") or "test-model")

    @cached_property  # the body can be megabytes (an upload stall's)
    def prompt_tokens(self) -> int:
        """A rough count (4 characters a token) of what was sent: never zero."""
        sent = self.body.get("messages") or self.body.get("input") or ""
        return max(1, len(json.dumps(sent)) // 4)


@dataclass
class Units:
    """The units of one reply in order, with their kinds; tool-argument fragments keep
    their template so a fault can re-encode one with other text."""

    units: list[bytes] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    #: unit index -> (tool call index, fragment, template head, template tail)
    fragments: dict[int, tuple[int, str, bytes, bytes]] = field(default_factory=dict)

    def add(self, unit: bytes, kind: str) -> None:
        self.units.append(unit)
        self.kinds.append(kind)

    def fill(
        self, template: bytes, deltas: list[str], kind: str, *, call: int | None = None
    ) -> None:
        """One unit per delta, spliced into ``template`` (encoded with :data:`HOLE`)."""
        head, tail = template.split(_HOLE_JSON)
        for d in deltas:
            if call is not None:
                self.fragments[len(self.units)] = (call, d, head, tail)
            self.add(head + encode_basestring(d).encode("utf-8") + tail, kind)


def dumps(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def data_unit(doc: Any) -> bytes:
    return b"data: " + dumps(doc) + b"\n\n"


def named_unit(event: str, doc: Any) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + dumps(doc) + b"\n\n"


def splice(head: bytes, text: str, tail: bytes) -> bytes:
    return head + encode_basestring(text).encode("utf-8") + tail
