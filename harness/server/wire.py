"""Byte-exact HTTP/1.1 response writers with a fault hook at every phase.

:func:`write_reply` sends one reply plan (``apis.ReplyPlan``) under the script's
framing and fires the request's fault where its phase says: ``headers`` after the
status line and headers, ``event:N`` after N counted units (see ``apis`` for what N
counts), ``bytes:N`` after exactly N body bytes -- inside an SSE event, inside a
chunk, or inside a UTF-8 sequence. :func:`fire_connection_fault` handles the
actions that need no response in progress (``accept``, ``request``, ``idle`` phases);
:func:`write_simple` sends small complete responses (errors, control API).

Framing (``FaultScript.framing``):

* ``chunked``: ``Transfer-Encoding: chunked``; one chunk per unit. A cut inside a unit
  leaves its chunk incomplete; ``truncate`` instead ends the chunk at the cut and
  sends the ``0`` terminator, so the body ends cleanly without its terminal marker.
* ``content-length``: the length is computed up front from the plan; under
  ``truncate`` it is the truncated length. Keep-alive comments are not sent (they
  would change the length); ``drip`` sends them only while they fit.
* ``close``: no length, ``Connection: close``; the body ends with FIN. A ``truncate``
  or ``fin`` here looks like a normal end of body to a client.

Timing: paced units are due at ``t0 + i * event_interval_s`` (plus ``slow`` shifts),
``t0`` being when the headers were written; each wait sleeps until the absolute
deadline, so lateness never accumulates. Keep-alive comments fill waits longer than
``keepalive_comment_s``. All waits end early when the peer goes.

What each action does here (after a terminal action the response never completes):

* ``hang``: write nothing more; after ``duration_s`` close with FIN (None: until the
  peer goes, reading and discarding whatever it sends).
* ``fin``: FIN now (buffered bytes first). ``half_close``: FIN, then keep reading until
  the peer closes. ``rst``: SO_LINGER 0 and close, so the peer gets ECONNRESET.
* ``drip``: a keep-alive unit every ``interval_s`` (an SSE comment; an ``event: ping``
  on the messages API; a JSON-legal space in a non-streamed body), never content;
  after ``duration_s`` close with FIN.
* ``slow``: not terminal; every following unit (``per="event"``) or body byte
  (``per="byte"``) is due ``delay_s`` later than the one before.
* ``malformed``: not terminal; one unit with a broken JSON data line is inserted
  before counted unit N; it is not counted.
* ``truncate``: end the body cleanly here (see framing above); the connection stays
  usable unless the body is close-delimited.
* ``status`` (accept/request phases): a complete error response, keep-alive.

What it is not: request parsing, routing and rule matching live in ``app.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from harness.faults import Fault, FaultScript
from harness.server.apis import ReplyPlan, error_body
from harness.server.connection import Connection, PeerGone

__all__ = ["Exchange", "fire_connection_fault", "status_response", "write_reply", "write_simple"]

REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    413: "Payload Too Large",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
    529: "Overloaded",
}


@dataclass
class Exchange:
    """One request/response on a connection: what the writers need to act and record."""

    conn: Connection
    record: Callable[..., Any]  # record(kind, **detail) with conn/request already bound
    script: FaultScript
    fault: Fault | None
    request_id: str
    keep_alive: bool = True


async def write_simple(
    conn: Connection,
    code: int,
    body: bytes,
    *,
    content_type: str = "application/json",
    headers: Iterable[tuple[str, str]] = (),
    keep_alive: bool = True,
    record: Callable[..., Any] | None = None,
) -> None:
    """A complete response with ``Content-Length`` (errors, models, control API)."""
    lines = [f"HTTP/1.1 {code} {REASONS.get(code, 'Error')}", f"content-type: {content_type}"]
    lines += [f"{k}: {v}" for k, v in headers]
    lines.append(f"content-length: {len(body)}")
    if not keep_alive:
        lines.append("connection: close")
    conn.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    if record is not None:
        record("status_sent", code=code)
        record("headers_sent")
    await conn.drain()
    if record is not None:
        record("response_done", bytes=len(body))
    if not keep_alive:
        conn.close("connection: close")


def status_response(
    fault_action: Any, api: str | None
) -> tuple[int, bytes, str, list[tuple[str, str]]]:
    """Code, body, content type and headers for a ``status`` action."""
    a = fault_action
    body = a.body.encode("utf-8") if a.body is not None else error_body(api, a.code, a.message)
    headers = list(a.headers)
    if a.retry_after_s is not None:
        headers.append(("retry-after", str(int(round(a.retry_after_s)))))
    elif a.retry_after is not None:
        headers.append(("retry-after", a.retry_after))
    return a.code, body, a.content_type, headers


async def fire_connection_fault(ex: Exchange, phase: str, *, recorded: bool = False) -> None:
    """Fire a ``hang``/``fin``/``half_close``/``rst`` at ``phase`` (``recorded``: the
    caller already put the ``fault`` event on the timeline)."""
    assert ex.fault is not None
    action = ex.fault.action
    if not recorded:
        ex.record("fault", action=action.name, phase=phase)
    loop = asyncio.get_running_loop()
    conn = ex.conn
    if action.name == "hang":
        duration = getattr(action, "duration_s", None)
        done = await conn.wait_gone(None if duration is None else loop.time() + duration)
        if not done:
            conn.close("hang ended")
        else:
            conn.close("peer gone")
    elif action.name == "fin":
        conn.half_close()
        conn.close("fin")
    elif action.name == "half_close":
        conn.half_close()
        await conn.wait_gone(None)
        conn.close("peer gone")
    elif action.name == "rst":
        conn.reset("rst")
    else:  # app.py only routes the actions above here
        raise ValueError(f"action {action.name!r} cannot fire at phase {phase}")


async def write_reply(ex: Exchange, plan: ReplyPlan) -> bool:
    """Send ``plan`` with the exchange's fault; True when the connection may be reused."""
    return await _Reply(ex, plan).run()


# --------------------------------------------------------------------------- helpers


class _Closed(Exception):
    """The response ended with the connection (fault fired, or peer gone)."""


class _Truncated(Exception):
    """The body was ended cleanly before its terminal marker."""


class _Reply:
    """State of one body being written; see the module docstring for the rules."""

    def __init__(self, ex: Exchange, plan: ReplyPlan) -> None:
        self.ex = ex
        self.conn = ex.conn
        self.plan = plan
        self.script = ex.script
        self.framing = ex.script.framing
        self.loop = asyncio.get_running_loop()
        fault = ex.fault
        self.fault = (
            fault
            if fault is not None and fault.phase.kind in ("headers", "event", "bytes")
            else None
        )
        self.fired = False
        self.sent = 0  # body bytes (framing excluded)
        self.last_write = 0.0
        self.event_shift = 0.0  # extra delay per event after a `slow` fired
        self.slow_from: int | None = None
        self.byte_delay = 0.0
        self.next_byte_at = 0.0
        self.cut = fault.phase.n if self.fault is not None and fault.phase.kind == "bytes" else None
        self.declared: int | None = None
        self.counted = 0  # counted units fully written
        self.in_unit = False
        # malformed is an insert, not a cut: a broken unit placed before counted unit N
        units: list[tuple[bytes, bool]] = [(u, True) for u in plan.units]
        if self.fault is not None and self.fault.action.name == "malformed":
            n = min(self.fault.phase.n or 0, len(units))
            units.insert(n + 0, (plan.malformed(self.fault.action.payload), False))
        self.units = units

    # ------------------------------------------------------------------ flow

    async def run(self) -> bool:
        try:
            return await self._run()
        except _Closed:
            return False
        except _Truncated:
            return self.framing != "close" and self.ex.keep_alive
        except PeerGone:
            return False

    async def _run(self) -> bool:
        ex, conn, script = self.ex, self.conn, self.script
        if script.first_byte_delay_s > 0:
            if not await conn.sleep_until(self.loop.time() + script.first_byte_delay_s):
                raise _Closed
        self.declared = self._declared_length() if self.framing == "content-length" else None
        conn.write(self._head())
        ex.record("status_sent", code=200)
        ex.record("headers_sent", framing=self.framing)
        self.last_write = t0 = self.loop.time()
        if self._due("headers"):
            await self._fire("headers")
        counted = 0
        for data, is_counted in self.units:
            self.counted = counted
            if is_counted:
                if self._due("event", counted):
                    await self._fire(f"event:{counted}")
                scheduled = t0 + counted * script.event_interval_s
                if self.slow_from is not None and counted >= self.slow_from:
                    scheduled += self.event_shift * (counted - self.slow_from + 1)
                await self._wait_until(scheduled)
                await self._unit(data)
                counted += 1
                if script.event_interval_s > 0 or self.event_shift:
                    ex.record("event_sent", n=counted, scheduled=scheduled)
                else:
                    ex.record("event_sent", n=counted)
            else:
                if self.fault is not None and self.fault.action.name == "malformed":
                    ex.record("fault", action="malformed", phase=str(self.fault.phase))
                    self.fired = True
                await self._unit(data)
        if self._due("event", counted) or (self.cut is not None and not self.fired):
            await self._fire(f"event:{counted}" if self.cut is None else f"bytes:{self.cut}")
        return await self._finish()

    async def _finish(self) -> bool:
        if self.framing == "chunked":
            self.conn.write(b"0\r\n\r\n")
        await self.conn.drain()
        self.ex.record("response_done", bytes=self.sent)
        if self.framing == "close" or not self.ex.keep_alive:
            self.conn.close(
                "close-delimited body" if self.framing == "close" else "connection: close"
            )
            return False
        return True

    # ------------------------------------------------------------------ writing

    def _head(self) -> bytes:
        lines = [
            "HTTP/1.1 200 OK",
            f"content-type: {self.plan.content_type}",
            "cache-control: no-cache",
            f"x-request-id: {self.ex.request_id}",
        ]
        if self.framing == "chunked":
            lines.append("transfer-encoding: chunked")
        elif self.framing == "content-length":
            lines.append(f"content-length: {self.declared}")
        if self.framing == "close" or not self.ex.keep_alive:
            lines.append("connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _unit(self, data: bytes) -> None:
        """Write one unit, cutting at ``bytes:N`` and trickling under a per-byte ``slow``."""
        chunked = self.framing == "chunked"
        if self.declared is not None:
            data = data[: max(0, self.declared - self.sent)]
            if not data:
                return
        if not self.byte_delay and (
            self.cut is None or self.fired or self.cut >= self.sent + len(data)
        ):
            # the common case: one write (one syscall) for the whole framed unit
            self.conn.write(b"%x\r\n%b\r\n" % (len(data), data) if chunked else data)
            self.sent += len(data)
            self.last_write = self.loop.time()
            if self.conn.write_paused:
                await self.conn.drain()
            return
        pos = 0
        truncate_cut = (
            self.cut is not None
            and not self.fired
            and self.fault is not None
            and self.fault.action.name == "truncate"
            and self.sent <= self.cut < self.sent + len(data)
        )
        if truncate_cut:
            data = data[: self.cut - self.sent]  # the chunk ends where the body is cut
        if self.cut is not None and not self.fired and self.sent == self.cut:
            await self._fire(f"bytes:{self.cut}")  # at a unit boundary: before its chunk header
        if chunked and data:
            self.conn.write(b"%x\r\n" % len(data))
        self.in_unit = True
        while pos < len(data):
            if self.cut is not None and not self.fired and self.sent == self.cut:
                await self._fire(f"bytes:{self.cut}")
            end = len(data)
            if self.cut is not None and not self.fired and self.sent < self.cut:
                end = min(end, pos + self.cut - self.sent)
            if self.byte_delay:
                end = pos + 1
                self.next_byte_at += self.byte_delay
                await self._wait_until(self.next_byte_at, keepalive=False)
            self.conn.write(data[pos:end])
            self.sent += end - pos
            pos = end
        if chunked and data:
            self.conn.write(b"\r\n")
        self.in_unit = False
        self.last_write = self.loop.time()
        await self.conn.drain()
        if truncate_cut:
            await self._fire(f"bytes:{self.cut}")

    async def _wait_until(self, deadline: float, *, keepalive: bool = True) -> None:
        ka = self.script.keepalive_comment_s
        if keepalive and ka and self.framing != "content-length":
            while self.last_write + ka < deadline:
                if not await self.conn.sleep_until(self.last_write + ka):
                    raise _Closed
                self._keepalive(self.plan.keepalive)
        if not await self.conn.sleep_until(deadline):
            raise _Closed

    def _keepalive(self, data: bytes, scheduled: float | None = None) -> bool:
        """Write a keep-alive unit (never counted); False if it would overflow a declared length."""
        if self.declared is not None:
            if self.sent + len(data) > self.declared:
                return False
        if self.framing == "chunked":
            self.conn.write(b"%x\r\n%s\r\n" % (len(data), data))
        else:
            self.conn.write(data)
        self.sent += len(data)
        self.last_write = self.loop.time()
        if scheduled is None:
            self.ex.record("comment_sent")
        else:
            self.ex.record("comment_sent", scheduled=scheduled)
        return True

    # ------------------------------------------------------------------ faults

    def _due(self, kind: str, n: int | None = None) -> bool:
        f = self.fault
        return f is not None and not self.fired and f.phase.kind == kind and f.phase.n == n

    async def _fire(self, where: str) -> None:
        """Fire the fault here; returns only for non-terminal actions."""
        assert self.fault is not None
        self.fired = True
        action = self.fault.action
        name = action.name
        self.ex.record("fault", action=name, phase=where)
        conn = self.conn
        if name == "slow":
            if action.per == "byte":
                self.byte_delay = action.delay_s
                self.next_byte_at = self.loop.time()
            else:
                self.event_shift = action.delay_s
                self.slow_from = self.counted + (1 if self.in_unit else 0)
            return
        if name == "malformed":  # written as an insert by run(); nothing to do here
            return
        if name == "truncate":
            if self.framing == "close":
                await conn.flush()
                conn.half_close()
                conn.close("truncate")
                raise _Closed
            if self.framing == "chunked":
                conn.write(b"0\r\n\r\n")
            await conn.drain()
            self.ex.record("response_done", bytes=self.sent, truncated=True)
            if not self.ex.keep_alive:
                conn.close("connection: close")
            raise _Truncated
        await conn.flush()
        if name == "drip":
            await self._drip(action)
        elif name in ("hang", "fin", "half_close", "rst"):
            await fire_connection_fault(self.ex, where, recorded=True)
        else:
            raise ValueError(f"action {name!r} cannot fire at phase {where}")
        raise _Closed

    async def _drip(self, action: Any) -> None:
        comment = self.plan.drip(action.comment)
        start = self.loop.time()
        end = None if action.duration_s is None else start + action.duration_s
        i = 1
        while True:
            due = start + i * action.interval_s
            if end is not None and due > end:
                if await self.conn.sleep_until(end):
                    self.conn.close("drip ended")
                return
            if not await self.conn.sleep_until(due):
                return
            self._keepalive(comment, scheduled=due)
            await self.conn.drain()
            i += 1

    def _declared_length(self) -> int:
        total = sum(len(u) for u, _ in self.units)
        f = self.fault
        if f is None or f.action.name != "truncate":
            return total
        if f.phase.kind == "headers":
            return 0
        if f.phase.kind == "bytes":
            return min(f.phase.n or 0, total)
        n, size = 0, 0
        for data, counted in self.units:
            if counted and n == f.phase.n:
                break
            size += len(data)
            n += counted
        return size
