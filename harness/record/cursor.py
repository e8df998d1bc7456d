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
        self._pending_cr = False
        self._partial = b""

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
            first = self.events
            ends = self._event_ends(chunk)
            n = self.phase.n or 0
            for i, end in enumerate(ends):
                if first + i + 1 == n:
                    cut = end
                    break
        else:
            self._hand_over()
            k = sum(isinstance(item, Event) for item in self._decoder.feed(chunk))
            self.events += k
            ends = [len(chunk)] * k  # positions only matter while a cut is pending
        if cut is not None:
            self.fired = True
        return Fed(tuple(ends), cut)

    def _event_ends(self, chunk: bytes) -> list[int]:
        """Split lines here (exact positions), and feed the decoder one whole line at a
        time, so each dispatch is seen at the byte that caused it. A CR that ends a chunk
        is decided by the next chunk's first byte (LF: one CRLF; else a line end)."""
        ends = []
        pos = 0
        if self._pending_cr and chunk:
            self._pending_cr = False
            pos = 1 if chunk[:1] == b"\n" else 0
            if self._line():
                ends.append(pos)
        while pos < len(chunk):
            m = _LINE_END.search(chunk, pos)
            if m is None:
                self._partial += chunk[pos:]
                break
            self._partial += chunk[pos : m.start()]
            if m.group() == b"\r" and m.end() == len(chunk):
                self._pending_cr = True
                break
            if self._line():
                ends.append(m.end())
            pos = m.end()
        return ends

    def _line(self) -> bool:
        """Feed the line collected so far; True if it dispatched an event."""
        line, self._partial = self._partial, b""
        if any(isinstance(item, Event) for item in self._decoder.feed(line + b"\n")):
            self.events += 1
            return True
        return False

    def _hand_over(self) -> None:
        # from line mode to whole chunks: the decoder keeps the unfinished line itself
        if self._partial or self._pending_cr:
            self._decoder.feed(self._partial + (b"\r" if self._pending_cr else b""))
            self._partial, self._pending_cr = b"", False
