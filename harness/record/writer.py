"""Write a response whose body comes as byte chunks (a cassette, a live upstream), with faults.

:func:`write_stream` sends a status line and headers, then each chunk as it comes, and
fires the exchange's body fault (``headers``, ``event:N``, ``bytes:N`` phases; see
:mod:`harness.record.cursor` for where) with the fault server's own socket moves
(``harness.server.wire.fire_connection_fault``) and timeline events. Each chunk may
carry an absolute due time (loop clock): it is written no earlier, so a replay keeps
the recorded pauses without drift; a live chunk (due None) is written when it arrives.

Framing (``FaultScript.framing``): ``chunked`` writes one HTTP chunk per body chunk, so
a client that reads chunk boundaries sees the recorded ones; ``close`` ends the body
with FIN; ``content-length`` needs the length up front (``declared``), else chunked.

What each body action does here: ``hang``/``fin``/``half_close``/``rst`` as in the
fault server; ``drip`` writes ``: comment`` lines every ``interval_s`` and no content;
``truncate`` ends the body cleanly at the cut; ``slow`` delays every following chunk
by ``delay_s`` more than the one before (``per="byte"``: ``delay_s`` per byte);
``malformed`` inserts one ``data:`` line of broken JSON at the cut and goes on. After a
terminal fault the rest of the chunks is never read (a live upstream is dropped).

Not here: where the chunks come from (``replay.py``, ``proxy.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from harness.record.cursor import StreamCursor
from harness.server.connection import PeerGone
from harness.server.wire import REASONS, Exchange, fire_connection_fault
from harness.sse import encode_comment

__all__ = ["BODY_PHASES", "ResponseHead", "UpstreamBroken", "write_stream"]

BODY_PHASES = ("headers", "event", "bytes")
TERMINAL = ("hang", "fin", "half_close", "rst", "drip", "truncate")


class UpstreamBroken(Exception):
    """The chunk source failed mid-body (upstream reset or closed early)."""


@dataclass(frozen=True)
class ResponseHead:
    """Status and end-to-end headers of a response (framing headers are added here)."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()


async def write_stream(
    ex: Exchange,
    head: ResponseHead,
    chunks: AsyncIterator[tuple[float | None, bytes]],
    *,
    declared: int | None = None,
) -> bool:
    """Send ``head`` and ``chunks`` with ``ex``'s body fault; True if the connection
    may serve another request."""
    return await _Stream(ex, head, declared).run(chunks)


class _Stop(Exception):
    """The response ended here (terminal fault, peer gone, upstream broken)."""

    def __init__(self, keep: bool = False) -> None:
        self.keep = keep


class _Stream:
    def __init__(self, ex: Exchange, head: ResponseHead, declared: int | None) -> None:
        self.ex, self.conn, self.head = ex, ex.conn, head
        self.loop = asyncio.get_running_loop()
        fault = ex.fault
        self.fault = fault if fault is not None and fault.phase.kind in BODY_PHASES else None
        self.cursor = StreamCursor(self.fault.phase if self.fault is not None else None)
        framing = ex.script.framing
        if framing == "content-length" and declared is None:
            framing = "chunked"
        self.framing, self.declared = framing, declared
        self.shift = 0.0  # extra delay of the next chunk once `slow` fired
        self.slow_step: float | None = None
        self.slow_per_byte = False
        self.sent = 0

    async def run(self, chunks: AsyncIterator[tuple[float | None, bytes]]) -> bool:
        try:
            self._write_head()
            if self.fault is not None and (
                self.fault.phase.kind == "headers" or self.cursor.fires_at_start
            ):
                self.cursor.fired = True
                await self._fire(str(self.fault.phase))
            async for due, data in chunks:
                await self._chunk(due, data)
            if self.fault is not None and not self.cursor.fired:
                self.cursor.fired = True  # past the end: fire before the terminator
                await self._fire(str(self.fault.phase))
            return await self._finish()
        except _Stop as stop:
            return stop.keep
        except PeerGone:
            return False
        except UpstreamBroken as exc:
            self.ex.record("upstream_error", error=str(exc))
            if not self.conn.lost:
                self.conn.close("upstream broken")
            return False

    def _write_head(self) -> None:
        code = self.head.status
        lines = [f"HTTP/1.1 {code} {REASONS.get(code, 'OK' if code < 400 else 'Error')}"]
        lines += [f"{k}: {v}" for k, v in self.head.headers]
        if self.framing == "chunked":
            lines.append("transfer-encoding: chunked")
        elif self.framing == "content-length":
            lines.append(f"content-length: {self.declared}")
        if self.framing == "close" or not self.ex.keep_alive:
            lines.append("connection: close")
        self.conn.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        self.ex.record("status_sent", code=code)
        self.ex.record("headers_sent", framing=self.framing)

    async def _chunk(self, due: float | None, data: bytes) -> None:
        if self.slow_step is not None:
            self.shift += self.slow_step * (len(data) if self.slow_per_byte else 1)
        if due is not None or self.shift:
            at = (self.loop.time() if due is None else due) + self.shift
            if not await self.conn.sleep_until(at):
                raise _Stop
        fed = self.cursor.feed(data)
        if fed.cut is None:
            self._write(data, fed.event_ends, 0)
        else:
            self._write(data[: fed.cut], fed.event_ends, 0)
            await self._fire(str(self.fault.phase))  # type: ignore[union-attr]
            self._write(data[fed.cut :], fed.event_ends, fed.cut)
        if self.conn.write_paused:
            await self.conn.drain()

    def _write(self, data: bytes, event_ends: Sequence[int], start: int) -> None:
        if not data:
            return
        if self.declared is not None:
            data = data[: max(0, self.declared - self.sent)]
        if self.framing == "chunked":
            self.conn.write(b"%x\r\n%b\r\n" % (len(data), data))
        else:
            self.conn.write(data)
        self.sent += len(data)
        first = self.cursor.events - len(event_ends)
        for i, end in enumerate(event_ends):
            if start < end <= start + len(data):
                self.ex.record("event_sent", n=first + i + 1)

    async def _fire(self, where: str) -> None:
        assert self.fault is not None
        action = self.fault.action
        name = action.name
        ex, conn = self.ex, self.conn
        ex.record("fault", action=name, phase=where)
        if name == "slow":
            self.slow_step = action.delay_s  # type: ignore[attr-defined]
            self.slow_per_byte = action.per == "byte"  # type: ignore[attr-defined]
            return
        if name == "malformed":
            self._write(b"data: %s\n\n" % action.payload.encode(), (), 0)  # type: ignore[attr-defined]
            return
        if name == "truncate":
            if self.framing == "close":
                await conn.flush()
                conn.half_close()
                conn.close("truncate")
                raise _Stop
            if self.framing == "chunked":
                conn.write(b"0\r\n\r\n")
            await conn.drain()
            ex.record("response_done", bytes=self.sent, truncated=True)
            if not ex.keep_alive:
                conn.close("connection: close")
            raise _Stop(keep=ex.keep_alive)
        await conn.flush()
        if name == "drip":
            await self._drip(action)
        elif name in ("hang", "fin", "half_close", "rst"):
            await fire_connection_fault(ex, where, recorded=True)
        else:
            raise ValueError(f"action {name!r} cannot fire at phase {where}")
        raise _Stop

    async def _drip(self, action: object) -> None:
        interval = action.interval_s  # type: ignore[attr-defined]
        duration = action.duration_s  # type: ignore[attr-defined]
        comment = encode_comment(action.comment)  # type: ignore[attr-defined]
        start = self.loop.time()
        end = None if duration is None else start + duration
        i = 1
        while True:
            due = start + i * interval
            i += 1
            if end is not None and due > end:
                if await self.conn.sleep_until(end):
                    self.conn.close("drip ended")
                return
            if not await self.conn.sleep_until(due):
                return
            if self.declared is not None and self.sent + len(comment) > self.declared:
                continue  # a declared length leaves no room: stay silent instead
            self._write(comment, (), 0)
            self.ex.record("comment_sent", scheduled=due)
            await self.conn.drain()

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
