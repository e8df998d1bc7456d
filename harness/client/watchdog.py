"""Deadline enforcement: a fired deadline retires the attempt and unblocks its read at once.

Sync (:class:`Watchdog`): one thread per call waits on a :class:`threading.Condition`
until the earliest deadline that :class:`~harness.client.deadlines.DeadlineState`
answers (or until an event changes it). When one fires it retires the attempt's
:class:`AttemptToken` and calls the attempt's ``abort``, which shuts the socket down
(``shutdown(SHUT_RDWR)``): in sync code that is the only thing that wakes a thread
blocked in ``recv`` or ``send`` (``close()`` from another thread returns but does not
wake it). No polling loop, no ``join(timeout=...)``, no sleep: the thread only wakes on
a notify or at a deadline.

Async (:class:`AsyncWatchdog`): one ``asyncio.timeout_at`` cancel scope per attempt,
rescheduled to the earliest deadline after every event; cancellation unblocks the read.

Retirement: every attempt carries an :class:`AttemptToken`. Once a watchdog retires it,
:func:`owns_attempt` is False, the client drops any late delta of that attempt and never
returns its partial text as a completed answer.

Not here: the deadline arithmetic (``deadlines.py``), sockets (``transport.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from types import TracebackType

from harness.client.clock import Clock, MonotonicClock
from harness.client.deadlines import Deadline, DeadlineState, describe_deadlines
from harness.client.errors import (
    FirstByteTimeout,
    HardCeiling,
    StaleCall,
    StallError,
    StreamIdleTimeout,
)

__all__ = [
    "AsyncWatchdog",
    "AttemptToken",
    "Watchdog",
    "error_for_deadline",
    "owns_attempt",
]

_ERRORS: dict[str, type[StallError]] = {
    "first_byte_s": FirstByteTimeout,
    "stream_idle_s": StreamIdleTimeout,
    "stale_call_s": StaleCall,
    "hard_ceiling_s": HardCeiling,
}

_MESSAGES = {
    "first_byte_s": "no first byte within {limit:g} s of the attempt starting",
    "stream_idle_s": "stream idle for {limit:g} s",
    "stale_call_s": "no content progress for {limit:g} s",
    "hard_ceiling_s": "call exceeded its hard ceiling of {limit:g} s",
}


class AttemptToken:
    """Identifies one attempt; a watchdog retires it when a deadline fires."""

    __slots__ = ("number", "retired_by", "retired_at")

    def __init__(self, number: int) -> None:
        self.number = number
        self.retired_by: Deadline | None = None
        self.retired_at: float | None = None

    @property
    def alive(self) -> bool:
        return self.retired_by is None

    def retire(self, deadline: Deadline, at: float) -> None:
        if self.retired_by is None:
            self.retired_by = deadline
            self.retired_at = at

    def __repr__(self) -> str:
        state = "alive" if self.alive else f"retired by {self.retired_by.name}"  # type: ignore[union-attr]
        return f"AttemptToken({self.number}, {state})"


def owns_attempt(token: AttemptToken) -> bool:
    """The retirement check: may this attempt still deliver deltas and a result?"""
    return token.alive


def error_for_deadline(
    deadline: Deadline, *, attempt: int | None, elapsed_s: float | None, detail: str = ""
) -> StallError:
    """The typed error for a fired deadline."""
    message = _MESSAGES[deadline.name].format(limit=deadline.limit_s)
    if detail:
        message = f"{message}; {detail}"
    return _ERRORS[deadline.name](
        message,
        attempt=attempt,
        elapsed_s=elapsed_s,
        deadline=deadline.name,
        deadline_s=deadline.limit_s,
    )


# --------------------------------------------------------------------------- sync


class Watchdog:
    """Enforces one call's deadlines from a single thread (a context manager).

    The caller reports events (:meth:`content`, :meth:`comment`, ...) from its own
    thread; the watchdog thread sleeps on a condition until the earliest deadline.
    """

    def __init__(
        self,
        state: DeadlineState,
        *,
        clock: Clock | None = None,
        describe: Callable[[DeadlineState, float], str] = describe_deadlines,
    ) -> None:
        self.state = state
        self.clock = clock or MonotonicClock()
        self.describe = describe
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._cancelled = False
        self._token: AttemptToken | None = None
        self._abort: Callable[[], None] | None = None
        #: (deadline, clock time it was acted on) for every fire, in order.
        self.fired: list[tuple[Deadline, float]] = []

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> Watchdog:
        self.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="harness-watchdog", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop and join the thread (it exits at once: it is woken by the notify)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None

    def cancel(self) -> None:
        """Interrupt a backoff wait (e.g. the client is being closed)."""
        with self._cond:
            self._cancelled = True
            self._cond.notify_all()

    # ------------------------------------------------------------------ events

    def start_attempt(self, abort: Callable[[], None]) -> AttemptToken:
        """Arm the per-attempt deadlines; ``abort`` is called (from the watchdog thread)
        if one fires. It must unblock the attempt's I/O and must not block."""
        with self._cond:
            token = AttemptToken(self.state.start_attempt(self.clock.now()))
            self._token, self._abort = token, abort
            self._cond.notify_all()
            return token

    def first_byte(self) -> None:
        self._event(self.state.first_byte)

    def content(self) -> None:
        self._event(self.state.content)

    def comment(self) -> None:
        self._event(self.state.comment)

    def end_attempt(self, token: AttemptToken) -> Deadline | None:
        """Disarm the attempt; returns the deadline that retired it, if one did."""
        with self._cond:
            if self._token is token:
                self.state.done(self.clock.now())
                self._token, self._abort = None, None
                self._cond.notify_all()
            return token.retired_by

    # ------------------------------------------------------------------ questions

    def now(self) -> float:
        return self.clock.now()

    def elapsed_s(self) -> float:
        return self.clock.now() - self.state.call_started_at

    def hard_deadline_at(self) -> float | None:
        s = self.state.settings.hard_ceiling_s
        return None if s is None else self.state.call_started_at + s

    def describe_now(self) -> str:
        with self._cond:
            return self.describe(self.state, self.clock.now())

    def wait(self, delay_s: float) -> bool:
        """Wait ``delay_s`` between attempts, never past the hard ceiling; a condition
        wait on the clock, not a sleep. Returns False if cancelled or the ceiling came first."""
        until = self.clock.now() + delay_s
        hard = self.hard_deadline_at()
        with self._cond:
            while not self._cancelled:
                now = self.clock.now()
                if hard is not None and now >= hard:
                    return False
                if now >= until:
                    return True
                self.clock.wait(self._cond, until if hard is None else min(until, hard))
            return False

    def _event(self, apply: Callable[[float], None]) -> None:
        """Apply one event; wake the thread only if the earliest deadline moved earlier
        (the first activity arms the idle deadline); later deadlines it finds on waking."""
        with self._cond:
            before = self.state.next_deadline()
            apply(self.clock.now())
            after = self.state.next_deadline()
            if after is not None and (before is None or after.at < before.at):
                self._cond.notify_all()

    # ------------------------------------------------------------------ the thread

    def _run(self) -> None:
        with self._cond:
            while not self._stopped:
                deadline = self.state.next_deadline() if self._token is not None else None
                if deadline is None:
                    self.clock.wait(self._cond, None)
                    continue
                now = self.clock.now()
                if now < deadline.at:
                    self.clock.wait(self._cond, deadline.at)
                    continue
                self._fire(deadline, now)

    def _fire(self, deadline: Deadline, now: float) -> None:
        token, abort = self._token, self._abort
        assert token is not None
        token.retire(deadline, now)
        self.fired.append((deadline, now))
        self.state.done(now)
        self._token, self._abort = None, None
        if abort is not None:
            abort()  # shutdown(SHUT_RDWR): non-blocking, safe under the lock


# --------------------------------------------------------------------------- async


class AsyncWatchdog:
    """Enforces one call's deadlines in asyncio: a cancel scope per attempt."""

    def __init__(
        self,
        state: DeadlineState,
        *,
        describe: Callable[[DeadlineState, float], str] = describe_deadlines,
    ) -> None:
        self.state = state
        self.describe = describe
        self._scope: asyncio.Timeout | None = None
        self.fired: list[tuple[Deadline, float]] = []

    @staticmethod
    def now() -> float:
        return asyncio.get_running_loop().time()

    def elapsed_s(self) -> float:
        return self.now() - self.state.call_started_at

    def hard_deadline_at(self) -> float | None:
        s = self.state.settings.hard_ceiling_s
        return None if s is None else self.state.call_started_at + s

    @contextlib.asynccontextmanager
    async def attempt(self) -> AsyncIterator[AttemptToken]:
        """Run one attempt under the deadlines; a fired deadline retires the token and
        raises the matching :class:`StallError` out of the ``async with``."""
        token = AttemptToken(self.state.start_attempt(self.now()))
        scope = asyncio.timeout_at(self._when())
        try:
            async with scope:
                self._scope = scope
                yield token
        except TimeoutError as exc:
            if not scope.expired():
                raise
            now = self.now()
            deadline = self.state.expired(now) or self.state.next_deadline()
            assert deadline is not None
            token.retire(deadline, now)
            self.fired.append((deadline, now))
            raise error_for_deadline(
                deadline, attempt=token.number, elapsed_s=now - self.state.call_started_at
            ) from exc
        finally:
            self._scope = None
            self.state.done(self.now())

    def first_byte(self) -> None:
        self.state.first_byte(self.now())
        self._reschedule()

    def content(self) -> None:
        self.state.content(self.now())
        self._reschedule()

    def comment(self) -> None:
        self.state.comment(self.now())
        self._reschedule()

    def _when(self) -> float | None:
        d = self.state.next_deadline()
        return None if d is None else d.at

    def _reschedule(self) -> None:
        if self._scope is not None:
            self._scope.reschedule(self._when())
