"""The guard's per-chunk fast path: one whole SSE event recognised with a few bytes calls.

A healthy stream's body chunk is almost always exactly one whole event in the shape every
provider sends -- ``data: ...`` (chat), ``event: NAME`` + ``data: ...`` (Responses,
Messages) -- or one ``:`` comment, each followed by its blank line. For such a chunk,
when the full decoder (:class:`harness.sse.SSEDecoder`) holds nothing, :func:`one_event`'s
answer is what the decoder and the marker rules (:func:`harness.client.markers.kind_of`)
answer for it: ``"content"``, ``"comment"`` (keep-alive) or ``"terminal"``. It costs a
few ``bytes`` method calls instead of decoding text and building an event object, which
was most of the guard's cost per event.

Anything else -- several events or part of one in a chunk, ``id``/``retry`` fields, two
``data`` lines, chat's ``data:`` without its space, an event without a name on an API whose
markers are names -- answers None: the caller asks the full decoder. Line ends are the
decoder's (``\\n``, ``\\r\\n``, ``\\r``: ``bytes.splitlines`` splits on exactly those), and a
chunk must end in ``\\n`` (a trailing ``\\r`` may be half of a CRLF). ``tests/guard/test_scan.py``
holds both paths to the same answers.

Not here: what the answers mean for deadlines (``watch.py``), sockets, threads.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from harness.apis import api_for
from harness.client.markers import DONE

__all__ = ["one_event"]

_COLON = 0x3A
_LF = 0x0A
_CHAT_DATA = b"data: "
_CHAT_DONE = _CHAT_DATA + DONE.encode()


@functools.cache
def one_event(api: str) -> Callable[[bytes], str | None]:
    """The fast recogniser for ``api`` (``chat``, ``responses``, ``messages``): by the
    data line when the API's marker is one (chat), else by the event's name."""
    spec = api_for(api)
    if spec.marker_in_data:
        return _chat
    return _named(
        frozenset(n.encode() for n in spec.terminal_events),
        frozenset(n.encode() for n in spec.keepalive_events),
    )


def _chat(chunk: bytes) -> str | None:
    """chat: the marker is the data itself (any data starting with ``[DONE]``)."""
    if not chunk or chunk[-1] != _LF:
        return None
    lines = chunk.splitlines()
    if len(lines) != 2 or lines[1]:
        return None
    line = lines[0]
    if line.startswith(_CHAT_DATA):
        return "terminal" if line.startswith(_CHAT_DONE) else "content"
    return "comment" if line and line[0] == _COLON else None


def _named(
    terminal: frozenset[bytes], keepalive: frozenset[bytes]
) -> Callable[[bytes], str | None]:
    """Responses, Messages: the marker is the event's name (its ``event:`` line)."""

    def recognise(chunk: bytes) -> str | None:
        if not chunk or chunk[-1] != _LF:
            return None
        lines = chunk.splitlines()
        if len(lines) == 2:  # one line and its blank line: only a comment is decided here
            first = lines[0]
            return "comment" if not lines[1] and first and first[0] == _COLON else None
        if len(lines) != 3 or lines[2]:
            return None
        first = lines[0]
        if not first.startswith(b"event: ") or not lines[1].startswith(b"data:"):
            return None
        name = first[7:]
        if not name:
            return None  # an empty name: the JSON type decides (the decoder's path)
        if name in terminal:
            return "terminal"
        return "comment" if name in keepalive else "content"

    return recognise
