"""What a search may still spend, on one clock: its examples, its minutes, a shrink's
seconds; and what stopped it.

One :class:`Budget` per search, shared by its workers (thread-safe). ``--examples``
stops generation only; ``--minutes`` and Ctrl-C also cut a shrink short (it answers
what it has not run as passing) and skip confirmation.

Not here: the search (``harness.fuzz.search``), its settings (``harness.fuzz.settings``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["Budget", "Stop"]


class Stop(BaseException):
    """The search is over (budget, time or Ctrl-C): ends a round without shrinking."""


class Budget:
    """``examples`` (None: no limit) and ``minutes`` (None: no limit) on ``clock``;
    ``shrink_s`` (None: no limit) for each claimed group's shrink."""

    def __init__(
        self,
        *,
        examples: int | None,
        minutes: float | None,
        shrink_s: float | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._examples = examples
        self._minutes = minutes
        self._shrink_s = shrink_s
        self._clock = clock
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._stopped_by = ""
        #: Examples generated so far (replays and shrinks not counted).
        self.spent = 0
        self.started = clock()
        self._deadline: float | None = None
        self.start()

    def start(self) -> None:
        """The search's clock starts now."""
        self.started = self._clock()
        self._deadline = None if self._minutes is None else self.started + 60 * self._minutes

    def elapsed(self) -> float:
        return self._clock() - self.started

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    @property
    def stopped_by(self) -> str:
        """``examples``, ``minutes``, ``interrupted``, ``error``; ``""`` while it runs."""
        with self._lock:
            return self._stopped_by

    def stop(self, why: str) -> None:
        with self._lock:
            self._stopped_by = self._stopped_by or why
        self._stop.set()

    def spend_example(self) -> None:
        with self._lock:
            self.spent += 1

    def remaining(self) -> int | None:
        """Examples left to generate (None: no limit)."""
        if self._examples is None:
            return None
        with self._lock:
            return max(0, self._examples - self.spent)

    def check(self) -> None:
        """Before a new example: raise :class:`Stop` (recording why) when none may run."""
        if self._stop.is_set():
            raise Stop()
        if self._out_of_time():
            self.stop("minutes")
            raise Stop()
        remaining = self.remaining()
        if remaining is not None and remaining <= 0:
            self.stop("examples")
            raise Stop()

    def cut_short(self) -> bool:
        """Interrupted, or out of time: a shrink takes what it has, nothing is confirmed.
        (A spent example budget stops generation only.)"""
        with self._lock:
            if self._stopped_by in ("interrupted", "error"):
                return True
        return self._out_of_time()

    def shrink_over(self, claimed_s: float | None) -> bool:
        """Cut short, or the shrink of a group claimed at ``claimed_s`` (seconds into the
        search) has spent its ``shrink_s``."""
        if self.cut_short():
            return True
        limit = self._shrink_s
        return limit is not None and claimed_s is not None and self.elapsed() - claimed_s >= limit

    def _out_of_time(self) -> bool:
        return self._deadline is not None and self._clock() >= self._deadline
