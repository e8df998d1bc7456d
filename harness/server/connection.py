"""One accepted socket as seen by the fault server: bytes in, bytes out, and how it ends.

:class:`Connection` is an ``asyncio.BufferedProtocol`` so the server decides exactly
how many bytes it pulls from the kernel (``allow_read``): that is what makes
``stall_upload`` stop at a byte count and leave the rest of the body in the client's
send buffer. It offers the socket-level moves every fault is built from -- write,
drain, sleep until an absolute deadline unless the peer goes, FIN, half-close, RST
-- and reports ``peer_closed`` / ``peer_reset`` / ``closed`` to the timeline.

Writes coalesce within one step of the writer: the first write after the writer
resumed goes to the transport at once (a paced event is sent when it is written), and
writes that follow it without a suspension in between (a burst of due events) are
joined and handed to the transport together -- when the writer next waits, drains,
flushes, closes or resets, when ``COALESCE_BYTES`` are pending, or at the latest on the
loop's next turn. The peer receives the same bytes in the same order; a burst costs
one ``send()`` instead of one per event.

It knows nothing about HTTP, SSE or fault scripts (``wire.py`` and ``app.py`` do).
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Callable
from typing import Any

from harness.tcpinfo import received_at

__all__ = ["Connection", "PeerGone"]

#: Bytes pulled from the kernel per read when nothing limits reading.
READ_CHUNK = 64 * 1024
#: Unconsumed input above which the socket is paused (back-pressure on the client).
INPUT_HIGH_WATER = 1024 * 1024
#: Pending coalesced bytes above which they are handed to the transport at once (so its
#: write buffer limits, and ``write_paused``, still apply to a long burst).
COALESCE_BYTES = 64 * 1024


class PeerGone(Exception):
    """The peer closed or reset the connection, or the server closed it."""


class Connection(asyncio.BufferedProtocol):
    """Socket-level state of one accepted connection; see the module docstring."""

    def __init__(
        self,
        on_made: Callable[[Connection], None],
        record: Callable[..., Any],
        *,
        read_limit: int | None = None,
        read_buffer: bytearray | None = None,
    ) -> None:
        self._on_made = on_made
        self._record = record  # record(kind, **detail) -> timeline, conn/request filled by caller
        self.transport: asyncio.Transport | None = None
        self.inbuf = bytearray()
        #: When the kernel received the oldest bytes of ``inbuf`` (``harness.tcpinfo``):
        #: a request's arrival, however late the loop reads it.
        self.input_arrived_t: float | None = None
        self._sock: Any = None
        #: The client's port (its socket's local port): how a client-side socket read
        #: by ``harness.posture`` is tied to this connection. 0: unknown.
        self.peer_port = 0
        self.bytes_in = 0
        self.bytes_out = 0
        self.eof = False
        self.lost = False
        self.closing = False
        self._read_limit = read_limit  # absolute bytes_in we may read up to (None: no limit)
        self._paused = False
        # recv_into target; buffer_updated copies out of it at once, so all connections
        # of one event loop can share one (a 64 KB buffer each would cost 64 MB at 1000)
        self._buf = read_buffer if read_buffer is not None else bytearray(READ_CHUNK)
        self._input_waiter: asyncio.Future[None] | None = None
        self._gone_waiter: asyncio.Future[None] | None = None
        #: The transport's buffer is above its high-water mark: ``drain()`` before more.
        #: (An attribute, not a property: it is read once per paced event.)
        self.write_paused = False
        self._write_stopped = False  # write() refused: the transport was already closing
        self._drain_waiter: asyncio.Future[None] | None = None
        self._loop = asyncio.get_running_loop()
        self._fresh = True  # no write since the writer last resumed from a wait
        self._out: list[bytes] = []  # coalesced writes not yet handed to the transport
        self._out_bytes = 0
        self._push_handle: asyncio.Handle | None = None

    # ------------------------------------------------------------------ protocol callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        peer = transport.get_extra_info("peername")
        self.peer_port = int(peer[1]) if isinstance(peer, tuple) and len(peer) >= 2 else 0
        self._on_made(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        n = READ_CHUNK
        if self._read_limit is not None:
            n = max(1, min(n, self._read_limit - self.bytes_in))
        return memoryview(self._buf)[:n]

    def buffer_updated(self, nbytes: int) -> None:
        if not self.inbuf:  # the first bytes of new input: one getsockopt per request
            self.input_arrived_t = received_at(self._sock)
        self.inbuf += self._buf[:nbytes]
        self.bytes_in += nbytes
        if (self._read_limit is not None and self.bytes_in >= self._read_limit) or len(
            self.inbuf
        ) > INPUT_HIGH_WATER:
            self._pause()
        _wake(self._input_waiter)

    def eof_received(self) -> bool:
        self.eof = True
        if not self.closing:
            self._record("peer_closed", bytes_in=self.bytes_in, bytes_out=self.bytes_out)
        _wake(self._input_waiter)
        _wake(self._gone_waiter)
        return True  # keep our write side open: a half-closed peer may still read

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._out.clear()
        if not self.closing:
            if isinstance(exc, ConnectionResetError):
                self._record("peer_reset", bytes_in=self.bytes_in, bytes_out=self.bytes_out)
            elif exc is not None:
                self._record(
                    "peer_reset",
                    error=type(exc).__name__,
                    bytes_in=self.bytes_in,
                    bytes_out=self.bytes_out,
                )
        _wake(self._input_waiter)
        _wake(self._gone_waiter)
        _wake(self._drain_waiter)

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        _wake(self._drain_waiter)

    # ------------------------------------------------------------------ reading

    @property
    def gone(self) -> bool:
        """The peer sent FIN or the connection is lost."""
        return self.eof or self.lost

    def allow_read(self, limit: int | None) -> None:
        """Read from the kernel only up to ``limit`` total bytes (None: no limit)."""
        self._read_limit = limit
        if limit is None or self.bytes_in < limit:
            if len(self.inbuf) <= INPUT_HIGH_WATER:
                self._resume()
        else:
            self._pause()

    def take_input(self) -> bytes:
        data = bytes(self.inbuf)
        self.inbuf.clear()
        if self._paused and (self._read_limit is None or self.bytes_in < self._read_limit):
            self._resume()
        return data

    def unread(self, data: bytes) -> None:
        """Put back bytes a parser did not consume (they precede anything newer)."""
        if data:
            self.inbuf[:0] = data

    async def wait_input(self, deadline: float | None = None) -> bool:
        """Wait until input is buffered or the peer goes; False if ``deadline`` passed first."""
        if self.inbuf or self.gone:
            return True
        if self._read_limit is not None and self.bytes_in >= self._read_limit:
            self._read_limit += 1024  # a parser that waits for input needs more bytes
            self._resume()
        return await self._wait("_input_waiter", deadline)

    async def sleep_until(self, deadline: float | None) -> bool:
        """Sleep until ``deadline`` (loop time; None: until the peer goes); False if
        the peer went away first. A peer's FIN is only seen while reading is allowed."""
        if self.gone:
            return False
        if deadline is not None and deadline <= self._loop.time():
            return True
        await self._wait("_gone_waiter", deadline)
        return not self.gone

    async def wait_gone(self, deadline: float | None) -> bool:
        """Read and discard input until the peer goes; False if ``deadline`` passed first."""
        while not self.gone:
            self.inbuf.clear()
            self._read_limit = None
            self._resume()
            if not await self._wait("_input_waiter", deadline) and not self.gone:
                return False
        self.inbuf.clear()
        return True

    # ------------------------------------------------------------------ writing

    def write(self, data: bytes) -> None:
        if self.lost or self.closing or self.transport is None:
            raise PeerGone("connection is closed")
        if self.transport.is_closing():
            # A send failed (EPIPE / ECONNRESET): asyncio closed the transport and reports
            # connection_lost on its next turn. Writing on meanwhile (a drip catching up)
            # only makes asyncio log "socket.send() raised exception." once per write.
            if not self._write_stopped:
                self._write_stopped = True
                self._record("write_stopped", bytes_in=self.bytes_in, bytes_out=self.bytes_out)
            raise PeerGone("connection is closing")
        self.bytes_out += len(data)
        if self._fresh and not self._out:  # never ahead of bytes already coalesced
            self._fresh = False
            self.transport.write(data)
            return
        self._out.append(data)
        self._out_bytes += len(data)
        if self._out_bytes >= COALESCE_BYTES:
            self._push()
        elif self._push_handle is None:
            self._push_handle = self._loop.call_soon(self._push)

    def send_now(self, data: bytes) -> None:
        """Write ``data`` and hand it to the transport at once (after coalesced bytes)."""
        if self._out:
            self._push()
        transport = self.transport
        if self.lost or self.closing or transport is None or transport.is_closing():
            self._fresh = True
            self.write(data)  # raises PeerGone, as a fresh write would
            return
        # what write() does for a fresh write, inline: this is once per paced event
        self.bytes_out += len(data)
        self._fresh = False
        transport.write(data)

    def watch_gone(self, fut: asyncio.Future[Any] | None) -> None:
        """Wake ``fut`` when the peer goes, as a sleep is woken (``pacing.py`` waits on
        its own future); ``None`` ends the watch, and the writer counts as resumed."""
        if fut is None:
            self._fresh = True
        else:
            self._push()
        self._gone_waiter = fut

    async def drain(self) -> None:
        self._push()
        if self.lost:
            raise PeerGone("connection is closed")
        while self.write_paused and not self.lost:
            await self._wait("_drain_waiter", None)
        if self.lost:
            raise PeerGone("connection is closed")

    async def flush(self) -> None:
        """Wait until the transport's buffer reached the kernel (before RST or close)."""
        self._push()
        if self.transport is None or self.lost or not self.transport.get_write_buffer_size():
            return
        # Limits of 0 make the transport call pause_writing now and resume_writing
        # exactly when its buffer is empty: an event, not a poll.
        self.transport.set_write_buffer_limits(high=0, low=0)
        try:
            await self.drain()
        finally:
            if not self.lost:
                self.transport.set_write_buffer_limits()

    # ------------------------------------------------------------------ ending

    def close(self, reason: str = "closed") -> None:
        """Close with FIN (after buffered data is sent)."""
        self._push()
        if self.transport is not None and not self.closing and not self.lost:
            self.closing = True
            self.transport.close()
            self._record(
                "closed", how="fin", reason=reason, bytes_in=self.bytes_in, bytes_out=self.bytes_out
            )
        self.closing = True

    def half_close(self) -> None:
        """Shut down our write side (FIN); keep reading."""
        self._push()
        if self.transport is not None and not self.lost and self.transport.can_write_eof():
            try:
                self.transport.write_eof()
            except OSError as exc:  # the peer went first (ENOTCONN): its close is the record
                self._record("write_eof_failed", error=f"{type(exc).__name__}: {exc}")

    def reset(self, reason: str = "rst") -> None:
        """Abort with SO_LINGER 0 so the peer gets RST / ECONNRESET."""
        self._push()  # written bytes get their send attempt before the RST, as unbuffered
        if self.transport is None or self.lost or self.closing:
            self.closing = True
            return
        self.closing = True
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()
        self._record(
            "closed", how="rst", reason=reason, bytes_in=self.bytes_in, bytes_out=self.bytes_out
        )

    # ------------------------------------------------------------------ helpers

    def _pause(self) -> None:
        if not self._paused and self.transport is not None and not self.lost:
            self._paused = True
            self.transport.pause_reading()

    def _resume(self) -> None:
        if self._paused and self.transport is not None and not self.lost and not self.closing:
            self._paused = False
            self.transport.resume_reading()

    def _push(self) -> None:
        """Hand the coalesced writes to the transport (one ``write``, one ``send()``)."""
        if self._push_handle is not None:
            self._push_handle.cancel()
            self._push_handle = None
        if not self._out:
            return
        data = b"".join(self._out) if len(self._out) > 1 else self._out[0]
        self._out.clear()
        self._out_bytes = 0
        transport = self.transport
        if transport is None or self.lost:
            return
        if transport.is_closing():  # a send failed meanwhile: as write() would have seen
            if not self._write_stopped:
                self._write_stopped = True
                self._record("write_stopped", bytes_in=self.bytes_in, bytes_out=self.bytes_out)
            return
        transport.write(data)

    async def _wait(self, slot: str, deadline: float | None) -> bool:
        self._push()
        fut = self._loop.create_future()
        setattr(self, slot, fut)
        handle = self._loop.call_at(deadline, _timeout, fut) if deadline is not None else None
        try:
            return await fut
        finally:
            self._fresh = True
            setattr(self, slot, None)
            if handle is not None:
                handle.cancel()


def _wake(fut: asyncio.Future[Any] | None) -> None:
    if fut is not None and not fut.done():
        fut.set_result(True)


def _timeout(fut: asyncio.Future[Any]) -> None:
    if not fut.done():
        fut.set_result(False)
