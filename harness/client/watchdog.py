"""Deadline enforcement: a fired deadline retires the attempt and unblocks its read at once.

Sync (:class:`Watchdog`): one thread per call waits on a :class:`threading.Condition`
until the earliest deadline that :class:`~harness.client.deadlines.DeadlineState`
answers (or until an event changes it). When one fires it retires the attempt's
:class:`AttemptToken` and calls the attempt's ``abort``, which shuts the socket down
(``shutdown(SHUT_RDWR)``): in sync code that is the only thing that wakes a thread
blocked in ``recv`` or ``send`` (``close()`` from another thread returns but does not
wake it). No polling loop, no ``join(timeout=...)``, no sleep: the thread only wakes on
a notify or at a deadline.

Async (:class:`AsyncWatchdog`): the same, on the event loop: one ``loop.call_at``
timer at the earliest deadline (re-armed only when a deadline moves earlier; a timer
that wakes early re-arms itself), and the same ``abort``. Both are scopes::

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

from harness.client.clock import Clock, MonotonicClock
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
        describe: Callable[[DeadlineState, float], str] = describe_deadlines,
    ) -> None:
        self.state = state
        self.describe = describe
        self._token: AttemptToken | None = None
        self._abort: Callable[[], None] | None = None
        #: (deadline, clock time it was acted on) for every fire, in order.
        self.fired: list[tuple[Deadline, float]] = []

    def now(self) -> float:
        raise NotImplementedError

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

    def start_attempt(self, abort: Callable[[], None]) -> AttemptToken:
        raise NotImplementedError

    def end_attempt(self, token: AttemptToken) -> Deadline | None:
        raise NotImplementedError

    def report(self, kind: str | None) -> None:
        """One activity by name: ``"content"``, ``"comment"`` or None (nothing yet)."""
        if kind is not None and self.state.activity(kind, self.now()):
            self._moved_earlier()

    def content(self) -> None:
        self.report("content")

    def comment(self) -> None:
        self.report("comment")

    def _moved_earlier(self) -> None:
        """The earliest deadline may have moved earlier (the first activity)."""
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

    def __init__(
        self,
        state: DeadlineState,
        *,
        clock: Clock | None = None,
        describe: Callable[[DeadlineState, float], str] = describe_deadlines,
        one_attempt: bool = False,
        on_exit: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(state, describe)
        self.clock = clock or MonotonicClock()
        self.now = self.clock.now  # type: ignore[method-assign]  # once per stream event
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._cancelled = False
        #: the thread ends with its one attempt (fired or ended): ``harness.guard``'s
        #: watchdog serves one request, and nothing of it may outlive that request
        self._one_attempt = one_attempt
        #: run by the thread as it exits, outside the lock (the guard closes an
        #: abandoned body's connection there)
        self._on_exit = on_exit
        #: set when the thread has exited (after ``on_exit``); never set if never started
        self.exited = threading.Event()

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
        if self.state.first_byte(self.clock.now()):
            self._moved_earlier()

    def end_attempt(self, token: AttemptToken) -> Deadline | None:
        """Disarm the attempt; returns the deadline that retired it, if one did."""
        with self._cond:
            if self._token is token:
                self.state.done(self.clock.now())
                self._token, self._abort = None, None
                self._cond.notify_all()
            return token.retired_by

    # ------------------------------------------------------------------ questions

    def next_deadline(self) -> Deadline | None:
        with self._cond:
            return self.state.next_deadline()

    def expired(self) -> Deadline | None:
        """The deadline that has passed by now, if any (thread-safe)."""
        with self._cond:
            return self.state.expired(self.clock.now())

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

    def _moved_earlier(self) -> None:
        """Wake the thread to reschedule. Activity events themselves take no lock: they
        are plain stores (atomic under the GIL) that only move deadlines later, which
        the thread finds when it wakes; only the first activity, which can move the
        earliest deadline earlier, comes here. O(1) per event."""
        with self._cond:
            self._cond.notify_all()

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

    def __init__(
        self,
        state: DeadlineState,
        *,
        describe: Callable[[DeadlineState, float], str] = describe_deadlines,
    ) -> None:
        super().__init__(state, describe)
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None

    @staticmethod
    def now() -> float:
        return asyncio.get_running_loop().time()

    def next_deadline(self) -> Deadline | None:
        return self.state.next_deadline()

    def expired(self) -> Deadline | None:
        return self.state.expired(self.now())

    def describe_now(self) -> str:
        return self.describe(self.state, self.now())

    def start_attempt(self, abort: Callable[[], None]) -> AttemptToken:
        token = AttemptToken(self.state.start_attempt(self.now()))
        self._token, self._abort = token, abort
        self._arm()
        return token

    def end_attempt(self, token: AttemptToken) -> Deadline | None:
        if self._token is token:
            self.state.done(self.now())
            self._token, self._abort = None, None
            self._disarm()
        return token.retired_by

    def first_byte(self) -> None:
        if self.state.first_byte(self.now()):
            self._arm()

    def _moved_earlier(self) -> None:
        self._arm()

    async def wait(self, delay_s: float) -> bool:
        """Wait ``delay_s`` between attempts (the caller never asks past the ceiling)."""
        await asyncio.sleep(delay_s)
        return True

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
        self._timer = asyncio.get_running_loop().call_at(d.at, self._on_timer)

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
