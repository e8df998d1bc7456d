"""Write a response whose body comes as byte chunks (a cassette, a live upstream), with faults.

:func:`write_stream` sends a status line and headers, then each chunk as it comes, and
fires the exchange's body fault (``headers``, ``event:N``, ``bytes:N`` phases; see
:mod:`harness.record.cursor` for where) on a :class:`_StreamSite`, the fault model's
``Site`` shape (the connection's moves, the timeline, the body's knobs), recording the
fault server's timeline events. Each chunk may
carry an absolute due time (loop clock): it is written no earlier, so a replay keeps
the recorded pauses without drift; a live chunk (due None) is written when it arrives.

Framing (``FaultScript.framing``): ``chunked`` writes one HTTP chunk per body chunk, so
a client that reads chunk boundaries sees the recorded ones; ``close`` ends the body
with FIN; ``content-length`` needs the length up front (``declared``), else chunked.

What a body action does here is its own ``fire`` hook (``harness.faults.actions``),
exactly as on the fault server; ``slow`` delays every following chunk by ``delay_s``
more than the one before (``per="byte"``: ``delay_s`` per byte). A payload action
(``drop_event``, ``inband_error``, ``malformed``, ...) edits the stream's units through
its ``edit_units`` hook from counted unit N on (:mod:`harness.record.edits`); the
edited part is written one HTTP chunk per unit, and a ``content-length`` body is sent
chunked (its length is not known up front). After a terminal fault the rest of the
chunks is never read (a live upstream is dropped).

Not here: where the chunks come from (``replay.py``, ``proxy.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from harness.faults.units import Unit
from harness.record.cursor import StreamCursor
from harness.record.edits import UnitEditor, is_payload
from harness.server.apis import error_body
from harness.server.connection import PeerGone
from harness.server.wire import REASONS, Exchange, end_body, framing_lines
from harness.sse import encode_comment

__all__ = ["BODY_PHASES", "ResponseHead", "UpstreamBroken", "write_stream"]

BODY_PHASES = ("headers", "event", "bytes")


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
    api: str | None = None,
) -> bool:
    """Send ``head`` and ``chunks`` with ``ex``'s body fault; True if the connection
    may serve another request. ``api`` (chat, responses, messages; None: unknown) is
    the request's, for payload faults."""
    return await _Stream(ex, head, declared, api).run(chunks)


class _Stop(Exception):
    """The response ended here (terminal fault, peer gone, upstream broken)."""

    def __init__(self, keep: bool = False) -> None:
        self.keep = keep


class _Stream:
    def __init__(
        self, ex: Exchange, head: ResponseHead, declared: int | None, api: str | None
    ) -> None:
        self.ex, self.conn, self.head, self.api = ex, ex.conn, head, api
        self.loop = asyncio.get_running_loop()
        fault = ex.fault
        self.fault = fault if fault is not None and fault.phase.kind in BODY_PHASES else None
        self.cursor = StreamCursor(self.fault.phase if self.fault is not None else None)
        self.payload = self.fault is not None and is_payload(self.fault.action)
        self.editor: UnitEditor | None = None  # set where a payload fault starts editing
        framing = ex.script.framing
        if self.payload:
            declared = None  # the edit changes the length
        if framing == "content-length" and declared is None:
            framing = "chunked"
        self.framing, self.declared = framing, declared
        self.shift = 0.0  # extra delay of the next replayed chunk once `slow` fired
        self.last_due: float | None = None
        self.slow_step: float | None = None
        self.slow_per_byte = False
        self.sent = 0
        self._written = 0  # counted units sent once a payload edit began

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
            if self.editor is not None:
                await self._edited(self.editor.finish())
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
        lines += framing_lines(self.framing, self.declared, keep_alive=self.ex.keep_alive)
        self.conn.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        self.ex.record("status_sent", code=code)
        self.ex.record("headers_sent", framing=self.framing)

    async def _chunk(self, due: float | None, data: bytes) -> None:
        step = 0.0
        if self.slow_step is not None:
            step = self.slow_step * (len(data) if self.slow_per_byte else 1)
        if due is not None:
            # a replayed chunk is due at its recorded offset, plus the `slow` shift so far
            self.shift += step
            at = due + self.shift
        elif step:
            # a live chunk is pulled when the last one went out: due one step after that
            # one was *due* (not after it was written), so the delay never compounds
            at = max(self.loop.time(), (self.last_due or self.loop.time()) + step)
        else:
            at = None
        if at is not None:
            self.last_due = at
            if not await self.conn.sleep_until(at):
                raise _Stop
        if self.editor is not None:
            await self._edited(self.editor.feed(data))
            return
        fed = self.cursor.feed(data)
        if fed.cut is None:
            self._write(data, fed.event_ends, 0)
        elif self.payload:
            self._write(data[: fed.cut], fed.event_ends, 0)
            await self._fire(str(self.fault.phase))  # type: ignore[union-attr]
            await self._edited(self.editor.feed(data[fed.cut :]))  # type: ignore[union-attr]
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
                if self.last_due is None:
                    self.ex.record("event_sent", n=first + i + 1)
                else:  # paced (a replay, or `slow`): the timeline shows the schedule too
                    self.ex.record("event_sent", n=first + i + 1, scheduled=self.last_due)

    async def _fire(self, where: str) -> None:
        """Fire the fault here; returns only for actions that let the body go on."""
        assert self.fault is not None
        action = self.fault.action
        self.ex.record("fault", action=action.name, phase=where)
        if self.payload:  # from here on the units go through the action's edit
            self.editor = UnitEditor(action, api=self.api, stream=self._is_sse())
            self._written = self.cursor.events
            await self._edited(self.editor.start())
            return
        site = _StreamSite(self, where)
        if action.terminal and not action.ends_body_cleanly:
            await self.conn.flush()  # what was written reaches the peer before FIN or RST
        await action.fire(site)
        if action.terminal:
            raise _Stop(keep=site.kept)

    async def _edited(self, units: list[Unit]) -> None:
        """Write the editor's units; once its edit ended the body, fire the action."""
        editor = self.editor
        assert editor is not None
        for data, counted in units:
            if counted:
                self._written += 1
                self._write(data, (), 0)
                self.ex.record("event_sent", n=self._written, edited=True)
            elif data:
                self._write(data, (), 0)
        if editor.ended:  # the rest of the stream is never read
            action = editor.action
            site = _StreamSite(self, f"event:{self._written}")
            if not action.ends_body_cleanly:
                await self.conn.flush()
            await action.fire(site)
            raise _Stop(keep=site.kept)

    def _is_sse(self) -> bool:
        ctype = next((v for k, v in self.head.headers if k.lower() == "content-type"), "")
        return "event-stream" in ctype

    async def _finish(self) -> bool:
        return await end_body(self.ex, self.framing, self.sent)


class _StreamSite:
    """Where an action fires inside a streamed body: the shape of the fault model's
    ``Site`` (issue 12: ``harness.faults.base.Site``), so that the body-phase actions
    can run their own registered behaviour here once they carry it."""

    def __init__(self, stream: _Stream, phase: str) -> None:
        self._stream = stream
        self.phase = phase
        self.api = "unknown"
        self.conn = stream.conn
        self.kept = False  # the connection may serve another request (after truncate)

    def now(self) -> float:
        return self._stream.loop.time()

    def record(self, kind: str, **detail: Any) -> None:
        self._stream.ex.record(kind, **detail)

    def ending(self) -> None:
        """Nothing to do: the request was recorded before its reply began."""

    async def respond(
        self, code: int, body: bytes, content_type: str, headers: Sequence[tuple[str, str]]
    ) -> None:
        raise RuntimeError(f"the response is under way at phase {self.phase}")  # phases forbid it

    def error_body(self, code: int, message: str) -> bytes:
        return error_body(None, code, message)

    async def end_body(self) -> None:
        """End the body cleanly here, without whatever terminal marker was to come."""
        s = self._stream
        self.kept = await end_body(s.ex, s.framing, s.sent, truncated=True, reason="truncate")

    def keepalive_unit(self, comment: str) -> bytes:
        return encode_comment(comment)

    async def write_keepalive(self, data: bytes, scheduled: float) -> None:
        s = self._stream
        if s.declared is not None and s.sent + len(data) > s.declared:
            return  # a declared length leaves no room: stay silent instead
        s._write(data, (), 0)
        s.ex.record("comment_sent", scheduled=scheduled)
        await self.conn.drain()

    def slow_events(self, delay_s: float) -> None:
        self._stream.slow_step, self._stream.slow_per_byte = delay_s, False

    def slow_bytes(self, delay_s: float) -> None:
        self._stream.slow_step, self._stream.slow_per_byte = delay_s, True
