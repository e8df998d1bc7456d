"""The relay itself: an asyncio TCP relay in a background thread, moving bytes between
a client leg and an upstream leg while the current mode (``harness.relay.modes``)
decides what a closed upstream, silence or a hold does.

Not here: the settings (``harness.relay.settings``), the modes, the per-connection
actions (``harness.relay.legs``), the timeline and TCP sampling.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
import time
from collections.abc import Coroutine
from typing import Any

from harness.loopthread import LoopService, LoopThreadError
from harness.relay.legs import Connection, half_close
from harness.relay.modes import MODE_TYPES, RelayMode
from harness.relay.sampling import TcpSampler
from harness.relay.settings import (
    DEFAULT_IDLE_CUT_S,
    DEFAULT_MAX_SAMPLES,
    DEFAULT_READY_TIMEOUT_S,
    DEFAULT_SAMPLE_INTERVAL_S,
    RelaySettings,
)
from harness.relay.timeline import RelayConnection, RelayEvent, Timeline

__all__ = ["Relay", "RelayError"]

_READ_SIZE = 65536


class RelayError(RuntimeError):
    """The relay could not start or did not answer a control call in time."""


class Relay(LoopService):
    """An asyncio TCP relay in a background thread. See :mod:`harness.relay`."""

    loop_timeout_s = DEFAULT_READY_TIMEOUT_S

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
        super().__init__("harness-relay")
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
        self._mode: RelayMode = MODE_TYPES[self.settings.mode]
        self._idle_cut_s = self.settings.idle_cut_s
        self._timeline = Timeline()
        #: Block until an event is recorded: :meth:`harness.relay.timeline.Timeline.wait_for`.
        self.wait_for = self._timeline.wait_for
        self._conns: dict[int, Connection] = {}
        self._conns_lock = threading.Lock()
        self._next_conn = 0
        self._server: asyncio.AbstractServer | None = None
        self._changed: asyncio.Condition | None = None
        self._flowing: asyncio.Event | None = None
        self._tasks: set[asyncio.Task] = set()
        self._sampler = TcpSampler(
            self._timeline,
            spawn=self._spawn,
            interval_s=self.settings.sample_interval_s,
            max_samples=self.settings.max_samples,
        )

    # ------------------------------------------------------------------ lifecycle

    def _start_failed(self, exc: Exception) -> Exception:
        if isinstance(exc, LoopThreadError):
            return RelayError(f"relay did not start within {DEFAULT_READY_TIMEOUT_S} s")
        if isinstance(exc, OSError):
            return RelayError(
                f"relay could not listen on {self.host}:{self._requested_port}: {exc}"
            )
        return exc

    def close(self) -> None:
        """Stop accepting, close every leg, stop the loop. Idempotent."""
        self.stop()

    # ------------------------------------------------------------------ public

    @property
    def mode(self) -> str:
        return self._mode.name

    def set_upstream(
        self, upstream: tuple[str, int], *, close_open: bool = False, answer: bytes = b""
    ) -> None:
        """Send connections accepted from now on to ``upstream``, e.g. a gateway in front
        of whichever fault server the next case uses. Open ones keep theirs unless
        ``close_open``: then they are closed first (:meth:`close_connections`, with
        ``answer``), so that a client's pooled connection cannot carry the next request to
        the last upstream."""
        if close_open:
            self.close_connections(answer=answer)
        self.upstream = (str(upstream[0]), int(upstream[1]))
        self._sampler.upstream_port = self.upstream[1]

    def close_connections(self, *, answer: bytes = b"") -> int:
        """Close every open connection, both legs with FIN (as a server closes idle
        keep-alive connections); returns once done. A connection whose upstream has sent
        nothing yet first gets ``answer`` on its client leg: a client whose request was
        cut off before any reply retries it, and an answer (say, a non-retryable HTTP
        error) ends that request instead. Returns how many were answered."""
        return self._call(self._close_connections(answer))

    def set_mode(self, mode: str, *, idle_cut_s: float | None = None) -> None:
        """Switch mode for every open and future connection; returns once applied."""
        new = dataclasses.replace(
            self.settings,
            mode=mode,
            idle_cut_s=self._idle_cut_s if idle_cut_s is None else idle_cut_s,
        )  # validates
        self._call(self._apply_mode(MODE_TYPES[new.mode], new.idle_cut_s))

    def timeline(self) -> list[RelayEvent]:
        return self._timeline.events()

    def connections(self) -> list[RelayConnection]:
        with self._conns_lock:
            return [c.summary() for c in self._conns.values()]

    def sample(self) -> list[RelayEvent]:
        """Take a TCP state sample of every connection now; returns the ``tcp`` events
        recorded (only those whose states changed)."""
        return self._call(self._sample_all())

    # ------------------------------------------------------------------ loop thread

    async def _serve(self) -> None:
        self._changed = asyncio.Condition()
        self._flowing = asyncio.Event()
        if self._mode.flowing:
            self._flowing.set()
        self._server = await asyncio.start_server(self._handle, self.host, self._requested_port)
        self.port = self._server.sockets[0].getsockname()[1]
        self._sampler.relay_port, self._sampler.upstream_port = self.port, self.upstream[1]

    async def _close_connections(self, answer: bytes) -> int:
        answered = 0
        for c in list(self._conns.values()):
            if answer and c.bytes_down == 0 and not c.finished and c.answer(answer):
                answered += 1
            c.close_all(rst=False)
        return answered

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for c in list(self._conns.values()):
            c.close_all(rst=False)
        tasks = [t for t in self._tasks if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _apply_mode(self, mode: RelayMode, idle_cut_s: float) -> None:
        old = self._mode
        self._mode, self._idle_cut_s = mode, idle_cut_s
        assert self._flowing is not None and self._changed is not None
        if mode.flowing:
            self._flowing.set()
        else:
            self._flowing.clear()
        self._timeline.record(0, "relay", "mode", f"{old.name} -> {mode.describe(idle_cut_s)}")
        async with self._changed:
            self._changed.notify_all()

    async def _sample_all(self) -> list[RelayEvent]:
        out = []
        for c in list(self._conns.values()):
            ev = await self._sampler.sample(c)
            if ev is not None:
                out.append(ev)
        return out

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task:
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
        assert self._changed is not None
        self._next_conn += 1
        c = Connection(self._next_conn, c_reader, c_writer, record=self._timeline.record)
        with self._conns_lock:
            self._conns[c.id] = c
        me = asyncio.current_task()
        if me is not None:
            self._tasks.add(me)
            me.add_done_callback(self._tasks.discard)
        c.record("client", "accepted", f"from {c.client[0]}:{c.client[1]}")
        self._spawn(self._sampler.loop(c))  # sees TIME_WAIT / gone on its own schedule
        try:
            try:
                c.u_reader, c.u_writer = await asyncio.wait_for(
                    asyncio.open_connection(*self.upstream), self.settings.connect_timeout_s
                )
            except (OSError, TimeoutError) as exc:
                c.record("upstream", "upstream_connect_failed", f"{type(exc).__name__}: {exc}")
                c.close_all(rst=True)
                c.status = "closed"
                return
            c.upstream_local = c.u_writer.get_extra_info("sockname")[:2]
            c.status = "open"
            c.last_upstream = time.monotonic()
            local, (host, port) = c.upstream_local, self.upstream
            c.record("upstream", "upstream_connected", f"{local[0]}:{local[1]} -> {host}:{port}")
            self._sampler.soon(c)
            watcher = self._spawn(self._idle_watch(c))
            up = self._spawn(self._pump_up(c))
            down = self._spawn(self._pump_down(c))
            await asyncio.gather(up, down, return_exceptions=True)
            watcher.cancel()
            c.close_all(rst=False)
            if c.status != "cut":
                c.status = "closed"
            c.record("relay", "closed", f"up={c.bytes_up} down={c.bytes_down}")
            self._sampler.soon(c)
        finally:
            c.finished = True
            async with self._changed:
                self._changed.notify_all()

    async def _pump_down(self, c: Connection) -> None:
        """upstream -> client."""
        assert c.u_reader is not None and self._flowing is not None
        assert self._changed is not None
        while True:
            await self._flowing.wait()
            try:
                data = await c.u_reader.read(_READ_SIZE)
            except OSError as exc:
                self._upstream_gone(c, "reset", f"{type(exc).__name__}: {exc}")
                return
            if not data:
                self._upstream_gone(c, "upstream_fin", "")
                return
            await self._flowing.wait()
            if c.status == "cut":
                return
            c.bytes_down += len(data)
            c.last_upstream = time.monotonic()
            c.record_data("client", "bytes_down", len(data), c.bytes_down)
            if not await _forward(c, "client", c.c_writer, data, "to client"):
                c.abort_upstream()
                return
            async with self._changed:
                self._changed.notify_all()

    def _upstream_gone(self, c: Connection, kind: str, detail: str) -> None:
        c.record("upstream", kind, detail)
        self._mode.upstream_gone(c, kind)
        self._sampler.soon(c)

    async def _pump_up(self, c: Connection) -> None:
        """client -> upstream."""
        assert c.u_writer is not None and self._flowing is not None
        while True:
            await self._flowing.wait()
            try:
                data = await c.c_reader.read(_READ_SIZE)
            except OSError as exc:
                c.record("client", "reset", f"{type(exc).__name__}: {exc}")
                if c.status != "swallowed":
                    c.abort_upstream()
                return
            if not data:
                c.record("client", "client_fin")
                if c.status == "swallowed":
                    return  # the client gave up: now the relay lets go of both legs
                # Whether the FIN reached upstream shows in the next tcp sample.
                half_close(c.u_writer)
                self._sampler.soon(c)
                return
            await self._flowing.wait()
            if c.status == "cut":
                return
            if c.status == "swallowed":
                c.record_data("client", "dropped", len(data), c.bytes_up)
                continue
            c.bytes_up += len(data)
            c.record_data("upstream", "bytes_up", len(data), c.bytes_up)
            if not await _forward(c, "upstream", c.u_writer, data, "upstream"):
                return

    async def _idle_watch(self, c: Connection) -> None:
        assert self._changed is not None
        async with self._changed:
            while not c.finished and c.status == "open":
                if not self._mode.cuts_idle:
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
        c.record(
            "client", "idle_cut", f"no upstream bytes for {self._idle_cut_s} s; cut with {how}"
        )
        c.status = "cut"
        c.close_all(rst=self.settings.idle_cut_rst)
        self._sampler.soon(c)

    def _call(self, coro: Any) -> Any:
        """Run ``coro`` on the relay's loop and return its result."""
        if not self._loop_thread.running:
            coro.close()
            raise RelayError("relay is not running (use it as a context manager)")
        return self._loop_thread.call(coro, timeout_s=DEFAULT_READY_TIMEOUT_S)


async def _forward(
    c: Connection, leg: str, writer: asyncio.StreamWriter, data: bytes, where: str
) -> bool:
    """Write ``data`` on along ``leg``; False when the write fails (recorded as its reset)."""
    try:
        writer.write(data)
        await writer.drain()
    except OSError as exc:
        c.record(leg, "reset", f"writing {where}: {type(exc).__name__}: {exc}")
        return False
    return True
