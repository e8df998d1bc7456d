"""Deadline enforcement: a fired deadline retires the attempt and unblocks its read at once.

Sync (:class:`Watchdog`): one thread per call waits on a :class:`threading.Condition`
until the earliest deadline that :class:`~harness.client.deadlines.DeadlineState`
answers (or until an event changes it). When one fires it retires the attempt's
:class:`AttemptToken` and calls the attempt's ``abort``, which shuts the socket down
(``shutdown(SHUT_RDWR)``): in sync code that is the only thing that wakes a thread
blocked in ``recv`` or ``send`` (``close()`` from another thread returns but does not
wake it). No polling loop, no ``join(timeout=...)``, no sleep: the thread only wakes on
a notify or at a deadline.

Async (:class:`AsyncWatchdog`): the same, on the event loop: one ``clock.call_at``
timer at the earliest deadline (re-armed only when a deadline moves earlier; a timer
that wakes early re-arms itself), and the same ``abort``. Both take the same injectable
:class:`~harness.client.clock.Clock` (a test drives either with a ``FakeClock``), and
both wait between attempts the same way: never past the hard ceiling, cut short by
:meth:`~_Enforcer.cancel` (the client's ``close``). Both are scopes::

    with watchdog.attempt(abort) as token:   # sync and async code alike
        ...read...                           # a fired deadline retires token, calls abort

The scope never raises a deadline error itself: the aborted read fails (or ends), and the
caller asks the token (``owns_attempt``) what happened -- one rule for both faces.

Retirement: every attempt carries an :class:`AttemptToken`. Once a watchdog retires it,
:func:`owns_attempt` is False, the client drops any late delta of that attempt and never
returns its partial text as a completed answer.

Not here: the deadline arithmetic (``deadlines.py``), sockets (``transport.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any

from harness.client.clock import Clock, MonotonicClock, Timer
from harness.client.deadlines import Deadline, DeadlineState, describe_deadlines
from harness.client.tokens import AttemptToken, error_for_deadline, owns_attempt

__all__ = [
    "AsyncWatchdog",
    "AttemptToken",
    "Watchdog",
    "error_for_deadline",
    "owns_attempt",
]

# --------------------------------------------------------------------------- shared


class _Enforcer:
    """What both watchdogs share: the state, the fired record, the questions, and
    what firing a deadline does. Subclasses add how time passes (thread or loop)."""

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
        self._token: AttemptToken | None = None
        self._abort: Callable[[], None] | None = None
        self._cancelled = False
        #: (deadline, clock time it was acted on) for every fire, in order.
        self.fired: list[tuple[Deadline, float]] = []
        self.now = self.clock.now  # type: ignore[method-assign]  # once per stream event
        self._setup()

    def _setup(self) -> None:
        """The driver's own state (a condition and a thread; a loop timer)."""
        raise NotImplementedError

    def now(self) -> float:
        return self.clock.now()

    def elapsed_s(self) -> float:
        return self.now() - self.state.call_started_at

    def hard_deadline_at(self) -> float | None:
        s = self.state.settings.hard_ceiling_s
        return None if s is None else self.state.call_started_at + s

    @contextlib.contextmanager
    def attempt(self, abort: Callable[[], None]) -> Iterator[AttemptToken]:
        """One attempt as a scope: armed on entry, disarmed on exit (however it exits)."""
        token = self.start_attempt(abort)
        try:
            yield token
        finally:
            self.end_attempt(token)

    def cancel(self) -> None:
        """Cut a wait between attempts short, now or when it starts (the client is being
        closed): the wait returns False."""
        self._cancelled = True
        self._wake()

    def start_attempt(self, abort: Callable[[], None]) -> AttemptToken:
        """Arm the per-attempt deadlines; ``abort`` is called if one fires. It must
        unblock the attempt's I/O and must not block."""
        with self._guard():
            token = AttemptToken(self.state.start_attempt(self.now()))
            self._token, self._abort = token, abort
            self._rearm()
            return token

    def end_attempt(self, token: AttemptToken) -> Deadline | None:
        """Disarm the attempt; returns the deadline that retired it, if one did."""
        with self._guard():
            if self._token is token:
                self.state.done(self.now())
                self._token, self._abort = None, None
                self._rearm()
            return token.retired_by

    def first_byte(self) -> None:
        self._event(self.state.first_byte)

    def content(self) -> None:
        self.report("content")

    def comment(self) -> None:
        self.report("comment")

    def next_deadline(self) -> Deadline | None:
        with self._guard():
            return self.state.next_deadline()

    def expired(self) -> Deadline | None:
        """The deadline that has passed by now, if any."""
        with self._guard():
            return self.state.expired(self.now())

    def describe_now(self) -> str:
        with self._guard():
            return self.describe(self.state, self.now())

    def report(self, kind: str | None) -> None:
        """One activity by name: ``"content"``, ``"comment"`` or None (nothing yet).

        Once per stream event, so no lock: the state's activity fields are plain stores
        (atomic under the GIL) that only move deadlines later, which the thread finds
        when it wakes; only the first activity, which can move the earliest deadline
        earlier, takes the guard to re-arm."""
        if kind is not None and self.state.activity(kind, self.now()):
            with self._guard():
                self._rearm()

    def _event(self, apply: Callable[[float], bool]) -> None:
        """Apply one event; re-arm only if the earliest deadline may have moved earlier
        (the first activity); later deadlines are found on waking. O(1) per event."""
        with self._guard():
            if apply(self.now()):
                self._rearm()

    def _guard(self) -> contextlib.AbstractContextManager[Any]:
        """What the state is read and changed under (the sync watchdog's condition)."""
        raise NotImplementedError

    def _rearm(self) -> None:
        """The attempt or its deadlines changed: wait for (or time) the earliest one."""
        raise NotImplementedError

    def _wait_until(self, delay_s: float) -> float:
        """When a wait of ``delay_s`` from now ends, never past the hard ceiling."""
        until = self.now() + delay_s
        hard = self.hard_deadline_at()
        return until if hard is None else min(until, hard)

    def _wait_over(self, until: float) -> bool | None:
        """What a wait ending at ``until`` returns now: True (the delay is over), False
        (cancelled, or the hard ceiling came first), None (not yet)."""
        if self._cancelled:
            return False
        now = self.now()
        hard = self.hard_deadline_at()
        if hard is not None and now >= hard:
            return False
        return True if now >= until else None

    def _wake(self) -> None:
        raise NotImplementedError

    def _fire(self, deadline: Deadline, now: float) -> None:
        token, abort = self._token, self._abort
        assert token is not None
        token.retire(deadline, now)
        self.fired.append((deadline, now))
        self.state.done(now)
        self._token, self._abort = None, None
        if abort is not None:
            abort()  # shutdown(SHUT_RDWR): non-blocking, safe under the lock


# --------------------------------------------------------------------------- sync


class Watchdog(_Enforcer):
    """Enforces one call's deadlines from a single thread (a context manager).

    The caller reports events (:meth:`content`, :meth:`comment`, ...) from its own
    thread; the watchdog thread sleeps on a condition until the earliest deadline.
    """

    def _setup(self) -> None:
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._one_attempt = False
        self._on_exit: Callable[[], None] | None = None
        #: set when the thread has exited (after ``on_exit``); never set if never started
        self.exited = threading.Event()

    def one_attempt(self, on_exit: Callable[[], None] | None = None) -> Watchdog:
        """The thread ends with its one attempt (fired or ended) and runs ``on_exit`` as
        it exits, outside the lock: ``harness.guard``'s watchdog serves one request, and
        nothing of it may outlive that request. Call before :meth:`start`."""
        self._one_attempt, self._on_exit = True, on_exit
        return self

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
            self._thread = threading.Thread(target=self._main, name="harness-watchdog", daemon=True)
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
        with self._cond:
            super().cancel()

    def _wake(self) -> None:
        self._cond.notify_all()  # with the condition held (cancel)

    def _guard(self) -> threading.Condition:
        return self._cond

    def _rearm(self) -> None:
        self._cond.notify_all()  # the thread finds the new earliest deadline

    def wait(self, delay_s: float) -> bool:
        """Wait ``delay_s`` between attempts, never past the hard ceiling; a condition
        wait on the clock, not a sleep. Returns False if cancelled or the ceiling came first."""
        until = self._wait_until(delay_s)
        with self._cond:
            while (over := self._wait_over(until)) is None:
                self.clock.wait(self._cond, until)
            return over

    # ------------------------------------------------------------------ the thread

    def _main(self) -> None:
        try:
            self._run()
        finally:
            if self._on_exit is not None:
                self._on_exit()
            self.exited.set()

    def _run(self) -> None:
        with self._cond:
            while not self._stopped:
                if self._token is None and self._one_attempt and self.state.attempt:
                    return  # its one attempt is over: nothing left to enforce
                deadline = self.state.next_deadline() if self._token is not None else None
                if deadline is None:
                    self.clock.wait(self._cond, None)
                    continue
                now = self.clock.now()
                if now < deadline.at:
                    self.clock.wait(self._cond, deadline.at)
                    continue
                self._fire(deadline, now)


# --------------------------------------------------------------------------- async


class AsyncWatchdog(_Enforcer):
    """Enforces one call's deadlines on the running event loop: one timer per attempt.

    Every method is called from the loop's thread. Sync methods only: starting or
    ending an attempt never awaits, so ``with watchdog.attempt(abort)`` works in
    ``async def`` code exactly as in sync code.
    """

    def _setup(self) -> None:
        self._timer: Timer | None = None
        self._timer_at: float | None = None
        self._woken: asyncio.Event | None = None

    async def wait(self, delay_s: float) -> bool:
        """Wait ``delay_s`` between attempts, never past the hard ceiling; one clock
        timer, not a sleep. Returns False if cancelled or the ceiling came first."""
        until = self._wait_until(delay_s)
        woken = self._woken = asyncio.Event()
        timer = self.clock.call_at(until, woken.set)
        try:
            while (over := self._wait_over(until)) is None:
                await woken.wait()
                woken.clear()
            return over
        finally:
            timer.cancel()
            self._woken = None

    def _wake(self) -> None:
        if self._woken is not None:
            self._woken.set()

    def _guard(self) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()  # one thread: the loop's

    def _rearm(self) -> None:
        self._arm()

    def _arm(self) -> None:
        """Schedule the timer at the earliest deadline, unless it already wakes earlier."""
        d = self.state.next_deadline() if self._token is not None else None
        if d is None:
            self._disarm()
            return
        if self._timer is not None and self._timer_at is not None and self._timer_at <= d.at:
            return  # it wakes first and re-arms for whatever is due then
        self._disarm()
        self._timer_at = d.at
        self._timer = self.clock.call_at(d.at, self._on_timer)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = None, None

    def _on_timer(self) -> None:
        self._timer, self._timer_at = None, None
        if self._token is None:
            return
        now = self.now()
        due = self.state.expired(now)
        if due is None:
            self._arm()  # the deadline moved later since the timer was set
            return
        self._fire(due, now)
