"""Reading one request off a connection: its head (h11) and its body (with an upload stall).

:func:`read_head` waits for the next request head on a kept-alive connection, runs the
previous rule's idle-phase fault while the connection is idle (``Action.at_idle``) and
closes after the script's ``idle_timeout_s``; :func:`read_body` reads the body, stopping
after ``after_bytes`` for an upload stall (``Action.upload_stall``). Bad input is
answered (400/413/431) by the caller's ``bad_request``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import h11

from harness.faults import FaultScript
from harness.server.connection import Connection
from harness.server.wire import Exchange, RequestSite

__all__ = [
    "CAUTIOUS_READ_BYTES",
    "Head",
    "MAX_BODY_BYTES",
    "MAX_HEAD_BYTES",
    "has_stall",
    "read_body",
    "read_head",
]

MAX_HEAD_BYTES = 16 * 1024
MAX_BODY_BYTES = 32 * 1024 * 1024
#: While a script has a stall_upload rule, request heads are read this many bytes at a
#: time so that little of the body is pulled from the kernel before the rule is known.
CAUTIOUS_READ_BYTES = 512


@dataclass(frozen=True)
class Head:
    """One parsed request head: its parser (which reads the body next), the h11 event,
    and when its first bytes reached the kernel (``harness.tcpinfo``): the request's
    start, however late a busy loop read it."""

    parser: h11.Connection
    request: h11.Request
    arrived_t: float

    # read once each: the answer consults them at every step of the request
    @cached_property
    def method(self) -> str:
        return self.request.method.decode("latin-1")

    @cached_property
    def path(self) -> str:
        return self.request.target.decode("latin-1").split("?", 1)[0]

    @cached_property
    def keep_alive(self) -> bool:
        if self.request.http_version == b"1.0":
            return False
        return not any(
            name == b"connection" and b"close" in value.lower()
            for name, value in self.request.headers
        )


def has_stall(script: FaultScript) -> bool:
    """True when a rule of ``script`` stops reading request bodies."""
    return any(r.fault.action.upload_stall() is not None for r in script.rules)


async def read_head(
    conn: Connection,
    script: FaultScript,
    idle_fault: Exchange | None,
    record: Callable[..., Any],
    bad_request: Callable[
        [Connection, h11.RemoteProtocolError, Callable[..., Any]], Awaitable[None]
    ],
) -> Head | None:
    """Parse the next request head; None when the connection should end."""
    loop = asyncio.get_running_loop()
    cautious = has_stall(script)
    conn.allow_read(conn.bytes_in + CAUTIOUS_READ_BYTES if cautious else None)
    parser = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
    idle_deadline = None if script.idle_timeout_s is None else loop.time() + script.idle_timeout_s
    got_any = False
    eof_fed = False
    arrived_t = 0.0
    while True:
        data = conn.take_input()
        if data:
            if not got_any:
                arrived_t = conn.input_arrived_t or time.monotonic()
            parser.receive_data(data)
            got_any = True
        try:
            event = parser.next_event()
        except h11.RemoteProtocolError as exc:
            await bad_request(conn, exc, record)
            return None
        if isinstance(event, h11.Request):
            size = len(event.target) + sum(len(k) + len(v) + 4 for k, v in event.headers)
            if size > MAX_HEAD_BYTES:  # h11 only limits heads that arrive incomplete
                err = h11.RemoteProtocolError("request head too large", error_status_hint=431)
                await bad_request(conn, err, record)
                return None
            return Head(parser, event, arrived_t)
        if isinstance(event, h11.ConnectionClosed):
            return None
        # NEED_DATA
        if conn.gone:
            if not got_any or eof_fed:
                return None  # a clean close between requests (or after a half request)
            parser.receive_data(b"")
            eof_fed = True
            continue
        if got_any:
            await conn.wait_input(None)
            continue
        if idle_fault is not None:
            site = RequestSite(idle_fault, "idle", "")
            if not await idle_fault.fault.action.at_idle(site):  # type: ignore[union-attr]
                return None
            idle_fault = None
            continue
        if not await conn.wait_input(idle_deadline):
            conn.close("idle_timeout_s")
            return None


async def read_body(
    conn: Connection,
    parser: h11.Connection,
    stall: tuple[int, float | None] | None,
    record: Callable[..., Any],
    length: int | None = None,
) -> bytes | None:
    """Read the request body (None: the peer went away or sent garbage). ``length``:
    the head's validated ``Content-Length`` when it has no ``Transfer-Encoding``."""
    if stall is None and length is not None:
        return await _read_length(conn, parser, length)
    loop = asyncio.get_running_loop()
    chunks: list[bytes] = []
    size = 0
    stalled = stall is None
    after_bytes, duration_s = stall if stall is not None else (0, None)
    if stall is not None:
        conn.allow_read(conn.bytes_in + max(0, after_bytes - len(parser.trailing_data[0])))
    while True:
        try:
            event = parser.next_event()
        except h11.RemoteProtocolError:
            return None
        if isinstance(event, h11.Data):
            chunks.append(event.data)
            size += len(event.data)
            if size > MAX_BODY_BYTES:
                return None
            continue
        if isinstance(event, h11.EndOfMessage):
            leftover, _closed = parser.trailing_data
            conn.unread(leftover)
            conn.allow_read(None)
            return b"".join(chunks)
        if isinstance(event, h11.ConnectionClosed):
            return None
        # NEED_DATA
        if not stalled and size >= after_bytes:
            stalled = True
            conn.allow_read(conn.bytes_in)  # read nothing more from the kernel
            record("upload_stalled", body_bytes=size)
            deadline = None if duration_s is None else loop.time() + duration_s
            if not await conn.sleep_until(deadline):
                return None
            record("upload_resumed", body_bytes=size)
            conn.allow_read(None)
        data = conn.take_input()
        if data:
            parser.receive_data(data)
            continue
        if conn.gone:
            parser.receive_data(b"")
            continue
        if not stalled:
            conn.allow_read(conn.bytes_in + max(1, after_bytes - size))
        await conn.wait_input(None)


async def _read_length(conn: Connection, parser: h11.Connection, length: int) -> bytes | None:
    """A ``Content-Length`` body without a stall: its bytes as they come, after what h11
    holds past the head (h11's Data/EndOfMessage events for a JSON body cost about as
    much as parsing the head, and frame nothing a length does not)."""
    buf = bytearray(parser.trailing_data[0])
    while len(buf) < length:
        data = conn.take_input()
        if data:
            buf += data
        elif conn.gone:
            return None
        else:
            await conn.wait_input(None)
    conn.unread(bytes(buf[length:]))
    conn.allow_read(None)
    return bytes(buf[:length])
