"""One clock for every deadline: ``now()`` plus a wait that a test can drive.

The watchdog never sleeps or polls: it waits on a :class:`threading.Condition` until
either something changes (notify) or the earliest deadline arrives. :class:`MonotonicClock`
does that with ``Condition.wait(timeout)``; :class:`FakeClock` makes the same wait
return when a test calls :meth:`FakeClock.advance`, so deadline tests are
deterministic and instant (the shape of trio's ``MockClock``).

Not for async code: the async client uses the event loop's clock (``loop.time()``),
which is the same monotonic clock as :class:`MonotonicClock`.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Protocol

__all__ = ["Clock", "FakeClock", "MonotonicClock"]


class Clock(Protocol):
    """What the watchdog needs from time."""

    def now(self) -> float:
        """Seconds on a monotonic scale (only differences mean anything)."""
        ...

    def wait(self, cond: threading.Condition, until: float | None) -> None:
        """With ``cond`` held: block until notified or until ``now() >= until``
        (``None``: until notified). May return early; callers re-check."""
        ...


class MonotonicClock:
    """The real clock: ``time.monotonic``."""

    #: ``time.monotonic`` itself, not a method around it: read once per stream event
    now = staticmethod(time.monotonic)

    def wait(self, cond: threading.Condition, until: float | None) -> None:
        if until is None:
            cond.wait()
        else:
            cond.wait(max(0.0, until - time.monotonic()))

    def __repr__(self) -> str:
        return "MonotonicClock()"


class FakeClock:
    """A clock that moves only when told to. Like a real timed wait, a wait returns only
    when notified or when :meth:`advance` reaches its ``until``: a missed notify is a
    real bug here too, not hidden by spurious wake-ups."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._lock = threading.Lock()
        self._waiters: weakref.WeakKeyDictionary[threading.Condition, float | None] = (
            weakref.WeakKeyDictionary()
        )

    def now(self) -> float:
        with self._lock:
            return self._now

    def wait(self, cond: threading.Condition, until: float | None) -> None:
        with self._lock:
            if until is not None and self._now >= until:
                return
            self._waiters[cond] = until
        try:
            cond.wait()  # woken by notify (state change) or by advance() reaching until
        finally:
            with self._lock:
                self._waiters.pop(cond, None)

    def advance(self, seconds: float) -> None:
        """Move time forward and wake the waiters whose ``until`` has arrived."""
        if seconds < 0:
            raise ValueError(f"seconds: {seconds!r} is not valid; allowed: a number >= 0")
        with self._lock:
            self._now += seconds
            due = [
                c for c, until in self._waiters.items() if until is not None and until <= self._now
            ]
        for cond in due:
            with cond:
                cond.notify_all()

    def __repr__(self) -> str:
        return f"FakeClock(now={self.now():.3f})"
