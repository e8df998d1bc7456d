"""What one decoded SSE item means for progress and completeness, per API: pure rules.

One place for the rules both faces of the stack apply -- the reference client's stream
reading and the ``harness.guard`` transport, which watches a body it does not parse::

    api        keep-alive (never progress)            terminal marker (the answer is complete)
    chat       ``:`` comments                          ``data: [DONE]`` (any data
                                                       starting with it: :func:`is_done`)
    responses  ``:`` comments                          response.completed, response.incomplete
    messages   ``:`` comments, ``ping`` events         message_stop

:func:`kind_of` answers ``"comment"``, ``"content"`` or ``"terminal"`` for one item. It
reads the SSE ``event:`` field when the server sent one (real OpenAI Responses and
Anthropic streams always do) and parses the JSON ``type`` only when it is missing, so
the guard's per-event cost stays a few string comparisons.

The tables (which events end or keep alive each API's stream) are the API registry's
(``harness.vocab.apis``); this module holds the rules that read them.

Not here: collecting text or decoding payloads (``streams.py``), deadlines.
"""

from __future__ import annotations

import json

from harness.sse import Comment, Event
from harness.vocab.apis import KEEPALIVE_EVENTS, TERMINAL_EVENTS, TERMINAL_MARKERS

__all__ = ["DONE", "KEEPALIVE_EVENTS", "TERMINAL_EVENTS", "TERMINAL_MARKERS", "is_done", "kind_of"]

#: The chat stream's end sentinel (and what some Responses servers send after the end).
DONE = "[DONE]"


def is_done(data: str) -> bool:
    """The ``[DONE]`` sentinel: any data that *starts* with it, as the openai SDK's
    reader has it (``sse.data.startswith("[DONE]")``), so ``[DONE] `` ends the stream
    and `` [DONE]`` (two spaces after ``data:``) does not. The one rule for the reader
    and the guard."""
    return data.startswith(DONE)


def kind_of(api: str, item: Event | Comment) -> str:
    """``"comment"`` (keep-alive), ``"terminal"`` (the answer's end marker) or
    ``"content"`` (anything else: progress) for one decoded item of an ``api`` stream."""
    if isinstance(item, Comment):
        return "comment"
    if api == "chat":
        return "terminal" if is_done(item.data) else "content"
    name = item.event if item.event else _json_type(item.data)
    if name in TERMINAL_EVENTS[api]:
        return "terminal"
    if name in KEEPALIVE_EVENTS[api]:
        return "comment"
    return "content"


def _json_type(data: str) -> str:
    """The ``type`` of a JSON event payload; ``""`` when it has none or is not JSON (a
    malformed event is the SDK's or the reader's to report, not a marker)."""
    try:
        doc = json.loads(data)
    except ValueError:
        return ""
    return str(doc.get("type") or "") if isinstance(doc, dict) else ""
