"""One streamed or JSON reply body on the wire, with the rule's fault fired at its phase.

:func:`write_reply` sends one reply plan (``apis.ReplyPlan``) under the script's
framing and fires the request's fault where its phase says: ``headers`` after the
status line and headers, ``event:N`` after N counted units (see ``apis`` for what N
counts), ``bytes:N`` after exactly N body bytes -- inside an SSE event, inside a
chunk, or inside a UTF-8 sequence. What the fault *does* is its action's ``fire``
(``harness.faults.actions``); :class:`BodyWriter` is the :class:`~harness.faults.Site`
it acts on. Payload faults edit the plan's units once, before the first byte
(``Action.edit_units``), so the per-event loop stays a plain write per unit.

Framing (``FaultScript.framing``):

* ``chunked``: ``Transfer-Encoding: chunked``; one chunk per unit. A cut inside a unit
  leaves its chunk incomplete; an action that ends the body cleanly (``truncate``)
  instead ends the chunk at the cut and sends the ``0`` terminator.
* ``content-length``: the length is computed up front from the plan; under
  ``truncate`` it is the truncated length. Keep-alive comments are not sent (they
  would change the length); ``drip`` sends them only while they fit.
* ``close``: no length, ``Connection: close``; the body ends with FIN. A ``truncate``
  or ``fin`` here looks like a normal end of body to a client.

Timing: paced units are due at ``t0 + i * event_interval_s`` (plus ``slow`` shifts),
``t0`` being when the headers were written; each wait sleeps until the absolute
deadline, so lateness never accumulates. A healthy stretch (``pacing.write_due``) may
write a unit up to ``pacing.PACE_QUANTUM_S`` (2 ms) before its time, so that paced
streams share loop wake-ups; fault points stay at their event counts, and drips,
stalls and hangs keep their own timers. Keep-alive comments fill waits longer than
``keepalive_comment_s``. All waits end early when the peer goes.

Not here: request parsing and routing (``requests.py``), the actions' behaviour.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from typing import Any

from harness.server.apis import ReplyPlan
from harness.server.connection import PeerGone
from harness.server.holds import stop_before_hold, wait_if_held
from harness.server.pacing import plan_stretch, write_due
from harness.server.wire import Exchange, declared_length, end_body, framing_lines

__all__ = ["BodyWriter", "write_reply"]

BODY_PHASES = ("headers", "event", "bytes")


async def write_reply(ex: Exchange, plan: ReplyPlan) -> bool:
    """Send ``plan`` with the exchange's fault; True when the connection may be reused."""
    return await BodyWriter(ex, plan).run()


class _Closed(Exception):
    """The response ended with the connection (fault fired, or peer gone)."""


class _Truncated(Exception):
    """The body was ended cleanly before its terminal marker."""


class BodyWriter:
    """State of one body being written; the :class:`~harness.faults.Site` of body faults."""

    def __init__(self, ex: Exchange, plan: ReplyPlan) -> None:
        self.ex = ex
        self.conn = ex.conn
        self.plan = plan
        self.api = plan.api
        self.script = ex.script
        self.framing = ex.script.framing
        self.loop = asyncio.get_running_loop()
        fault = ex.fault
        self.fault = fault if fault is not None and fault.phase.kind in BODY_PHASES else None
        if self.fault is not None and not self.fault.action.applies(plan):
            self._void("nothing in this reply to act on")  # a cut of no tool call
        self.action = self.fault.action if self.fault is not None else None
        self.phase = ""
        self.fired = False
        self.sent = 0  # body bytes (framing excluded)
        self.last_write = 0.0
        self.event_shift = 0.0  # extra delay per event after a `slow` fired
        self.slow_from: int | None = None
        self.byte_delay = 0.0
        self.next_byte_at = 0.0
        self.cut = (
            self.fault.phase.n
            if self.fault is not None and self.fault.phase.kind == "bytes"
            else None
        )
        self.declared: int | None = None
        self.counted = 0  # counted units fully written
        self.in_unit = False
        kinds = plan.kinds or ("",) * len(plan.units)
        # a dialect's comment lines are part of the healthy bytes but never counted
        units = [(u, k != "comment") for u, k in zip(plan.units, kinds, strict=True)]
        if self.action is not None:
            edited = self.action.edit_units(units, self.fault.phase.n or 0, plan)  # type: ignore[union-attr]
            if self.action.edit_only and edited == units:
                # the edit is the whole fault: one that changes nothing never fired
                self._void(f"the reply has {sum(c for _, c in units)} event(s): nothing to edit")
                self.action = None
            units = edited
        self.units = units
        #: payload edits that end the body where their units stop fire after the last one
        self.at_end = self.action is not None and self.action.fires_at_end

    def _void(self, reason: str) -> None:
        """The matched fault has nothing to act on in this reply: it goes out healthy,
        and the timeline says why the fault did not fire (``harness.contract.reach``)."""
        assert self.fault is not None
        self.ex.record("fault_void", fault=str(self.fault), reason=reason)
        self.fault = None

    # ------------------------------------------------------------------ Site

    def now(self) -> float:
        return self.loop.time()

    def record(self, kind: str, **detail: Any) -> None:
        self.ex.record(kind, **detail)

    def ending(self) -> None:
        return None  # the request was recorded before its reply began

    async def end_body(self) -> None:
        """End the body cleanly here, without its terminal marker."""
        name = self.action.name if self.action is not None else "end of body"
        await end_body(self.ex, self.framing, self.sent, truncated=True, reason=name)
        raise _Closed if self.framing == "close" else _Truncated

    def keepalive_unit(self, comment: str) -> bytes:
        return self.plan.drip(comment)

    async def write_keepalive(self, data: bytes, scheduled: float) -> None:
        self._keepalive(data, scheduled=scheduled)
        await self.conn.drain()

    def slow_events(self, delay_s: float) -> None:
        self.event_shift = delay_s
        self.slow_from = self.counted + (1 if self.in_unit else 0)

    def slow_bytes(self, delay_s: float) -> None:
        self.byte_delay = delay_s
        self.next_byte_at = self.loop.time()

    async def respond(
        self, code: int, body: bytes, content_type: str, headers: Sequence[tuple[str, str]]
    ) -> None:
        raise RuntimeError("a status cannot be sent inside a body")  # phases forbid it

    def error_body(self, code: int, message: str) -> bytes:
        from harness.server.apis import error_body

        return error_body(self.api, code, message)

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
        if self.framing == "content-length":
            self.declared = declared_length(self.units, self.fault)
        conn.write(self._head())
        ex.record("status_sent", code=200)
        ex.record("headers_sent", framing=self.framing)
        self.last_write = t0 = self.loop.time()
        if self._due("headers"):
            await self._fire("headers")
        counted, i, units, interval = 0, 0, self.units, script.event_interval_s
        while i < len(units):
            self.counted = counted
            await self._hold(counted)
            if self._due("event", counted):
                await self._fire(f"event:{counted}")
            j = self._stretch(i, counted)
            if j > i:  # nothing but healthy events up to j: timer-driven writes
                i, counted = await self._write_stretch(i, j, counted, t0)
                continue
            data, is_counted = units[i]
            i += 1
            if not is_counted:  # an insert of a payload fault: never paced, never counted
                await self._unit(data)
                continue
            scheduled = t0 + counted * interval
            if self.slow_from is not None and counted >= self.slow_from:
                scheduled += self.event_shift * (counted - self.slow_from + 1)
            await self._wait_until(scheduled)
            await self._unit(data)
            counted += 1
            if interval > 0 or self.event_shift:
                ex.record("event_sent", n=counted, scheduled=scheduled)
            else:
                ex.record("event_sent", n=counted)
        self.counted = counted
        await self._hold(counted)
        if self.at_end and not self.fired:
            await self._fire(f"event:{counted}")
        if self._due("event", counted) or (self.cut is not None and not self.fired):
            await self._fire(f"event:{counted}" if self.cut is None else f"bytes:{self.cut}")
        return await self._finish()

    async def _hold(self, counted: int) -> None:
        await wait_if_held(self.ex.holds, counted, drain=self.conn.drain, record=self.ex.record)

    async def _finish(self) -> bool:
        return await end_body(self.ex, self.framing, self.sent)

    # ------------------------------------------------------------------ healthy stretch

    def _stretch(self, i: int, counted: int) -> int:
        """The end of the run of units from ``i`` that need nothing but their write at
        their time: no fault point inside, no byte cut or trickle, no keep-alive comment,
        within a declared length. ``i`` when unit ``i`` needs the unit-by-unit path."""
        if self.byte_delay or (self.cut is not None and not self.fired):
            return i
        if self.script.keepalive_comment_s and self.framing != "content-length":
            return i
        f = self.fault
        stop = None if f is None or self.fired or self.at_end else f.phase.n
        stop = stop_before_hold(self.ex.holds, counted, stop)
        room = None if self.declared is None else self.declared - self.sent
        units, j = self.units, i
        while j < len(units):
            data, is_counted = units[j]
            if room is not None:
                room -= len(data)
                if room < 0:
                    break
            counted += is_counted
            j += 1
            if counted == stop:
                break
        return j

    async def _write_stretch(self, i: int, j: int, counted: int, t0: float) -> tuple[int, int]:
        """Write units ``i:j`` (a :meth:`_stretch`) at their times; returns the next unit
        index and the counted units written by then."""
        plan = plan_stretch(
            self.units[i:j],
            counted,
            t0=t0,
            interval=self.script.event_interval_s,
            shift=(self.event_shift, self.slow_from),
            chunked=self.framing == "chunked",
            sent=self.sent,
        )
        record_many = self.ex.record_many
        if record_many is not None:
            record = functools.partial(record_many, "event_sent")  # a C-level call per write
        else:

            def record(batch: Sequence[Any]) -> None:
                for d in batch:
                    self.ex.record("event_sent", **dict(d))

        k = await write_due(self.conn, plan, record)
        # nothing reads these before the stretch returns (PeerGone ends the body)
        done = (i + k, plan.after[k - 1]) if k else (i, counted)
        self.sent = plan.sent[k]
        if k < len(plan.frames):
            await self.conn.drain()
        self.last_write = self.loop.time()
        return done

    # ------------------------------------------------------------------ writing

    def _head(self) -> bytes:
        lines = [
            "HTTP/1.1 200 OK",
            f"content-type: {self.plan.content_type}",
            "cache-control: no-cache",
            f"x-request-id: {self.ex.request_id}",
        ]
        lines += self.plan.headers
        lines += framing_lines(self.framing, self.declared, keep_alive=self.ex.keep_alive)
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _unit(self, data: bytes) -> None:
        """Write one unit, cutting at ``bytes:N`` and trickling under a per-byte ``slow``."""
        chunked = self.framing == "chunked"
        if self.declared is not None:
            data = data[: max(0, self.declared - self.sent)]
            if not data:
                return
        cut = self.cut
        if not self.byte_delay and (cut is None or self.fired or cut >= self.sent + len(data)):
            # the common case: one write (one syscall) for the whole framed unit
            self.conn.write(b"%x\r\n%b\r\n" % (len(data), data) if chunked else data)
            self.sent += len(data)
            self.last_write = self.loop.time()
            if self.conn.write_paused:
                await self.conn.drain()
            return
        pos = 0
        clean_cut = (
            cut is not None
            and not self.fired
            and self.action is not None
            and self.action.ends_body_cleanly
            and self.sent <= cut < self.sent + len(data)
        )
        if clean_cut:
            data = data[: cut - self.sent]  # the chunk ends where the body is cut
        if cut is not None and not self.fired and self.sent == cut:
            await self._fire(f"bytes:{cut}")  # at a unit boundary: before its chunk header
        if chunked and data:
            self.conn.write(b"%x\r\n" % len(data))
        self.in_unit = True
        while pos < len(data):
            if cut is not None and not self.fired and self.sent == cut:
                await self._fire(f"bytes:{cut}")
            end = len(data)
            if cut is not None and not self.fired and self.sent < cut:
                end = min(end, pos + cut - self.sent)
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
        if clean_cut:
            await self._fire(f"bytes:{cut}")

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
        if self.declared is not None and self.sent + len(data) > self.declared:
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
        return (
            f is not None
            and not self.fired
            and not self.at_end
            and f.phase.kind == kind
            and f.phase.n == n
        )

    async def _fire(self, where: str) -> None:
        """Fire the fault here; returns only for non-terminal actions."""
        action = self.action
        assert action is not None
        self.fired = True
        self.phase = where
        self.ex.record("fault", action=action.name, phase=where)
        if not action.terminal:
            await action.fire(self)
            return
        if not action.ends_body_cleanly:
            await self.conn.flush()
        await action.fire(self)
        raise _Closed
