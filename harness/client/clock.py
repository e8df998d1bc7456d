"""One clock for every deadline: ``now()`` plus the waits and timers a test can drive.

The watchdogs never sleep or poll. The sync one waits on a :class:`threading.Condition`
until either something changes (notify) or the earliest deadline arrives
(:meth:`Clock.wait`); the async one sets one loop timer at that deadline
(:meth:`Clock.call_at`). :class:`MonotonicClock` is the real clock (``Condition.wait``
with a timeout; ``loop.call_at``: the event loop's clock is the same ``time.monotonic``).
:class:`FakeClock` makes both return when a test calls :meth:`FakeClock.advance`, so
deadline tests are deterministic and instant (the shape of trio's ``MockClock``).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["Clock", "FakeClock", "MonotonicClock", "Timer"]


class Timer(Protocol):
    """A scheduled callback (``asyncio.TimerHandle`` is one)."""

    def cancel(self) -> None: ...


class Clock(Protocol):
    """What the watchdogs need from time."""

    def now(self) -> float:
        """Seconds on a monotonic scale (only differences mean anything)."""
        ...

    def wait(self, cond: threading.Condition, until: float | None) -> None:
        """With ``cond`` held: block until notified or until ``now() >= until``
        (``None``: until notified). May return early; callers re-check."""
        ...

    def call_at(self, at: float, callback: Callable[[], None]) -> Timer:
        """On the running event loop: call ``callback`` there once ``now() >= at``."""
        ...


class MonotonicClock:
    """The real clock: ``time.monotonic`` (the default event loop's clock too)."""

    #: ``time.monotonic`` itself, not a method around it: read once per stream event
    now = staticmethod(time.monotonic)

    def wait(self, cond: threading.Condition, until: float | None) -> None:
        if until is None:
            cond.wait()
        else:
            cond.wait(max(0.0, until - time.monotonic()))

    def call_at(self, at: float, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_at(at, callback)

    def __repr__(self) -> str:
        return "MonotonicClock()"


class FakeClock:
    """A clock that moves only when told to. Like a real timed wait, a wait returns only
    when notified or when :meth:`advance` reaches its ``until``: a missed notify is a
    real bug here too, not hidden by spurious wake-ups. A timer runs on its loop once
    :meth:`advance` reaches its time."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._lock = threading.Lock()
        #: a wait or a timer was registered (what :meth:`wait_for_timed` waits on)
        self._registered = threading.Condition(self._lock)
        self._ids = itertools.count()
        #: id -> (condition, until) of every thread in :meth:`wait`
        self._waiters: dict[int, tuple[threading.Condition, float | None]] = {}
        #: id -> (at, loop, callback) of every pending timer
        self._timers: dict[int, tuple[float, asyncio.AbstractEventLoop, Callable[[], None]]] = {}

    def now(self) -> float:
        with self._lock:
            return self._now

    def wait(self, cond: threading.Condition, until: float | None) -> None:
        with self._lock:
            if until is not None and self._now >= until:
                return
            key = next(self._ids)
            self._waiters[key] = (cond, until)
            self._registered.notify_all()
        try:
            cond.wait()  # woken by notify (state change) or by advance() reaching until
        finally:
            with self._lock:
                self._waiters.pop(key, None)

    def call_at(self, at: float, callback: Callable[[], None]) -> Timer:
        loop = asyncio.get_running_loop()
        with self._lock:
            key = next(self._ids)
            self._timers[key] = (at, loop, callback)
            self._registered.notify_all()
        return _FakeTimer(self, key)

    def advance(self, seconds: float) -> None:
        """Move time forward; wake the waiters and run the timers whose time has come."""
        if seconds < 0:
            raise ValueError(f"seconds: {seconds!r} is not valid; allowed: a number >= 0")
        with self._lock:
            self._now += seconds
            now = self._now
            due = [c for c, until in self._waiters.values() if until is not None and until <= now]
            timers = [k for k, (at, _, _) in self._timers.items() if at <= now]
            fire = [self._timers.pop(k) for k in timers]
        for cond in due:
            with cond:
                cond.notify_all()
        for _, loop, callback in fire:
            loop.call_soon_threadsafe(callback)

    def wait_for_timed(self, count: int = 1, *, timeout_s: float) -> None:
        """Block until ``count`` timed waits or timers are pending: a test's way to know a
        waiter has read the clock before it calls :meth:`advance`. ``TimeoutError`` after
        ``timeout_s`` (real seconds)."""
        with self._registered:
            if not self._registered.wait_for(lambda: self._timed() >= count, timeout_s):
                raise TimeoutError(f"{self._timed()} of {count} timed waits after {timeout_s} s")

    def _timed(self) -> int:
        waits = sum(1 for _, until in self._waiters.values() if until is not None)
        return waits + len(self._timers)

    def _cancel(self, key: int) -> None:
        with self._lock:
            self._timers.pop(key, None)

    def __repr__(self) -> str:
        return f"FakeClock(now={self.now():.3f})"


class _FakeTimer:
    def __init__(self, clock: FakeClock, key: int) -> None:
        self._clock, self._key = clock, key

    def cancel(self) -> None:
        self._clock._cancel(self._key)
