"""Kernel TCP states of the four sockets of each relayed connection, for the timeline.

On every event and on a bounded schedule (``sample_interval_s``, at most
``max_samples`` per connection) the relay reads /proc/net/tcp (:mod:`harness.tcpstate`)
and records a ``tcp`` event when the states of the connection's legs changed.

Not here: parsing /proc (``harness.tcpstate``).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from harness import tcpstate
from harness.relay.legs import Connection
from harness.relay.timeline import RelayEvent, Timeline

__all__ = ["LEGS", "TcpSampler"]

#: The four sockets of one relayed connection, as named in ``tcp`` events.
LEGS = ("client", "relay_client", "relay_upstream", "upstream")
#: After a connection closed, keep sampling this many ticks to see TIME_WAIT / gone.
_POST_CLOSE_SAMPLES = 8


class TcpSampler:
    """Samples connections of a relay listening on ``relay_port`` to ``upstream_port``."""

    def __init__(
        self,
        timeline: Timeline,
        *,
        spawn: Callable[[Coroutine[Any, Any, Any]], asyncio.Task],
        interval_s: float,
        max_samples: int,
    ) -> None:
        self._timeline = timeline
        self._spawn = spawn
        self.interval_s = interval_s
        self.max_samples = max_samples
        self.relay_port = 0
        self.upstream_port = 0

    def soon(self, c: Connection) -> None:
        """Sample ``c``'s TCP states after an event, without blocking the loop."""
        self._spawn(self.sample(c))

    async def loop(self, c: Connection) -> None:
        """The bounded schedule for one connection, ending once it is closed and gone."""
        after_close = 0
        for _ in range(self.max_samples):
            await self.sample(c)
            if c.finished:
                after_close += 1
                gone = c.last_states is not None and all(
                    v == "gone" for v in c.last_states.values()
                )
                if gone or after_close > _POST_CLOSE_SAMPLES:
                    return
            await asyncio.sleep(self.interval_s)  # a schedule, not a sync

    async def sample(self, c: Connection) -> RelayEvent | None:
        # Reading /proc/net/tcp costs the kernel ~10 ms per thousand sockets on a busy
        # host: do it in a worker thread so relaying never waits for it. One at a time
        # per connection, so recorded states stay in order.
        if c.status == "connecting":
            return None  # no upstream leg yet: nothing to compare
        async with c.sample_lock:
            ports = {self.relay_port, self.upstream_port}
            try:
                table = await asyncio.get_running_loop().run_in_executor(
                    None, functools.partial(tcpstate.snapshot, ports=ports)
                )
            except tcpstate.TcpStateError as exc:
                if c.last_states is None:
                    c.last_states = {}
                    return c.record("relay", "tcp_unavailable", str(exc))
                return None
            # Stamped when the read is done, not when it started: the read can take tens
            # of ms, and a state seen then must not show up before the event that made it
            # (a CLOSE_WAIT listed ahead of the FIN that caused it).
            t = time.monotonic()
            states = leg_states(table, c, self.relay_port, self.upstream_port)
            if states == c.last_states:
                return None
            c.last_states = states
            return self._timeline.record(
                c.id, "relay", "tcp", _short_states(states), states=states, t=t
            )


def leg_states(
    table: list[tcpstate.TcpSocket], c: Connection, relay_port: int, upstream_port: int
) -> dict[str, str]:
    """Each of ``LEGS`` as a ``describe()`` line, or "gone"."""
    up_local = c.upstream_local[1] if c.upstream_local else None
    pairs = {
        "client": (c.client[1], relay_port),
        "relay_client": (relay_port, c.client[1]),
        "relay_upstream": (up_local, upstream_port),
        "upstream": (upstream_port, up_local),
    }
    states = {}
    for leg, (lport, rport) in pairs.items():
        hits = (
            []
            if lport is None or rport is None
            else tcpstate.select(table, local_port=lport, remote_port=rport)
        )
        states[leg] = hits[0].describe() if hits else "gone"
    return states


def _short_states(states: Mapping[str, str]) -> str:
    return " | ".join(f"{leg}={v.split(' ', 1)[0]}" for leg, v in states.items())
