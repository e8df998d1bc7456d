"""Paced writes from loop timers: a body's healthy stretch of events without a task
wake-up per event.

:func:`write_due` writes frames at their scheduled loop times. What is due at once
(every frame of a burst; the frames a late wake-up finds due) goes out as one write
of up to ``COALESCE_BYTES``; later ones are written by a callback of the loop's
:class:`Pacer`, and the calling task wakes only when the stretch is written, the
transport wants a drain, or the peer went away. Per paced event that saves the
future, the task step and the coroutine frames a sleep and a write would cost.

:class:`Pacer` is one loop timer for every paced stream of a loop: a heap of
``(when, seq, callback)`` tuples (compared in C, where the loop's own heap compares
``TimerHandle`` objects in Python), armed at its earliest entry; when it fires, every
entry due by then runs. Deadline semantics are the loop's: absolute times, never
early, a late wake-up catches up at once, so lateness never accumulates.

Not here: which frames and when (``body.py``), the socket (``connection.py``).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.server.connection import COALESCE_BYTES, Connection, PeerGone

__all__ = ["Pacer", "Stretch", "plan_stretch", "write_due"]

_N_DETAILS = tuple((("n", n),) for n in range(1024))  # shared by every burst's records


@dataclass(frozen=True)
class Stretch:
    """A body's healthy units as frames with their times and timeline details."""

    frames: list[bytes]
    times: list[float]
    after: list[int]  # counted units written once frame k is
    details: list[Any]  # event_sent detail pairs per frame (None: an uncounted insert)
    sent: list[int]  # body bytes written before frame k (k = len: after the last)
    inserts: bool


def plan_stretch(
    units: Sequence[tuple[bytes, bool]],
    counted: int,
    *,
    t0: float,
    interval: float,
    shift: tuple[float, int | None],
    chunked: bool,
    sent: int,
) -> Stretch:
    """Counted unit ``c`` is due at ``t0 + c * interval``, plus ``shift[0]`` per unit from
    ``shift[1]`` on (a ``slow``); an uncounted insert right after the unit before it."""
    delay, slow_from = shift
    paced = interval > 0 or bool(delay)
    frames = [b"%x\r\n%b\r\n" % (len(u), u) if chunked else u for u, _ in units]
    n = len(units)
    if not paced and counted + n < len(_N_DETAILS) and all(k for _, k in units):
        # a burst of counted units (the common unpaced case), built in C-level calls
        sizes = list(itertools.accumulate((len(u) for u, _ in units), initial=sent))
        after = list(range(counted + 1, counted + n + 1))
        return Stretch(
            frames, [0.0] * n, after, list(_N_DETAILS[counted + 1 : counted + 1 + n]), sizes, False
        )
    times, after, details, sizes = [], [], [], [sent]
    at, c = 0.0, counted
    for data, is_counted in units:
        if is_counted:
            at = t0 + c * interval
            if slow_from is not None and c >= slow_from:
                at += delay * (c - slow_from + 1)
            c += 1
            if paced:
                details.append((("n", c), ("scheduled", at)))
            else:
                details.append(_N_DETAILS[c] if c < len(_N_DETAILS) else (("n", c),))
        else:
            details.append(None)
        times.append(at)
        after.append(c)
        sizes.append(sizes[-1] + len(data))
    return Stretch(frames, times, after, details, sizes, len(units) != c - counted)


class Pacer:
    """One loop timer for many deadlines; see the module docstring."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        # weakly: the loop is this pacer's key in _PACERS, which must not keep it alive
        self._loop_ref = weakref.ref(loop)
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._armed_at = float("inf")

    def call_at(self, when: float, callback: Callable[[], None]) -> None:
        """Run ``callback`` once loop time reaches ``when`` (not cancellable: a callback
        whose work is over returns at once)."""
        heapq.heappush(self._heap, (when, next(self._seq), callback))
        if when < self._armed_at:
            self._arm(when)

    def _arm(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        loop = self._loop_ref()
        assert loop is not None  # only a running loop's callbacks get here
        self._timer = loop.call_at(when, self._run)
        self._armed_at = when

    def _run(self) -> None:
        self._timer, self._armed_at = None, float("inf")
        heap, pop = self._heap, heapq.heappop
        # the loop ran this timer at its time; what else is due by now runs with it
        loop = self._loop_ref()
        assert loop is not None
        now = max(loop.time(), heap[0][0] if heap else 0.0)
        try:
            while heap and heap[0][0] <= now:
                pop(heap)[2]()
        finally:  # a callback's error goes to the loop's handler; the others stay armed
            if heap:
                self._arm(heap[0][0])


_PACERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Pacer] = weakref.WeakKeyDictionary()


def pacer() -> Pacer:
    """The running loop's :class:`Pacer`."""
    loop = asyncio.get_running_loop()
    p = _PACERS.get(loop)
    if p is None:
        p = _PACERS[loop] = Pacer(loop)
    return p


async def write_due(
    conn: Connection,
    frames: Sequence[bytes],
    times: Sequence[float],
    on_written: Callable[[int, int], None],
) -> int:
    """Write ``frames[k]`` once loop time reaches ``times[k]`` (non-decreasing);
    ``on_written(k, j)`` follows the write of ``frames[k:j]``. Returns how many were
    written: all, or fewer when ``conn.write_paused`` (drain, then call again); raises
    :class:`PeerGone` when the peer went away first."""
    n = len(frames)
    loop = asyncio.get_running_loop()
    k = _write_frames(conn, frames, times, 0, loop.time(), on_written, conn.write)
    if k == n or conn.write_paused:
        return k
    if conn.gone:
        raise PeerGone("peer went away")
    fut = loop.create_future()
    at = k
    schedule = pacer().call_at

    def tick() -> None:
        nonlocal at
        if fut.done():
            return  # the peer went away meanwhile: this stream's entries are void
        k, now = at, loop.time()
        try:
            if k + 1 < n and times[k + 1] <= now:  # late: catch up in joined writes
                at = _write_frames(conn, frames, times, k, now, on_written, conn.send_now, 1)
            else:  # the usual paced case: this one frame
                conn.send_now(frames[k])
                at = k + 1
                on_written(k, at)
        except PeerGone:
            fut.set_result(False)
            return
        except Exception as exc:  # noqa: BLE001 - raised in the writer's task, not lost here
            fut.set_exception(exc)
            return
        if at == n or conn.write_paused:
            fut.set_result(True)
        else:
            schedule(times[at], tick)

    schedule(times[at], tick)
    conn.watch_gone(fut)
    try:
        await fut
    finally:
        conn.watch_gone(None)
        if not fut.done():
            fut.cancel()  # cancelled task: void the pending entry
    if at < n and (conn.gone or not fut.result()):
        raise PeerGone("peer went away")
    return at


def _write_frames(
    conn: Connection,
    frames: Sequence[bytes],
    times: Sequence[float],
    k: int,
    now: float,
    on_written: Callable[[int, int], None],
    write: Callable[[bytes], None],
    least: int = 0,
) -> int:
    """Write the frames from ``k`` that are due at ``now`` (at least ``least`` of them,
    which the pacer judged due), in writes of up to ``COALESCE_BYTES``; returns the
    index of the first frame not written."""
    n = len(frames)
    while k < n and (least or times[k] <= now):
        least = 0
        j = k + 1
        if j < n and times[j] <= now:
            size = len(frames[k])
            while j < n and size < COALESCE_BYTES and times[j] <= now:
                size += len(frames[j])
                j += 1
        write(frames[k] if j == k + 1 else b"".join(frames[k:j]))
        on_written(k, j)
        k = j
        if conn.write_paused:
            break
    return k
