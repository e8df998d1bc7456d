"""The fault server's record of what happened, readable from any thread.

One :class:`Timeline` per server holds :class:`TimelineEvent` entries (what the server
did or saw, stamped with ``time.monotonic()``) and one :class:`RequestRecord` per
request answered. The asyncio loop thread appends; tests and the runner read from
their own threads and block in :meth:`Timeline.wait_for` on a condition variable
(no polling).

``time.monotonic()`` is CLOCK_MONOTONIC on Linux, so stamps compare across processes
on the same machine (the runner subtracts a client-side error time from a fault time).

This module only records; it does not decide anything about faults or wire bytes.

Timeline kinds: ``accepted`` (detail: ``port``, the client's), ``request_head``
(detail: ``method``, ``path``, ``attempt``, ``port``), ``request_read``, ``status_sent``,
``headers_sent``,
``event_sent`` (detail: ``n``, and ``scheduled`` when paced), ``comment_sent``,
``fault`` (detail: ``action``, ``phase``), ``fault_void`` (detail: ``fault``, ``reason``:
a matched fault with nothing to act on in its reply, sent healthy), ``upload_stalled``, ``upload_resumed``,
``response_done``, ``peer_closed``, ``peer_reset``, ``closed``, ``bad_request``,
``write_stopped`` (a write found the transport already closing after a failed send).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["RequestRecord", "Timeline", "TimelineEvent"]

_Detail = tuple[tuple[str, Any], ...]
_Raw = tuple[float, int, "int | None", str, _Detail]
#: The sixth field of a :meth:`Timeline.record_many` entry (its fifth holds the details).
_MANY = "many"
_CHUNK = 4096


@dataclass(frozen=True, slots=True)
class TimelineEvent:
    """One thing the server did or saw. ``request`` is the server-wide request index
    (None for connection-level events such as ``accepted``)."""

    t: float
    conn: int
    request: int | None
    kind: str
    detail: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class RequestRecord:
    """One request the server answered (control-API requests are not recorded).

    ``attempt`` counts requests to the same path since the script was loaded;
    ``connection`` is the accepted-connection number; ``fault`` is ``str(Fault)`` of
    the matching rule or None; ``expected_text`` is the full healthy reply text;
    ``t_start`` is when the request's head reached the kernel (``time.monotonic()``,
    ``harness.tcpinfo``), not when the server's loop got to it.
    """

    index: int
    path: str
    api: str
    stream: bool
    attempt: int
    connection: int
    request_on_connection: int
    fault: str | None
    expected_text: str
    t_start: float
    body_bytes: int = 0
    lineage: dict[str, Any] | None = None
    #: the answer tool call's arguments where the reply went as one (``ReplyPlan``)
    answer_arguments: str | None = None
    conversation: Any = dataclasses.field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        del out["conversation"]
        return out


class Timeline:
    """Thread-safe, append-only log of events and requests; cleared by :meth:`reset`."""

    def __init__(self) -> None:
        # record() takes the bare lock (a C call); readers wait on a condition over it.
        # (``with condition`` is two Python-level calls, a measurable share of the
        # server's CPU per streamed event.)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        # Events are exact tuples of plain values (detail as key/value pairs), kept in
        # full chunks that are themselves exact tuples: the cyclic GC stops tracking
        # all of these, so a timeline of 10^5..10^6 events adds nothing to a full
        # collection. (One tracked object per event, or one long list, made full
        # collections cost 15-60 ms of loop time, visible as late paced events.)
        self._chunks: list[tuple[_Raw, ...]] = []
        self._tail: list[_Raw] = []
        self._requests: list[RequestRecord] = []
        self._waiting = 0
        # watch(): kinds whose recording calls a callback (the posture sampler's prompt)
        self._watched: frozenset[str] = frozenset()
        self._watcher: Callable[[int, str], None] | None = None

    def watch(self, kinds: Iterable[str], callback: Callable[[int, str], None] | None) -> None:
        """Call ``callback(conn, kind)`` for every event of ``kinds`` recorded from now
        on, on the recording thread (so it must return at once); None: stop."""
        self._watcher = callback
        self._watched = frozenset(kinds) if callback is not None else frozenset()

    def record(self, conn: int, request: int | None, kind: str, **detail: Any) -> None:
        """Record an event now (the server's hot path: one call, one lock)."""
        raw = (time.monotonic(), conn, request, kind, tuple(detail.items()))
        with self._lock:
            tail = self._tail
            tail.append(raw)
            if len(tail) >= _CHUNK:
                self._chunks.append(tuple(tail))
                self._tail = []
            if self._waiting:  # notify_all costs a microsecond per event even unwatched
                self._cond.notify_all()
        if kind in self._watched and self._watcher is not None:
            self._watcher(conn, kind)

    def record_many(
        self, conn: int, request: int | None, kind: str, details: Sequence[_Detail]
    ) -> None:
        """Record several events of ``kind`` now, one per detail (key/value pairs): the
        frames of one paced write. Stored as one entry, expanded when read; one detail
        (a paced event's write, the common case) as a plain event, one tuple less."""
        if len(details) == 1:
            entry: tuple[Any, ...] = (time.monotonic(), conn, request, kind, details[0])
        else:
            entry = (time.monotonic(), conn, request, kind, tuple(details), _MANY)
        with self._lock:
            tail = self._tail
            tail.append(entry)  # type: ignore[arg-type]
            if len(tail) >= _CHUNK:
                self._chunks.append(tuple(tail))
                self._tail = []
            if self._waiting:
                self._cond.notify_all()

    def record_at(
        self, t: float, conn: int, request: int | None, kind: str, detail: dict[str, Any]
    ) -> None:
        """Record an event observed earlier at monotonic time ``t``."""
        raw = (t, conn, request, kind, tuple(detail.items()))
        with self._lock:
            self._tail.append(raw)
            if len(self._tail) >= _CHUNK:
                self._chunks.append(tuple(self._tail))
                self._tail = []
            if self._waiting:
                self._cond.notify_all()
        if kind in self._watched and self._watcher is not None:
            self._watcher(conn, kind)

    def add_request(self, record: RequestRecord) -> None:
        with self._cond:
            self._requests.append(record)
            self._cond.notify_all()

    def events(self) -> list[TimelineEvent]:
        with self._cond:
            raws = self._raw()
        return [_event(raw) for raw in raws]

    def requests(self) -> list[RequestRecord]:
        with self._cond:
            return list(self._requests)

    def reset(self) -> None:
        with self._cond:
            self._chunks = []
            self._tail = []
            self._requests.clear()
            self._cond.notify_all()

    def _raw(self) -> list[_Raw]:
        out: list[_Raw] = []
        for raws in [*self._chunks, self._tail]:
            for raw in raws:
                if len(raw) == 5:
                    out.append(raw)
                else:  # a record_many entry: one event per detail, the same stamp
                    t, conn, request, kind, details = raw[:5]
                    out += [(t, conn, request, kind, d) for d in details]  # type: ignore[union-attr]
        return out

    def wait_for(self, kind: str, *, timeout: float, count: int = 1) -> TimelineEvent:
        """Block until ``count`` events of ``kind`` were recorded; return the ``count``-th.

        Raises :class:`TimeoutError` naming what was seen when ``timeout`` seconds pass.
        """
        if count < 1:
            raise ValueError(f"count: {count!r} is not valid; allowed: a whole number >= 1")
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                hits = [raw for raw in self._raw() if raw[3] == kind]
                if len(hits) >= count:
                    return _event(hits[count - 1])
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    kinds = sorted({raw[3] for raw in self._raw()})
                    raise TimeoutError(
                        f"timeline: {len(hits)} of {count} {kind!r} events after {timeout:.3g} s; seen kinds: {kinds}"
                    )
                self._waiting += 1
                try:
                    self._cond.wait(remaining)
                finally:
                    self._waiting -= 1


def _event(raw: _Raw) -> TimelineEvent:
    t, conn, request, kind, detail = raw
    return TimelineEvent(t, conn, request, kind, dict(detail))
