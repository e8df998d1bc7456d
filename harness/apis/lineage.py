"""Where one LLM request sits in its conversation: a retry, a continuation, or new.

Pure and sans-IO: the per-API readers (``harness.apis.<api>``: ``conversation``) turn a
request body into a :class:`Conversation` -- its turns in order (system, user,
assistant, tool calls, tool results, each the item as sent, cache marks dropped) and
the tools it offers --
and :func:`place` compares it with the requests before it on the same server:

* **retry**: an earlier request with the same conversation state (turns and tools
  equal; everything else -- model, stream options, metadata, idempotency keys in
  headers -- ignored): the same model call asked again.
* **continuation**: a new model call whose turns extend an earlier request's turns
  (its reply and tool results in any API's form, or a text observation), or a
  Responses request whose ``previous_response_id`` names an earlier request's reply.
  An agent's closing call may swap the system turns for its own (smolagents'
  ``provide_final_answer``) and carry the rest: still a continuation, the system turns
  named as ``replaced``.
* **new**: neither (a new conversation).

The judge counts per model call from this (``harness.judge``): every request but a
retry begins one. The evidence -- which earlier request, what was appended -- goes to
the timeline (``request_shape``) and the request's record.

Not here: reading bodies (each API's module), judging (``harness.judge``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["KINDS", "Conversation", "Lineage", "Turn", "place", "plain", "said"]

#: Lineage kinds, in the order :func:`place` tries them.
KINDS = ("retry", "continuation", "new")
#: Keys that mark a turn for a provider's cache, not part of what was said: a client
#: moves them to its newest turn on every call.
_NOISE = frozenset({"cache_control"})


@dataclass(frozen=True)
class Turn:
    """One item of a conversation: who (``role``), what (``kind``: text, tool_call,
    tool_result, reasoning, other) and the item itself (:func:`plain`; compared by
    value, so key order does not matter and nothing is serialised: a prompt can be
    megabytes)."""

    role: str
    kind: str
    key: Any

    @property
    def label(self) -> str:
        return f"{self.role}:{self.kind}"


@dataclass(frozen=True)
class Conversation:
    """The conversation state a request carries."""

    turns: tuple[Turn, ...]
    #: the tools offered (:func:`plain`; None when none)
    tools: Any = None
    tool_names: tuple[str, ...] = ()
    #: the id the server's reply carries (Responses: ``resp_<seed>``), "" when none
    reply_id: str = ""
    #: the earlier reply this request continues (Responses ``previous_response_id``)
    previous: str | None = None

    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(t.role for t in self.turns)

    def same_state(self, other: Conversation) -> bool:
        return (self.turns, self.tools, self.previous) == (other.turns, other.tools, other.previous)


@dataclass(frozen=True)
class Lineage:
    """Where a request sits: ``kind`` (:data:`KINDS`), the earlier request it retries or
    continues (``of``, its server-wide index), the request that began its model call
    (``call``: itself unless a retry), the turns it appended (``role:kind`` labels) and
    the earlier request's turns it replaced (its leading system turns: ``role:kind``)."""

    kind: str
    call: int
    of: int | None = None
    appended: tuple[str, ...] = field(default=())
    replaced: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "of": self.of,
            "call": self.call,
            "appended": list(self.appended),
            "replaced": list(self.replaced),
        }


def plain(item: Any) -> Any:
    """``item`` with cache marks dropped at every level (the strings are shared, not
    copied); equal items compare equal whatever their key order."""
    if isinstance(item, Mapping):
        return {str(k): plain(v) for k, v in item.items() if k not in _NOISE}
    if isinstance(item, list | tuple):
        return [plain(v) for v in item]
    return item


def said(item: Any) -> str:
    """The text an item says, in any API's form: a string, an item's ``text``, or its
    ``content`` (a string, or parts each with their own text: chat content parts,
    Messages text blocks, Responses ``output_text``); "" where it says none."""
    if isinstance(item, str):
        return item
    if isinstance(item, Mapping):
        text = item.get("text")
        return text if isinstance(text, str) else said(item.get("content"))
    if isinstance(item, list | tuple):
        return "".join(said(part) for part in item)
    return ""


def place(
    index: int, conv: Conversation, earlier: Sequence[tuple[int, Conversation, int]]
) -> Lineage:
    """The lineage of request ``index`` carrying ``conv``, given the requests before it
    as (index, conversation, call) in the server's order."""
    for idx, prev, call in reversed(earlier):
        if conv.same_state(prev):
            return Lineage("retry", call=call, of=idx)
    if conv.previous:
        for idx, prev, _call in reversed(earlier):
            if prev.reply_id and prev.reply_id == conv.previous:
                return Lineage(
                    "continuation", call=index, of=idx, appended=tuple(t.label for t in conv.turns)
                )
    best: tuple[int, int] | None = None  # (prefix length, index)
    for idx, prev, _call in earlier:
        n = len(prev.turns)
        if 0 < n < len(conv.turns) and conv.turns[:n] == prev.turns:
            if best is None or n >= best[0]:
                best = (n, idx)
    if best is not None:
        n, idx = best
        return Lineage(
            "continuation", call=index, of=idx, appended=tuple(t.label for t in conv.turns[n:])
        )
    return _swapped_system(index, conv, earlier) or Lineage("new", call=index)


def _swapped_system(
    index: int, conv: Conversation, earlier: Sequence[tuple[int, Conversation, int]]
) -> Lineage | None:
    """A continuation whose leading system turns differ from the earlier request's but
    whose other turns extend that request's (at least one of them, a user's, carried):
    the longest such earlier request, or None."""
    head, rest = _split_system(conv.turns)
    best: tuple[int, int, tuple[Turn, ...]] | None = None
    for idx, prev, _call in earlier:
        prev_head, prev_rest = _split_system(prev.turns)
        n = len(prev_rest)
        if not prev_head or prev_head == head or not 0 < n < len(rest):
            continue
        if rest[:n] == prev_rest and (best is None or n >= best[0]):
            best = (n, idx, prev_head)
    if best is None:
        return None
    n, idx, prev_head = best
    return Lineage(
        "continuation",
        call=index,
        of=idx,
        appended=tuple(t.label for t in rest[n:]),
        replaced=tuple(t.label for t in prev_head),
    )


def _split_system(turns: tuple[Turn, ...]) -> tuple[tuple[Turn, ...], tuple[Turn, ...]]:
    """The leading system (or developer) turns, and the rest."""
    n = 0
    while n < len(turns) and turns[n].role in ("system", "developer"):
        n += 1
    return turns[:n], turns[n:]
