"""Holds: points where a reply body waits until the runner says a network fault is in place.

A scenario's network fault fires at a point of the server's timeline (``at =
"event:3"``: a toxic added over Toxiproxy's HTTP API, a relay's mode switch, a kernel
cut). The runner sees the point and then fires the fault, which takes a few
milliseconds -- tens on a loaded machine -- while the body goes on writing: at a fast
pace the whole rest of the stream can pass before the fault lands, and the case
measures a healthy stream instead of the scripted one (the outcome then depends on the
load). A hold closes that race: before the call, the runner holds the body at the
point (:meth:`Holds.add`); the first body that has written its N-th counted unit waits
there until the runner has fired the fault and released the hold, so the fault lands
at the point the scenario names. A hold is one-shot, and bounded (``HOLD_MAX_S``): a
runner that never releases it costs the case that long, never a hang.

A hold at 0 stops a body after its head, before its first unit: a fault at the first
accept, request or head is in place before the reply goes on, and the runner holds the
first byte of a reply until it has read the client's sockets (``harness.lifecycle``: a
program that lives milliseconds would otherwise be gone before its posture is read).

The timeline shows it: ``held`` (n) where the body stopped, ``released`` (n,
``waited_s``) when it went on.

Not here: when the runner fires (``harness.netem.backends``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable

__all__ = ["HOLD_MAX_S", "Hold", "Holds", "stop_before_hold", "wait_if_held"]

#: The longest a body waits at a hold (real seconds): far above a fault's set-up time
#: (a Toxiproxy API call, a relay mode switch), far below any case's ceiling.
HOLD_MAX_S = 5.0


class Hold:
    """One point (after ``n`` counted units) and whether the runner released it."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._released = threading.Event()
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    @property
    def released(self) -> bool:
        return self._released.is_set()

    def release(self) -> None:
        """Let the held body go on (thread-safe, idempotent)."""
        with self._lock:
            self._released.set()
            waiters, self._waiters = self._waiters, []
        for loop, fut in waiters:
            loop.call_soon_threadsafe(_resolve, fut)

    async def wait(self, timeout: float = HOLD_MAX_S) -> bool:
        """Wait (on the body's loop) until released; False when ``timeout`` passed first."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._released.is_set():
                return True
            self._waiters.append((loop, fut))
        try:
            await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            return False
        return True


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class Holds:
    """The holds of the loaded script (cleared when a script loads): thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holds: list[Hold] = []

    def add(self, n: int) -> Callable[[], None]:
        """Hold the first body that has written ``n`` (>= 0; 0: after its head) counted
        units; returns the release (call it once the fault is in place, or the sockets
        are read; calling it early is harmless)."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"n: {n!r} is not valid; allowed: a whole number >= 0")
        hold = Hold(n)
        with self._lock:
            self._holds.append(hold)
        return hold.release

    def clear(self) -> None:
        """Release and forget every hold (a new script: nobody will release them)."""
        with self._lock:
            holds, self._holds = self._holds, []
        for hold in holds:
            hold.release()

    def next_after(self, counted: int) -> int | None:
        """The nearest unreleased hold point after ``counted`` units (a healthy stretch
        of writes must stop there), or None."""
        if not self._holds:  # the common case, read without the lock (a list's truth is atomic)
            return None
        with self._lock:
            points = [h.n for h in self._holds if h.n > counted and not h.released]
        return min(points, default=None)

    def take(self, counted: int) -> list[Hold]:
        """The unreleased holds at exactly ``counted`` units, claimed by this body (a hold
        stops one body, the first to get there; two holds at one point -- the posture's
        and a fault's -- stop it until both are released)."""
        if not self._holds:
            return []
        with self._lock:
            mine = [h for h in self._holds if h.n == counted and not h.released]
            self._holds = [h for h in self._holds if h not in mine]
        return mine


async def wait_if_held(
    holds: Holds | None,
    counted: int,
    *,
    drain: Callable[[], Awaitable[object]],
    record: Callable[..., object],
) -> None:
    """A body that has written ``counted`` units: wait there if a hold is on that point
    (what was written before it on the wire first), recording ``held`` and ``released``."""
    held = holds.take(counted) if holds is not None else []
    if not held:
        return
    await drain()
    record("held", n=counted)
    start = time.monotonic()
    deadline = start + HOLD_MAX_S  # one bound for the point, however many holds are on it
    released = True
    for hold in held:
        released = await hold.wait(max(deadline - time.monotonic(), 0.0)) and released
    waited = round(time.monotonic() - start, 6)
    record("released", n=counted, waited_s=waited, timed_out=not released)


def stop_before_hold(holds: Holds | None, counted: int, stop: int | None) -> int | None:
    """Where a stretch of writes from ``counted`` units must stop: ``stop`` (the fault's
    point, or None), or the next hold's point when that comes first."""
    held = holds.next_after(counted) if holds is not None else None
    return held if held is not None and (stop is None or held < stop) else stop
