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

The rules themselves (which events end or keep alive each API's stream) are each API's
own (``harness.apis``: :meth:`~harness.apis.base.Api.kind`); this module applies them
to decoded items.

Not here: collecting text or decoding payloads (``streams.py``), deadlines.
"""

from __future__ import annotations

from harness.apis import api_for
from harness.apis.chat import DONE, is_done
from harness.sse import Comment, Event

__all__ = ["DONE", "is_done", "kind_of"]


def kind_of(api: str, item: Event | Comment) -> str:
    """``"comment"`` (keep-alive), ``"terminal"`` (the answer's end marker) or
    ``"content"`` (anything else: progress) for one decoded item of an ``api`` stream."""
    if isinstance(item, Comment):
        return "comment"
    return api_for(api).kind(item.event, item.data)
