"""What the guard holds for one request, and the one place that lets each part go.

A guarded request holds two things beyond the HTTP library's own: its watchdog (a
thread in sync code, a loop timer in async code) and its body's connection. Both must
be gone by the first of: the response's close, the client's close, or the request's own
deadlines (the hard ceiling at the latest) -- however the caller abandons the stream:
closed, broken out of, raised out of, or dropped as garbage that only the cycle
collector could reach (an SDK's stream and its generator refer to each other). So:

- the watchdog ends with its one attempt: the body's end, the response's close, the
  client's close, or a deadline firing;
- a deadline that fires shuts the socket down (wakes a blocked read) and **reaps** the
  body: a body nobody is reading has its connection closed there and then, by the
  watchdog; a body inside a read (``reading``) is woken by the shutdown, sees ``reaped``
  and closes it itself. ``reading`` and ``reaped`` are each set before the other is read
  (under the GIL every such store and load is one step), so at least one side closes;
  the close itself is claimed once (:meth:`GuardedRequest.claim`);
- the client's close ends every request still held (``live``).

``done`` is set once both parts are gone; ``response.extensions["harness.guard"]`` is
the request's :class:`GuardedRequest`, so a caller (and the leak tests) can wait on it.

Not here: deadlines (``harness.client.watchdog``), which socket (``sockets.py``), the
faces that drive this (``transport.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from harness.guard.sockets import Binding

__all__ = ["EXTENSION", "GuardedRequest"]

#: The response extension that carries the request's :class:`GuardedRequest`.
EXTENSION = "harness.guard"


class GuardedRequest:
    """One guarded request from its send to the release of its watchdog and connection."""

    def __init__(self, live: set[GuardedRequest]) -> None:
        self.binding = Binding()
        #: set once the watchdog is over and the body's connection is closed or returned
        self.done = threading.Event()
        self.watchdog: Any = None
        self.token: Any = None
        #: the body is inside a read of its connection (only the reading thread sets it)
        self.reading = False
        #: a deadline fired: the connection is (being) closed under the body
        self.reaped = False
        self._close: Callable[[], None] | None = None
        self._lock = threading.Lock()
        self._claimed = False
        self._watchdog_over = False
        self._parts = 2  # the watchdog, the connection
        self._live = live

    def arm(self, watchdog: Any, token: Any) -> None:
        """Its watchdog runs its attempt: from now on the client's close ends it too."""
        self.watchdog, self.token = watchdog, token
        self._live.add(self)

    # ------------------------------------------------------------------ the watchdog's side

    def abort(self) -> None:
        """A deadline fired (the watchdog's abort; never blocks): shut the socket down
        and reap the body."""
        self.binding.abort()
        self.reap()

    def reap(self) -> None:
        """Close the connection under a body nobody is reading; a reading body closes
        it itself when its read returns."""
        self.reaped = True
        if not self.reading:
            self.close_connection()

    # ------------------------------------------------------------------ the body's side

    def attach(self, close: Callable[[], None]) -> None:
        """The body exists; ``close`` closes (sync) or schedules the close of (async) its
        connection. A deadline that fired before it existed reaps it now."""
        self._close = close
        if self.reaped or (self.token is not None and self.token.retired_by is not None):
            self.reap()

    def claim(self) -> bool:
        """True for the one caller that closes the connection (the others skip it)."""
        with self._lock:
            if self._claimed:
                return False
            self._claimed = True
            return True

    def close_connection(self) -> None:
        """Close the attached body's connection unless someone already did."""
        close = self._close
        if close is not None and self.claim():
            close()  # the async face's close releases the connection when it has run

    def connection_released(self) -> None:
        self._part_over()

    def watchdog_over(self) -> None:
        with self._lock:
            if self._watchdog_over:
                return
            self._watchdog_over = True
        self._part_over()

    def _part_over(self) -> None:
        with self._lock:
            self._parts -= 1
            last = self._parts == 0
        if last:
            self._live.discard(self)
            self.done.set()
