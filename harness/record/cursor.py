"""Where a body fault fires in a stream of byte chunks: ``event:N`` and ``bytes:N``.

A :class:`StreamCursor` watches a response body pass chunk by chunk, as a live
upstream delivers it or as a cassette replays it, and counts body bytes and completed
SSE events with the project's one decoder (:class:`harness.sse.SSEDecoder`): an event
completes at the blank line that dispatches it; comments are never counted.

:meth:`StreamCursor.feed` returns, for one chunk, the offsets inside it where events
completed and, while the fault has not fired, the offset where it must fire:

* ``event:N``: right after the bytes that complete the N-th event;
* ``bytes:N``: right after N body bytes (inside a chunk, an event, or a UTF-8 sequence).

``event:0`` / ``bytes:0`` fire before any body byte (:attr:`fires_at_start`). A
position past the end of the stream fires at the end, before the body's terminator
(as the fault server does).

Not here: what the fault does (``writer.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.faults import Phase
from harness.sse import Event, SSEDecoder

__all__ = ["Fed", "StreamCursor"]

_LINE_END = re.compile(rb"\r\n|\r|\n")


@dataclass(frozen=True)
class Fed:
    """What one chunk did: offsets (in the chunk) where events completed, and the
    offset where the fault fires (None: not in this chunk)."""

    event_ends: tuple[int, ...]
    cut: int | None


class StreamCursor:
    """Counts bytes and SSE events of one body; see the module docstring."""

    def __init__(self, phase: Phase | None = None) -> None:
        self.phase = phase if phase is not None and phase.in_body else None
        self.bytes = 0
        self.events = 0
        self.fired = self.phase is None
        self._decoder = SSEDecoder()

    @property
    def fires_at_start(self) -> bool:
        return self.phase is not None and self.phase.n == 0

    def feed(self, chunk: bytes) -> Fed:
        """Account for ``chunk``; see :class:`Fed`. Marks the fault fired when it cuts here."""
        before_bytes = self.bytes
        self.bytes += len(chunk)
        cut = None
        if self.phase is not None and not self.fired and self.phase.kind == "bytes":
            n = self.phase.n or 0
            if before_bytes <= n <= self.bytes:
                cut = n - before_bytes
        if self.phase is not None and not self.fired and self.phase.kind == "event":
            ends = self._event_ends(chunk)
            n = self.phase.n or 0
            first = self.events - len(ends)
            for i, end in enumerate(ends):
                if first + i + 1 == n:
                    cut = end
                    break
        else:
            # no pending event cut: one feed per chunk, positions only roughly needed
            k = sum(isinstance(item, Event) for item in self._decoder.feed(chunk))
            self.events += k
            ends = (len(chunk),) * k
        if cut is not None:
            self.fired = True
        return Fed(tuple(ends), cut)

    def _event_ends(self, chunk: bytes) -> list[int]:
        ends = []
        pos = 0
        for m in _LINE_END.finditer(chunk):
            # feed up to the end of each line: a line dispatches at most one event
            items = self._decoder.feed(chunk[pos : m.end()])
            pos = m.end()
            if any(isinstance(item, Event) for item in items):
                ends.append(pos)
                self.events += 1
        if pos < len(chunk):
            items = self._decoder.feed(chunk[pos:])
            # a CR held back as half of CRLF is dispatched here by a later chunk
            if any(isinstance(item, Event) for item in items):
                ends.append(len(chunk))
                self.events += 1
        return ends
