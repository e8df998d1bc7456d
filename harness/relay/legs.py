"""One relayed connection: its two legs, its counters, and what a mode may do to it.

:class:`Connection` is mutable state owned by the relay's loop thread. Its actions
(:meth:`Connection.forward_fin`, :meth:`~Connection.forward_rst`,
:meth:`~Connection.swallow`) are what a mode (``harness.relay.modes``) calls when the
upstream leg ends; each records what actually happened on the wire, so the timeline
never shows a FIN that was not sent.

Not here: moving bytes (``harness.relay.middlebox``) or sampling TCP states
(``harness.relay.sampling``).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time
from typing import Protocol

from harness.relay.timeline import RelayConnection, RelayEvent

__all__ = ["Connection", "Recorder", "abort", "half_close"]

#: Data events recorded per connection; byte counters keep counting past it.
MAX_DATA_EVENTS = 2000


class Recorder(Protocol):
    def __call__(self, conn: int, leg: str, kind: str, detail: str = "") -> RelayEvent: ...


class Connection:
    """Mutable per-connection state, owned by the loop thread."""

    def __init__(
        self,
        conn_id: int,
        c_reader: asyncio.StreamReader,
        c_writer: asyncio.StreamWriter,
        *,
        record: Recorder,
    ) -> None:
        self.id = conn_id
        self.c_reader = c_reader
        self.c_writer = c_writer
        self._record = record
        peer = c_writer.get_extra_info("peername")
        self.client: tuple[str, int] = (peer[0], peer[1])
        self.u_reader: asyncio.StreamReader | None = None
        self.u_writer: asyncio.StreamWriter | None = None
        self.upstream_local: tuple[str, int] | None = None
        self.bytes_up = 0
        self.bytes_down = 0
        self.data_events = 0
        self.last_upstream = time.monotonic()
        self.status = "connecting"
        self.finished = False
        #: our FIN went to the client: its leg takes no more bytes from us
        self.client_fin_sent = False
        self.last_states: dict[str, str] | None = None
        self.sample_lock = asyncio.Lock()

    def summary(self) -> RelayConnection:
        return RelayConnection(
            self.id, self.client, self.upstream_local, self.bytes_up, self.bytes_down, self.status
        )

    def record(self, leg: str, kind: str, detail: str = "") -> RelayEvent:
        return self._record(self.id, leg, kind, detail)

    def record_data(self, leg: str, kind: str, n: int, total: int) -> None:
        self.data_events += 1
        if self.data_events <= MAX_DATA_EVENTS:
            self.record(leg, kind, f"+{n} total={total}")

    # ------------------------------------------------------------------ mode actions

    def forward_fin(self) -> None:
        """Half-close the client leg; ``fin_not_forwarded`` (with why) when it cannot."""
        failure = half_close(self.c_writer)
        if failure is None:
            self.client_fin_sent = True
            self.record("client", "fin_forwarded")
        else:
            self.record("client", "fin_not_forwarded", failure)

    def forward_rst(self) -> None:
        self.abort_client()
        self.record("client", "rst_forwarded")

    def swallow(self) -> None:
        self.status = "swallowed"
        self.record("client", "swallowed", "client leg kept open and silent")

    def answer(self, data: bytes) -> bool:
        """Write ``data`` to the client leg in the upstream's place (before closing it);
        False when the leg is already closing or half-closed (asyncio raises on a write
        after ``write_eof``: it ended a pooled gateway mid-run). ``bytes_down`` stays the
        upstream's."""
        if self.client_fin_sent or self.c_writer.is_closing():
            return False
        self.c_writer.write(data)
        self.record("client", "answered", f"+{len(data)} in the upstream's place")
        return True

    # ------------------------------------------------------------------ closing

    def abort_client(self) -> None:
        abort(self.c_writer)

    def abort_upstream(self) -> None:
        if self.u_writer is not None:
            abort(self.u_writer)

    def close_all(self, *, rst: bool) -> None:
        for w in (self.c_writer, self.u_writer):
            if w is None:
                continue
            if rst:
                abort(w)
            else:
                w.close()


def half_close(writer: asyncio.StreamWriter) -> str | None:
    """Send a FIN on ``writer`` (shutdown of the write side); None when it went, else why
    not. asyncio's ``write_eof`` returns silently on a closing transport, so that is
    checked first."""
    if writer.is_closing():
        return "leg already closed"
    if not writer.can_write_eof():
        return "transport cannot half-close"
    try:
        writer.write_eof()
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def abort(writer: asyncio.StreamWriter) -> None:
    """Close with RST: SO_LINGER 0 then close."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
