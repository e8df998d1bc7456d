"""The relay's timeline: every event on both legs of every connection, and waiting on it.

Not here: what produces the events (``harness.relay.middlebox``, ``harness.relay.legs``,
``harness.relay.sampling``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RelayConnection", "RelayEvent", "Timeline"]


@dataclass(frozen=True)
class RelayEvent:
    """One entry of the relay's timeline. ``t`` is ``time.monotonic()``.

    ``leg`` is "client" (the leg to the target), "upstream" (the leg to the server) or
    "relay" (mode changes, tcp samples). ``states`` is set on ``tcp`` events: a mapping
    of each name in ``LEGS`` to a :meth:`harness.tcpstate.TcpSocket.describe` line or
    "gone"."""

    t: float
    conn: int
    leg: str
    kind: str
    detail: str = ""
    states: Mapping[str, str] | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"t": self.t, "conn": self.conn, "leg": self.leg, "kind": self.kind}
        if self.detail:
            out["detail"] = self.detail
        if self.states is not None:
            out["states"] = dict(self.states)
        return out


@dataclass(frozen=True)
class RelayConnection:
    """A summary of one relayed connection."""

    conn: int
    client: tuple[str, int]
    upstream_local: tuple[str, int] | None
    bytes_up: int  # client -> upstream
    bytes_down: int  # upstream -> client
    status: str  # connecting, open, swallowed, cut, closed


class Timeline:
    """Events recorded from the loop thread, read and waited on from any thread."""

    def __init__(self) -> None:
        self._events: list[RelayEvent] = []
        self.cond = threading.Condition()

    def record(
        self,
        conn: int,
        leg: str,
        kind: str,
        detail: str = "",
        *,
        states: Mapping[str, str] | None = None,
        t: float | None = None,
    ) -> RelayEvent:
        ev = RelayEvent(time.monotonic() if t is None else t, conn, leg, kind, detail, states)
        with self.cond:
            self._events.append(ev)
            self.cond.notify_all()
        return ev

    def events(self) -> list[RelayEvent]:
        with self.cond:
            return list(self._events)

    def wait_for(
        self,
        kind: str,
        *,
        timeout: float,
        count: int = 1,
        conn: int | None = None,
        where: Callable[[RelayEvent], bool] | None = None,
    ) -> RelayEvent:
        """Block until the ``count``-th event of ``kind`` (optionally on ``conn``, and
        matching ``where``) is recorded; returns it. Raises ``TimeoutError`` naming what
        was seen instead. ``tcp`` samples are taken off the loop, so they may be
        recorded a few ms after the event that asked for them: wait for them here."""
        deadline = time.monotonic() + timeout

        def found() -> RelayEvent | None:
            hits = [
                e
                for e in self._events
                if e.kind == kind
                and (conn is None or e.conn == conn)
                and (where is None or where(e))
            ]
            return hits[count - 1] if len(hits) >= count else None

        with self.cond:
            while (hit := found()) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    seen = ", ".join(e.kind for e in self._events[-12:]) or "nothing"
                    raise TimeoutError(
                        f"relay: no {kind!r} #{count} within {timeout} s; last events: {seen}"
                    )
                self.cond.wait(remaining)
            return hit
