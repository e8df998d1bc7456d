"""FaultServer: the fault server on its own event-loop thread, behind a small sync API.

    with FaultServer(script, time_scale=0.01) as srv:
        client = OpenAI(base_url=srv.base_url, api_key="x")
        ...
        srv.wait_for("fault", timeout=5)

``start()`` binds (errors raise in the caller), starts the loop thread and returns once
the server is accepting; ``stop()`` closes every connection and joins the thread.

While the loaded script has a ``stall_upload`` rule, the listening socket uses an
Ethernet-sized MSS (``STALL_MSS``) and a small receive buffer (``STALL_RCVBUF``) for
connections accepted from then on, so that a stalled upload fills the buffers and
blocks the client's send after ~70 KB, as across a real network. On loopback the
default 64 KB MSS lets a client's send buffer grow to ~4 MB, and with a default
receive buffer it still grows past 200 KB: no 150 KB body would ever block (measured
on this machine). The small MSS costs ~30% of streaming throughput on loopback, so it
is only set while needed (afterwards the largest settable MSS is restored).

Not here: routing and request handling (``app.py``), wire bytes (``wire.py``).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable, Iterable
from typing import Any

from harness.faults import FaultScript
from harness.loopthread import LoopService
from harness.server.app import ServerCore, check_server_script
from harness.server.timeline import RequestRecord, TimelineEvent

__all__ = ["DEFAULT_HOST", "FaultServer", "ServerError"]

DEFAULT_HOST = "127.0.0.1"
STALL_MSS = 1460
STALL_RCVBUF = 4 * 1024
#: Restored after a stall script: the kernel's default receive buffer, and the largest
#: MSS Linux lets a socket set (the loopback default of ~64 KB cannot be set back).
NORMAL_RCVBUF = 128 * 1024
NORMAL_MSS = 32767
LOCAL_HOSTS = ("127.0.0.1", "::1", "localhost")

log = logging.getLogger(__name__)


class ServerError(RuntimeError):
    """The fault server could not start (bad host, port in use, remote bind refused)."""


class FaultServer(LoopService):
    """The fault server in a background thread; see the module docstring."""

    def __init__(
        self,
        script: FaultScript | None = None,
        *,
        host: str = DEFAULT_HOST,
        port: int = 0,
        time_scale: float = 1.0,
        allow_remote: bool = False,
        reply_source: Any = None,
    ) -> None:
        if host not in LOCAL_HOSTS and not allow_remote:
            raise ServerError(
                f"host: {host!r} is not loopback; allowed: 127.0.0.1, ::1 (or pass allow_remote=True)"
            )
        script = script if script is not None else FaultScript()
        check_server_script(script)
        super().__init__("fault-server")
        self.host = host
        self.port = port
        self.time_scale = time_scale
        self.allow_remote = allow_remote
        self._core = ServerCore(script, time_scale=time_scale)
        self._core.on_load = self._apply_listen_options
        self._core.reply_source = reply_source  # harness.record: cassettes, a live upstream
        self._server: asyncio.AbstractServer | None = None
        self._sock: socket.socket | None = None
        self._small_rcvbuf = False

    # ------------------------------------------------------------------ lifecycle

    def _before_start(self) -> None:
        if self.host not in LOCAL_HOSTS:
            # allow_remote=True was the caller's explicit choice; the runner also binds
            # inside network namespaces it made itself, where this is no news. The
            # command line (`harness serve --allow-remote`) warns visibly on its own.
            log.info(
                "fault server binding to non-loopback host %s: it is reachable from the network",
                self.host,
            )
        self._sock = _listen(self.host, self.port)
        self.port = self._sock.getsockname()[1]
        self._apply_listen_options()
        self._loop_thread.name = f"fault-server:{self.port}"

    def _start_failed(self, exc: Exception) -> Exception:
        return ServerError(f"fault server failed to start: {exc}")

    # ------------------------------------------------------------------ API

    @property
    def reply_source(self) -> Any:
        """What answers routed requests instead of synthetic replies (None: those)."""
        return self._core.reply_source

    @reply_source.setter
    def reply_source(self, source: Any) -> None:
        self._core.reply_source = source

    @property
    def script(self) -> FaultScript:
        """The loaded script, already scaled by its time scale."""
        return self._core.script

    def load(self, script: FaultScript, *, time_scale: float | None = None) -> None:
        """Replace the script (scaled by ``time_scale``, default the server's); resets
        attempt and connection counters and the timeline."""
        self._core.load(script, time_scale=self.time_scale if time_scale is None else time_scale)

    def reset(self) -> None:
        """Clear counters and the timeline; keep the script."""
        self._core.reset()

    def hold(self, n: int) -> Callable[[], None]:
        """Hold the first LLM reply body that has sent ``n`` counted units until the
        returned release is called (``harness.server.holds``; cleared by ``load``)."""
        return self._core.holds.add(n)

    def timeline(self) -> list[TimelineEvent]:
        return self._core.timeline.events()

    def requests(self) -> list[RequestRecord]:
        return self._core.timeline.requests()

    def watch(self, kinds: Iterable[str], callback: Callable[[int, str], None] | None) -> None:
        """``callback(conn, kind)`` for each timeline event of ``kinds`` from now on (on
        the server's loop thread: it must return at once); None: stop."""
        self._core.timeline.watch(kinds, callback)

    def wait_for(self, kind: str, *, timeout: float, count: int = 1) -> TimelineEvent:
        return self._core.timeline.wait_for(kind, timeout=timeout, count=count)

    def settle(self, *, timeout: float = 5.0) -> None:
        """Return once the server loop has run every callback scheduled so far.

        asyncio records a connection as closed when ``transport.close()`` is called but
        releases the socket's descriptor in a callback on a later loop turn; a leak check
        after ``wait_for("closed")`` calls this first so it never counts that descriptor.
        """
        if self._loop_thread.running:
            self._loop_thread.call(_loop_turns(3), timeout_s=timeout)

    # ------------------------------------------------------------------ loop thread

    def _apply_listen_options(self) -> None:
        stall = any(r.fault.action.upload_stall() is not None for r in self._core.script.rules)
        if self._sock is None or stall == self._small_rcvbuf:
            return
        self._sock.setsockopt(
            socket.IPPROTO_TCP, socket.TCP_MAXSEG, STALL_MSS if stall else NORMAL_MSS
        )
        self._sock.setsockopt(
            socket.SOL_SOCKET, socket.SO_RCVBUF, STALL_RCVBUF if stall else NORMAL_RCVBUF
        )
        self._small_rcvbuf = stall

    async def _serve(self) -> None:
        self._server = await asyncio.get_running_loop().create_server(
            self._core.protocol_factory, sock=self._sock, backlog=4096
        )

    async def _shutdown(self) -> None:
        server = self._server
        assert server is not None
        server.close()
        for conn in list(self._core.open):
            conn.reset("server stopped") if not conn.lost else None
        tasks = list(self._core.tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._core.reply_source is not None:
            await self._core.reply_source.aclose()
        await server.wait_closed()


async def _loop_turns(n: int) -> None:
    # Each sleep(0) yields one full loop turn, so callbacks queued by earlier ones run too.
    for _ in range(n):
        await asyncio.sleep(0)


def _listen(host: str, port: int) -> socket.socket:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ServerError(f"host: {host!r} does not resolve: {exc}") from exc
    family, _, _, _, addr = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(4096)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise ServerError(f"cannot listen on {host}:{port}: {exc}") from exc
    return sock
