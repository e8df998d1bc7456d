"""Helpers for payload faults: find a counted unit, read and rewrite one SSE event.

A unit is one SSE event as the server encodes it (optional ``event:`` line, one
``data:`` line, blank line; ``\\n`` or ``\\r\\n``). These helpers run once per request,
before the first byte, never per event.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["Unit", "event_name", "index_of", "load", "rewrite"]

Unit = tuple[bytes, bool]  # (bytes, counted)


def index_of(units: list[Unit], n: int) -> int:
    """List index of counted unit ``n`` (0-based); ``len(units)`` when there are fewer."""
    seen = 0
    for i, (_data, counted) in enumerate(units):
        if counted:
            if seen == n:
                return i
            seen += 1
    return len(units)


def _lines(unit: bytes) -> list[bytes]:
    return unit.replace(b"\r\n", b"\n").split(b"\n")


def event_name(unit: bytes) -> str | None:
    """The unit's ``type``: its ``event:`` line, else the data's ``"type"``, else the
    data itself for a bare marker such as ``[DONE]``."""
    for line in _lines(unit):
        if line.startswith(b"event:"):
            return line[6:].strip().decode("utf-8", "replace")
    doc = load(unit)
    if isinstance(doc, dict) and isinstance(doc.get("type"), str):
        return doc["type"]
    for line in _lines(unit):
        if line.startswith(b"data:"):
            return line[5:].strip().decode("utf-8", "replace")
    return None


def load(unit: bytes) -> Any:
    """The JSON of the unit's data line (or of a whole non-streamed document); None."""
    for line in _lines(unit):
        if line.startswith(b"data:"):
            try:
                return json.loads(line[5:])
            except ValueError:
                return None
    try:
        return json.loads(unit)
    except ValueError:
        return None


def rewrite(unit: bytes, doc: Any) -> bytes:
    """``unit`` with its data line (or whole document) replaced by ``doc``, keeping the
    event line and the line ending."""
    data = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    nl = b"\r\n" if b"\r\n" in unit else b"\n"
    if not any(line.startswith(b"data:") for line in _lines(unit)):
        return data
    out = [b"data: " + data if line.startswith(b"data:") else line for line in _lines(unit)]
    return nl.join(out)


def drop_key(doc: Any, key: str) -> bool:
    """Remove the first ``key`` with a value (not null) found depth-first in ``doc``;
    True if one was removed."""
    if isinstance(doc, dict):
        if doc.get(key) is not None:
            del doc[key]
            return True
        return any(drop_key(v, key) for v in doc.values())
    if isinstance(doc, list):
        return any(drop_key(v, key) for v in doc)
    return False
