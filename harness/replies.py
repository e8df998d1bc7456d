"""Deterministic reply text: the same request always gets the same words.

The server streams these words as content deltas; the runner computes the same list
to tell a complete answer from a prefix of it. The vocabulary mixes ASCII with
multi-byte UTF-8 so that byte-level faults can split a character.
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

__all__ = ["reply_deltas", "reply_text", "seed_for_request"]

_VOCAB = (
    "the", "stream", "keeps", "flowing", "until", "a", "fault", "fires", "and", "every",
    "token", "counts", "café", "naïve", "über", "日本語", "façade", "🙂", "ünïcode", "½",
    "packet", "socket", "deadline", "retry", "answer", "complete", "ζ", "Ω", "–", "résumé",
)


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
