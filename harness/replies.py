"""Deterministic reply text: the same request always gets the same words.

The server streams these words as content deltas; the runner computes the same list
to tell a complete answer from a prefix of it. The vocabulary mixes ASCII with
multi-byte UTF-8 so that byte-level faults can split a character.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "DEFAULT_TOOL",
    "fragments",
    "reasoning_deltas",
    "render_tool_call",
    "render_tool_calls",
    "reply_deltas",
    "reply_text",
    "seed_for_request",
    "tool_arguments",
]

# fmt: off
_VOCAB = (
    "the", "stream", "keeps", "flowing", "until", "a", "fault", "fires", "and", "every",
    "token", "counts", "café", "naïve", "über", "日本語", "façade", "🙂", "ünïcode", "½",
    "packet", "socket", "deadline", "retry", "answer", "complete", "ζ", "Ω", "–", "résumé",
)
# fmt: on


def seed_for_request(body: dict[str, Any] | None) -> str:
    """A stable seed from what the client asked (messages / input / model), not from
    per-attempt noise, so a retried request is answered with the same text."""
    body = body or {}
    key = {k: body.get(k) for k in ("model", "messages", "input", "instructions", "system")}
    blob = json.dumps(key, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def reply_deltas(seed: str, events: int) -> list[str]:
    """``events`` content deltas; ``"".join`` of them is the full reply."""
    rng = random.Random(seed)
    words = [rng.choice(_VOCAB) for _ in range(events)]
    return [w + (" " if i < events - 1 else ".") for i, w in enumerate(words)]


def reply_text(seed: str, events: int) -> str:
    return "".join(reply_deltas(seed, events))


# --------------------------------------------------------------------------- agent shapes

#: The tool a tool-call reply calls when the request names none: harmless by design
#: (hermes's harness tool records its arguments; nothing else runs it).
DEFAULT_TOOL = "record_note"


def tool_arguments(seed: str, call: int, words: int) -> str:
    """The JSON arguments of tool call number ``call`` (0-based): one path and one
    string with multi-byte characters, so a cut can fall mid-string or mid-UTF-8."""
    rng = random.Random(f"{seed}:tool:{call}")
    text = " ".join(rng.choice(_VOCAB) for _ in range(max(1, words)))
    doc = {"path": f"notes/{rng.choice(_VOCAB)}-{call}.txt", "text": text}
    return json.dumps(doc, ensure_ascii=False)


def fragments(text: str, pieces: int) -> list[str]:
    """``text`` split into ``pieces`` (at most ``len(text)``) non-empty runs, in order."""
    pieces = max(1, min(pieces, len(text)))
    step, extra = divmod(len(text), pieces)
    out, pos = [], 0
    for i in range(pieces):
        end = pos + step + (1 if i < extra else 0)
        out.append(text[pos:end])
        pos = end
    return out


def reasoning_deltas(seed: str, events: int) -> list[str]:
    """``events`` reasoning (thinking / summary) deltas; never part of the reply text."""
    rng = random.Random(f"{seed}:reasoning")
    return [f"thinking about {rng.choice(_VOCAB)}; " for _ in range(events)]


def render_tool_call(name: str, arguments: str) -> str:
    """A tool call as comparable text: what targets report and the server expects, so a
    call with cut arguments reads as a prefix of the full one (truncated_as_complete)."""
    return f"<tool_call {name}>{arguments}"


def render_tool_calls(calls: Mapping[Any, Sequence[str]], *, by_key: bool = True) -> str:
    """Streamed tool calls as comparable text: ``calls`` maps a call's key (its index in
    the stream) to ``[name, argument fragments...]``; each call is rendered with its
    fragments joined, in key order -- or, with ``by_key=False``, in the mapping's own
    (arrival) order, for keys that are ids rather than positions."""
    entries = (c for _, c in sorted(calls.items())) if by_key else calls.values()
    return "".join(render_tool_call(c[0], "".join(c[1:])) for c in entries)
