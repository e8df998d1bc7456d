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
entry due within ``PACE_QUANTUM_S`` of then runs. Deadlines are absolute times: a
late wake-up catches up at once, so lateness never accumulates; a frame is written
at most ``PACE_QUANTUM_S`` before its time. That bound is what lets streams share a
wake-up: C paced streams at staggered phases have an event due every interval / C
(0.2 ms at 100 streams every 20 ms), and a loop wake-up (epoll_wait, the loop's
timer handle, a pass of its run loop) per event or two is a large share of a paced
event's CPU; with the quantum one wake-up writes every frame due within it.

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

__all__ = ["PACE_QUANTUM_S", "Pacer", "Stretch", "plan_stretch", "write_due"]

#: How early a paced frame may be written, so that one loop wake-up writes every
#: frame due within it (see the module docstring). A wake-up from idle costs about
#: 40 µs of CPU on the 2-core VM the bench runs on (an epoll_wait that sleeps, vs
#: 8 µs for a send()), so this bounds the pacer's wake-ups to 1 / quantum a second
#: whatever the number of streams. 2 ms: a tenth of the bench's 20 ms interval
#: (catalog intervals are 1-5 s before time scaling); |actual - scheduled| stays
#: within -2 ms .. +1 ms (epoll_wait takes whole milliseconds, rounded up, so a
#: wake-up is up to 1 ms late anyway), under the bench's 5 ms timing p99 target.
#: Measured at 100 streams every 20 ms: 0 ms -> 4.6 frames per wake-up, 1 ms ->
#: 10, 2 ms -> 16; CPU per event -10% at 2 ms.
PACE_QUANTUM_S = 0.002

_IDLE = float("-inf")  # Pacer.horizon between runs
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
            if paced:  # ("n", c) shared where it can be: one tracked tuple less per frame
                n_pair = _N_DETAILS[c][0] if c < len(_N_DETAILS) else ("n", c)
                details.append((n_pair, ("scheduled", at)))
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

    def __init__(self, loop: asyncio.AbstractEventLoop, quantum: float = PACE_QUANTUM_S) -> None:
        self.quantum = quantum
        #: while a run is under way: the time up to which it writes (now + quantum)
        self.horizon = _IDLE
        # weakly: the loop is this pacer's key in _PACERS, which must not keep it alive
        self._loop_ref = weakref.ref(loop)
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._armed_at = float("inf")

    def call_at(self, when: float, callback: Callable[[], None]) -> None:
        """Run ``callback`` once loop time reaches ``when`` minus the quantum (not
        cancellable: a callback whose work is over returns at once)."""
        heapq.heappush(self._heap, (when, next(self._seq), callback))
        if when < self._armed_at and self.horizon == _IDLE:  # a run arms once, at its end
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
        # the loop ran this timer at its time; what else is due within the quantum runs
        # with it (and what is due by then is armed no sooner than a quantum from now)
        loop = self._loop_ref()
        assert loop is not None
        horizon = max(loop.time() + self.quantum, heap[0][0] if heap else 0.0)
        self.horizon = horizon
        try:
            while heap and heap[0][0] <= horizon:
                pop(heap)[2]()
        finally:  # a callback's error goes to the loop's handler; the others stay armed
            self.horizon = _IDLE
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
    conn: Connection, plan: Stretch, record: Callable[[Sequence[Any]], None]
) -> int:
    """Write ``plan.frames[k]`` once loop time reaches ``plan.times[k]`` (non-decreasing;
    within the pacer's quantum); each write is followed by ``record(details)``, the
    frames' timeline details (inserts' ``None`` left out; nothing when none is left).
    Returns how many frames were written: all, or fewer when ``conn.write_paused``
    (drain, then call again); raises :class:`PeerGone` when the peer went away first."""
    frames, times, details = plan.frames, plan.times, plan.details
    n = len(frames)
    loop = asyncio.get_running_loop()
    k = _write_frames(conn, plan, 0, loop.time(), record, conn.write)
    if k == n or conn.write_paused:
        return k
    if conn.gone:
        raise PeerGone("peer went away")
    fut = loop.create_future()
    at = k
    p = pacer()
    schedule = p.call_at

    # The usual paced case, once per event: one frame, one send, one timeline record,
    # one heap entry -- no list, slice or extra call beyond those.
    def tick() -> None:
        nonlocal at
        if fut.done():
            return  # the peer went away meanwhile: this stream's entries are void
        k, horizon = at, p.horizon  # due within the pacer's quantum counts as due
        try:
            if k + 1 < n and times[k + 1] <= horizon:  # late: catch up in joined writes
                at = _write_frames(conn, plan, k, horizon, record, conn.send_now, 1)
            else:
                conn.send_now(frames[k])
                at = k + 1
                d = details[k]
                if d is not None:
                    record((d,))
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
    plan: Stretch,
    k: int,
    now: float,
    record: Callable[[Sequence[Any]], None],
    write: Callable[[bytes], None],
    least: int = 0,
) -> int:
    """Write the frames from ``k`` that are due at ``now`` (at least ``least`` of them,
    which the pacer judged due), in writes of up to ``COALESCE_BYTES``; returns the
    index of the first frame not written."""
    frames, times = plan.frames, plan.times
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
        batch = plan.details[k:j]
        if plan.inserts:
            batch = [d for d in batch if d is not None]
        if batch:
            record(batch)
        k = j
        if conn.write_paused:
            break
    return k
