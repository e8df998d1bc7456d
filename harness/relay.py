"""A TCP relay (a stand-in for a proxy or load balancer) in front of the fault server.

What it is for: the middlebox shape of the CLOSE-WAIT hang (DESIGN.md, "Verified
mechanics"). The provider closes, the relay's upstream socket sits in CLOSE_WAIT, and
the client's leg stays ESTABLISHED and silent; keepalive cannot see it because the
relay's kernel answers probes. Modes, switchable at runtime with :meth:`Relay.set_mode`:

    pass           relay bytes both ways; a FIN or RST on one leg is passed to the other
    swallow_close  as pass, but an upstream FIN (or RST) is swallowed: the upstream socket
                   is left in CLOSE_WAIT, the client leg is kept open and silent, bytes
                   from the client are dropped, until the client closes its leg
    idle_cut       as pass, but the client leg is cut (FIN, or RST with ``idle_cut_rst``)
                   after ``idle_cut_s`` with no bytes from upstream, as proxies with an
                   idle limit do
    hold           stop relaying both ways (nothing is read, so kernel buffers fill),
                   e.g. "hold at a scripted point"; switching back resumes

Each relay keeps its own timeline of both legs (:class:`RelayEvent`): accepted,
upstream_connected, bytes each way (cumulative), upstream_fin, swallowed, client_fin,
idle_cut, reset, closed, mode changes, and ``tcp`` events with the kernel TCP states of
the four sockets of a connection (client, relay client leg, relay upstream leg,
upstream server) read from /proc by :mod:`harness.tcpstate`, sampled on every event
and on a bounded schedule (``sample_interval_s``, at most ``max_samples`` per
connection), recorded only when something changed.

What it is not: an HTTP proxy. It moves bytes; it never parses them. It runs its own
asyncio loop in a background thread, like the fault server, so sync tests can use it.

    with Relay(upstream=("127.0.0.1", srv_port), mode="swallow_close") as relay:
        client = OpenAI(base_url=relay.base_url, ...)
        relay.wait_for("swallowed", timeout=5)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import math
import socket
import struct
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness import tcpstate
from harness.faults import FaultSpecError
from harness.loopthread import LoopThread, LoopThreadError

__all__ = [
    "DEFAULT_IDLE_CUT_S",
    "DEFAULT_MAX_SAMPLES",
    "DEFAULT_SAMPLE_INTERVAL_S",
    "LEGS",
    "MODES",
    "Relay",
    "RelayConnection",
    "RelayError",
    "RelayEvent",
    "RelaySettings",
    "relay_settings_from_dict",
]

MODES = ("pass", "swallow_close", "idle_cut", "hold")
#: The four sockets of one relayed connection, as named in ``tcp`` events.
LEGS = ("client", "relay_client", "relay_upstream", "upstream")

DEFAULT_IDLE_CUT_S = 5.0
DEFAULT_SAMPLE_INTERVAL_S = 0.25
DEFAULT_MAX_SAMPLES = 400
DEFAULT_CONNECT_TIMEOUT_S = 5.0
DEFAULT_READY_TIMEOUT_S = 10.0
#: After a connection closed, keep sampling this many ticks to see TIME_WAIT / gone.
_POST_CLOSE_SAMPLES = 8
#: Data events recorded per connection; byte counters keep counting past it.
_MAX_DATA_EVENTS = 2000
_READ_SIZE = 65536


class RelayError(RuntimeError):
    """The relay could not start or did not answer a control call in time."""


@dataclass(frozen=True)
class RelaySettings:
    """How a relay behaves. Frozen, validated eagerly; durations in seconds."""

    mode: str = "pass"
    idle_cut_s: float = DEFAULT_IDLE_CUT_S
    idle_cut_rst: bool = False
    sample_interval_s: float = DEFAULT_SAMPLE_INTERVAL_S
    max_samples: int = DEFAULT_MAX_SAMPLES
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise FaultSpecError("relay.mode", self.mode, ", ".join(MODES))
        for name in ("idle_cut_s", "sample_interval_s", "connect_timeout_s"):
            value = getattr(self, name)
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            if not (ok and math.isfinite(value) and value > 0):
                raise FaultSpecError(f"relay.{name}", value, "a finite number of seconds > 0")
        if not isinstance(self.idle_cut_rst, bool):
            raise FaultSpecError("relay.idle_cut_rst", self.idle_cut_rst, "true, false")
        if (
            not isinstance(self.max_samples, int)
            or isinstance(self.max_samples, bool)
            or self.max_samples < 1
        ):
            raise FaultSpecError("relay.max_samples", self.max_samples, "a whole number >= 1")

    def scaled(self, k: float) -> RelaySettings:
        """Scenario durations scaled by ``time_scale`` (sampling is not a scenario time)."""
        return dataclasses.replace(self, idle_cut_s=self.idle_cut_s * k)


def relay_settings_from_dict(
    data: Mapping[str, Any] | None, *, where: str = "relay"
) -> RelaySettings:
    """Build :class:`RelaySettings` from a scenario table (``{mode = "swallow_close"}``);
    errors name ``where.field`` and the allowed values."""
    if data is None:
        return RelaySettings()
    if not isinstance(data, Mapping):
        raise FaultSpecError(where, data, "a table with mode and its settings")
    allowed = [f.name for f in dataclasses.fields(RelaySettings)]
    for key in data:
        if key not in allowed:
            raise FaultSpecError(f"{where}.{key}", data[key], ", ".join(allowed))
    try:
        return RelaySettings(**dict(data))
    except FaultSpecError as exc:
        raise FaultSpecError(
            f"{where}.{exc.field.removeprefix('relay.')}", exc.value, exc.allowed
        ) from None


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


class Relay:
    """An asyncio TCP relay in a background thread. See the module docstring."""

    def __init__(
        self,
        *,
        upstream: tuple[str, int],
        mode: str = "pass",
        idle_cut_s: float = DEFAULT_IDLE_CUT_S,
        idle_cut_rst: bool = False,
        host: str = "127.0.0.1",
        port: int = 0,
        settings: RelaySettings | None = None,
        sample_interval_s: float = DEFAULT_SAMPLE_INTERVAL_S,
        max_samples: int = DEFAULT_MAX_SAMPLES,
    ) -> None:
        self.settings = settings or RelaySettings(
            mode=mode,
            idle_cut_s=idle_cut_s,
            idle_cut_rst=idle_cut_rst,
            sample_interval_s=sample_interval_s,
            max_samples=max_samples,
        )
        self.upstream = (str(upstream[0]), int(upstream[1]))
        self.host = host
        self._requested_port = port
        self.port = 0
        self._mode = self.settings.mode
        self._idle_cut_s = self.settings.idle_cut_s
        self._events: list[RelayEvent] = []
        self._cond = threading.Condition()
        self._conns: dict[int, _Conn] = {}
        self._next_conn = 0
        self._loop_thread = LoopThread("harness-relay")
        self._server: asyncio.AbstractServer | None = None
        self._changed: asyncio.Condition | None = None
        self._flowing: asyncio.Event | None = None
        self._tasks: set[asyncio.Task] = set()

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> Relay:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        try:
            self._loop_thread.start(self._listen, timeout_s=DEFAULT_READY_TIMEOUT_S)
        except LoopThreadError as exc:
            raise RelayError(f"relay did not start within {DEFAULT_READY_TIMEOUT_S} s") from exc
        except OSError as exc:
            raise RelayError(
                f"relay could not listen on {self.host}:{self._requested_port}: {exc}"
            ) from exc

    def close(self) -> None:
        """Stop accepting, close every leg, stop the loop. Idempotent."""
        self._loop_thread.stop(self._shutdown, timeout_s=DEFAULT_READY_TIMEOUT_S)

    # ------------------------------------------------------------------ public

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    @property
    def mode(self) -> str:
        return self._mode

    def set_mode(self, mode: str, *, idle_cut_s: float | None = None) -> None:
        """Switch mode for every open and future connection; returns once applied."""
        new = dataclasses.replace(
            self.settings,
            mode=mode,
            idle_cut_s=self._idle_cut_s if idle_cut_s is None else idle_cut_s,
        )  # validates
        self._call(self._apply_mode(new.mode, new.idle_cut_s))

    def timeline(self) -> list[RelayEvent]:
        with self._cond:
            return list(self._events)

    def connections(self) -> list[RelayConnection]:
        with self._cond:
            return [c.summary() for c in self._conns.values()]

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

        with self._cond:
            while (hit := found()) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    seen = ", ".join(e.kind for e in self._events[-12:]) or "nothing"
                    raise TimeoutError(
                        f"relay: no {kind!r} #{count} within {timeout} s; last events: {seen}"
                    )
                self._cond.wait(remaining)
            return hit

    def sample(self) -> list[RelayEvent]:
        """Take a TCP state sample of every connection now; returns the ``tcp`` events
        recorded (only those whose states changed)."""
        return self._call(self._sample_all())

    # ------------------------------------------------------------------ loop thread

    async def _listen(self) -> None:
        self._changed = asyncio.Condition()
        self._flowing = asyncio.Event()
        if self._mode != "hold":
            self._flowing.set()
        self._server = await asyncio.start_server(self._handle, self.host, self._requested_port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for c in list(self._conns.values()):
            c.close_all(rst=False)
        tasks = [t for t in self._tasks if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _apply_mode(self, mode: str, idle_cut_s: float) -> None:
        old = self._mode
        self._mode, self._idle_cut_s = mode, idle_cut_s
        assert self._flowing is not None and self._changed is not None
        if mode == "hold":
            self._flowing.clear()
        else:
            self._flowing.set()
        detail = f"{old} -> {mode}" + (f" idle_cut_s={idle_cut_s}" if mode == "idle_cut" else "")
        self._record(0, "relay", "mode", detail)
        async with self._changed:
            self._changed.notify_all()

    async def _sample_all(self) -> list[RelayEvent]:
        out = []
        for c in list(self._conns.values()):
            ev = await self._sample_async(c)
            if ev is not None:
                out.append(ev)
        return out

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _handle(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        # Python 3.11's start_server callback calls task.exception() on a cancelled
        # handler and logs a spurious traceback; shutdown cancellation ends here quietly.
        with contextlib.suppress(asyncio.CancelledError):
            await self._serve_connection(c_reader, c_writer)

    async def _serve_connection(
        self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter
    ) -> None:
        self._next_conn += 1
        c = _Conn(self._next_conn, c_reader, c_writer)
        with self._cond:
            self._conns[c.id] = c
        me = asyncio.current_task()
        if me is not None:
            self._tasks.add(me)
            me.add_done_callback(self._tasks.discard)
        self._record(c.id, "client", "accepted", f"from {c.client[0]}:{c.client[1]}")
        sampler = self._spawn(self._sample_loop(c))
        try:
            try:
                c.u_reader, c.u_writer = await asyncio.wait_for(
                    asyncio.open_connection(*self.upstream), self.settings.connect_timeout_s
                )
            except (OSError, TimeoutError) as exc:
                self._record(
                    c.id, "upstream", "upstream_connect_failed", f"{type(exc).__name__}: {exc}"
                )
                c.close_all(rst=True)
                c.status = "closed"
                return
            c.upstream_local = c.u_writer.get_extra_info("sockname")[:2]
            c.status = "open"
            c.last_upstream = time.monotonic()
            self._record(
                c.id,
                "upstream",
                "upstream_connected",
                f"{c.upstream_local[0]}:{c.upstream_local[1]} -> {self.upstream[0]}:{self.upstream[1]}",
            )
            self._sample_soon(c)
            watcher = self._spawn(self._idle_watch(c))
            up = self._spawn(self._pump_up(c))
            down = self._spawn(self._pump_down(c))
            await asyncio.gather(up, down, return_exceptions=True)
            watcher.cancel()
            c.close_all(rst=False)
            if c.status != "cut":
                c.status = "closed"
            self._record(c.id, "relay", "closed", f"up={c.bytes_up} down={c.bytes_down}")
            self._sample_soon(c)
        finally:
            c.finished = True
            async with self._changed:
                self._changed.notify_all()
            # let the sampler see TIME_WAIT / gone on its own schedule
            del sampler

    async def _pump_down(self, c: _Conn) -> None:
        """upstream -> client."""
        assert c.u_reader is not None and self._flowing is not None
        while True:
            await self._flowing.wait()
            try:
                data = await c.u_reader.read(_READ_SIZE)
            except OSError as exc:
                await self._upstream_gone(c, "reset", f"{type(exc).__name__}: {exc}")
                return
            if not data:
                await self._upstream_gone(c, "upstream_fin", "")
                return
            await self._flowing.wait()
            if c.status == "cut":
                return
            c.bytes_down += len(data)
            c.last_upstream = time.monotonic()
            self._record_data(c, "client", "bytes_down", len(data), c.bytes_down)
            try:
                c.c_writer.write(data)
                await c.c_writer.drain()
            except OSError as exc:
                self._record(
                    c.id, "client", "reset", f"writing to client: {type(exc).__name__}: {exc}"
                )
                c.abort_upstream()
                return
            async with self._changed:
                self._changed.notify_all()

    async def _upstream_gone(self, c: _Conn, kind: str, detail: str) -> None:
        self._record(c.id, "upstream", kind, detail)
        if self._mode == "swallow_close":
            # The middlebox shape: do not close our upstream socket (it stays in
            # CLOSE_WAIT), tell the client nothing.
            c.status = "swallowed"
            self._record(c.id, "client", "swallowed", "client leg kept open and silent")
            self._sample_soon(c)
            return
        if kind == "reset":
            c.abort_client()
            self._record(c.id, "client", "rst_forwarded")
        else:
            with contextlib.suppress(OSError):
                if c.c_writer.can_write_eof():
                    c.c_writer.write_eof()
            self._record(c.id, "client", "fin_forwarded")
        self._sample_soon(c)

    async def _pump_up(self, c: _Conn) -> None:
        """client -> upstream."""
        assert c.u_writer is not None and self._flowing is not None
        while True:
            await self._flowing.wait()
            try:
                data = await c.c_reader.read(_READ_SIZE)
            except OSError as exc:
                self._record(c.id, "client", "reset", f"{type(exc).__name__}: {exc}")
                if c.status != "swallowed":
                    c.abort_upstream()
                return
            if not data:
                self._record(c.id, "client", "client_fin")
                if c.status == "swallowed":
                    return  # the client gave up: now the relay lets go of both legs
                with contextlib.suppress(OSError):
                    if c.u_writer.can_write_eof():
                        c.u_writer.write_eof()
                self._sample_soon(c)
                return
            await self._flowing.wait()
            if c.status == "cut":
                return
            if c.status == "swallowed":
                self._record_data(c, "client", "dropped", len(data), c.bytes_up)
                continue
            c.bytes_up += len(data)
            self._record_data(c, "upstream", "bytes_up", len(data), c.bytes_up)
            try:
                c.u_writer.write(data)
                await c.u_writer.drain()
            except OSError as exc:
                self._record(
                    c.id, "upstream", "reset", f"writing upstream: {type(exc).__name__}: {exc}"
                )
                return

    async def _idle_watch(self, c: _Conn) -> None:
        assert self._changed is not None
        async with self._changed:
            while not c.finished and c.status == "open":
                if self._mode != "idle_cut":
                    await self._changed.wait()
                    continue
                remaining = c.last_upstream + self._idle_cut_s - time.monotonic()
                if remaining <= 0:
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), remaining)
            else:
                return
        how = "rst" if self.settings.idle_cut_rst else "fin"
        self._record(
            c.id,
            "client",
            "idle_cut",
            f"no upstream bytes for {self._idle_cut_s} s; cut with {how}",
        )
        c.status = "cut"
        c.close_all(rst=self.settings.idle_cut_rst)
        self._sample_soon(c)

    async def _sample_loop(self, c: _Conn) -> None:
        after_close = 0
        for _ in range(self.settings.max_samples):
            await self._sample_async(c)
            if c.finished:
                after_close += 1
                gone = c.last_states is not None and all(
                    v == "gone" for v in c.last_states.values()
                )
                if gone or after_close > _POST_CLOSE_SAMPLES:
                    return
            await asyncio.sleep(self.settings.sample_interval_s)  # a schedule, not a sync

    # ------------------------------------------------------------------ recording

    def _sample_soon(self, c: _Conn) -> None:
        """Sample ``c``'s TCP states after an event, without blocking the loop."""
        self._spawn(self._sample_async(c))

    async def _sample_async(self, c: _Conn) -> RelayEvent | None:
        # Reading /proc/net/tcp costs the kernel ~10 ms per thousand sockets on a busy
        # host: do it in a worker thread so relaying never waits for it. One at a time
        # per connection, so recorded states stay in order.
        if c.status == "connecting":
            return None  # no upstream leg yet: nothing to compare
        async with c.sample_lock:
            ports = {self.port, self.upstream[1]}
            try:
                table = await asyncio.get_running_loop().run_in_executor(
                    None, functools.partial(tcpstate.snapshot, ports=ports)
                )
            except tcpstate.TcpStateError as exc:
                if c.last_states is None:
                    c.last_states = {}
                    return self._record(c.id, "relay", "tcp_unavailable", str(exc))
                return None
            # Stamped when the read is done, not when it started: the read can take tens
            # of ms, and a state seen then must not show up before the event that made it
            # (a CLOSE_WAIT listed ahead of the FIN that caused it).
            t = time.monotonic()
            states = _leg_states(table, c, self.port, self.upstream[1])
            if states == c.last_states:
                return None
            c.last_states = states
            return self._record(c.id, "relay", "tcp", _short_states(states), states=states, t=t)

    def _record_data(self, c: _Conn, leg: str, kind: str, n: int, total: int) -> None:
        c.data_events += 1
        if c.data_events <= _MAX_DATA_EVENTS:
            self._record(c.id, leg, kind, f"+{n} total={total}")

    def _record(
        self,
        conn: int,
        leg: str,
        kind: str,
        detail: str = "",
        *,
        states=None,
        t: float | None = None,
    ) -> RelayEvent:
        ev = RelayEvent(time.monotonic() if t is None else t, conn, leg, kind, detail, states)
        with self._cond:
            self._events.append(ev)
            self._cond.notify_all()
        return ev

    def _call(self, coro: Any) -> Any:
        """Run ``coro`` on the relay's loop and return its result."""
        if not self._loop_thread.running:
            coro.close()
            raise RelayError("relay is not running (use it as a context manager)")
        return self._loop_thread.call(coro, timeout_s=DEFAULT_READY_TIMEOUT_S)


# --------------------------------------------------------------------------- helpers


class _Conn:
    """Mutable per-connection state, owned by the loop thread."""

    def __init__(
        self, conn_id: int, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter
    ) -> None:
        self.id = conn_id
        self.c_reader = c_reader
        self.c_writer = c_writer
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
        self.last_states: dict[str, str] | None = None
        self.sample_lock = asyncio.Lock()

    def summary(self) -> RelayConnection:
        return RelayConnection(
            self.id, self.client, self.upstream_local, self.bytes_up, self.bytes_down, self.status
        )

    def abort_client(self) -> None:
        _abort(self.c_writer)

    def abort_upstream(self) -> None:
        if self.u_writer is not None:
            _abort(self.u_writer)

    def close_all(self, *, rst: bool) -> None:
        for w in (self.c_writer, self.u_writer):
            if w is None:
                continue
            if rst:
                _abort(w)
            else:
                w.close()


def _abort(writer: asyncio.StreamWriter) -> None:
    """Close with RST: SO_LINGER 0 then close."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def _leg_states(
    table: list[tcpstate.TcpSocket], c: _Conn, relay_port: int, upstream_port: int
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
