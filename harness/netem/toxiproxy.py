"""The Toxiproxy backend: a Toxiproxy server on loopback in front of the fault server.

What it is for: network conditions a userspace HTTP server cannot make on its own
socket: latency and bandwidth on the path, a slow close, a connection that swallows
data and never closes (``timeout`` with 0), an RST after a delay, a byte budget, TCP
segments sliced small, and a proxy taken down (every connection dropped: a stale pool).

    with ToxiproxyServer() as tp:                       # binary from harness.netem.prereq
        proxy = tp.proxy(upstream=("127.0.0.1", srv_port))
        proxy.add(toxic_from_dict({"type": "latency", "latency": 200}))
        client = OpenAI(base_url=proxy.base_url, ...)

The toxics themselves (what each does, its attributes and units) are described by
:class:`~harness.faults.network.toxics.Toxic` in :mod:`harness.faults.network.toxics`.

The server is driven through ``toxiproxy-python`` (package ``toxiproxy``). That client
keeps the API address in class attributes of ``APIConsumer``; every call here sets them
under one lock, so several servers in one process do not cross. Its errors
(``requests`` errors, ``ProxyExists``, ``NotFound``, ``InvalidToxic``) are mapped to
:class:`ToxiproxyError` at one boundary (:func:`_api`).

What it is not: a way to reach anything but 127.0.0.1; the proxies listen on loopback
and their upstream is the local fault server.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from harness.faults.network.toxics import Toxic
from harness.foreground import stop_process
from harness.ports import named_port

__all__ = [
    "DEFAULT_READY_TIMEOUT_S",
    "ToxiproxyError",
    "ToxiproxyProxy",
    "ToxiproxyServer",
]

DEFAULT_READY_TIMEOUT_S = 10.0
DEFAULT_API_TIMEOUT_S = 10.0
_START_ATTEMPTS = 3  # a free port picked here may be taken before the server binds it


class ToxiproxyError(RuntimeError):
    """The Toxiproxy server failed to start, or an API call failed; says which and why."""


class ToxiproxyServer:
    """A Toxiproxy server process on ``host``, on a free port; stopped on exit."""

    def __init__(
        self,
        *,
        binary: str | Path | None = None,
        host: str = "127.0.0.1",
        ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S,
    ) -> None:
        self.binary = Path(binary) if binary is not None else None
        self.host = host
        self.port = 0
        self.ready_timeout_s = ready_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: collections.deque[str] = collections.deque(maxlen=50)
        self._names = itertools.count(1)

    def __enter__(self) -> ToxiproxyServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def api_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> None:
        binary = self.binary
        if binary is None:
            from harness.netem.prereq import TOXIPROXY_INSTALL, toxiproxy_binary

            binary = toxiproxy_binary()
            if binary is None:
                raise ToxiproxyError(
                    f"Toxiproxy server not found; install it with: {TOXIPROXY_INSTALL}"
                )
        self.binary = binary
        _check_no_proxy_env(self.host)
        last = ""
        for _ in range(_START_ATTEMPTS):
            self.port = named_port(self.host)
            last = self._start_once(binary)
            if not last:
                return
        raise ToxiproxyError(f"Toxiproxy server did not start: {last}")

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        stop_process(proc, 5)

    def version(self) -> str:
        return str(self._call(lambda tp, api: api.get("/version").json().get("version", "")))

    def proxy(
        self, *, upstream: tuple[str, int], name: str | None = None, enabled: bool = True
    ) -> ToxiproxyProxy:
        """Create a proxy listening on ``host``:free port, forwarding to ``upstream``."""
        name = name or f"hx{next(self._names)}"
        up = f"{upstream[0]}:{upstream[1]}"
        proxy = self._call(
            lambda tp, api: tp.create(
                upstream=up, name=name, listen=f"{self.host}:0", enabled=enabled
            )
        )
        host, _, port = proxy.listen.rpartition(":")
        return ToxiproxyProxy(self, proxy, (host, int(port)))

    def reset(self) -> None:
        """Enable every proxy and remove every toxic."""
        self._call(lambda tp, api: tp.reset())

    def _call(self, fn: Callable[[Any, Any], _T]) -> _T:
        if self._proc is None:
            raise ToxiproxyError("Toxiproxy server is not running (use it as a context manager)")
        return _api(self.host, self.port, fn)

    def _start_once(self, binary: Path) -> str:
        """Start and wait until the API answers; '' on success, else why it failed."""
        cmd = [str(binary), "-host", self.host, "-port", str(self.port)]
        self._log.clear()
        announced = threading.Event()
        try:
            proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        except OSError as exc:
            raise ToxiproxyError(f"cannot run {binary}: {exc.strerror}") from exc
        threading.Thread(
            target=self._drain, args=(proc, announced), daemon=True, name="toxiproxy-log"
        ).start()
        deadline = time.monotonic() + self.ready_timeout_s
        # First the log line that the HTTP server is starting, then a connect (it may log
        # just before it binds). Each wait is a blocking wait with the deadline left.
        announced.wait(self.ready_timeout_s)
        for _ in range(1000):  # bounded; each turn waits on the process for up to 10 ms
            if _can_connect(self.host, self.port):
                self._proc = proc
                return ""
            try:
                proc.wait(timeout=min(0.01, max(deadline - time.monotonic(), 0)))
                break  # it exited: port taken or a bad flag
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    break
        proc.kill()
        proc.wait()
        return (
            f"no API on {self.host}:{self.port} within {self.ready_timeout_s} s; log: "
            + " | ".join(self._log)
        )

    def _drain(self, proc: subprocess.Popen[bytes], announced: threading.Event) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:  # ends when the process exits
            line = raw.decode("utf-8", "replace").strip()
            self._log.append(line)
            if "Starting Toxiproxy HTTP server" in line or "API HTTP server starting" in line:
                announced.set()
        announced.set()


class ToxiproxyProxy:
    """One proxy of a :class:`ToxiproxyServer`: listen address, toxics, enable/disable."""

    def __init__(self, server: ToxiproxyServer, proxy: Any, listen: tuple[str, int]) -> None:
        self._server = server
        self._proxy = proxy
        self.name: str = proxy.name
        self.listen = listen
        self.upstream: str = proxy.upstream
        #: Set when a ``down`` toxic with a duration has enabled the proxy again.
        self.restored = threading.Event()

    @property
    def url(self) -> str:
        return f"http://{self.listen[0]}:{self.listen[1]}"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def add(self, toxic: Toxic) -> None:
        """Add ``toxic`` now (``down`` disables the proxy: every connection is dropped)."""
        if toxic.type == "down":
            self.restored.clear()
            self.disable()
            duration_ms = toxic.attrs["duration"]
            if duration_ms:
                timer = threading.Timer(duration_ms / 1000, self._enable_quietly)
                timer.daemon = True
                timer.start()
            return
        self._server._call(
            lambda tp, api: self._proxy.add_toxic(
                type=toxic.type,
                name=toxic.name,
                stream=toxic.stream,
                toxicity=float(toxic.toxicity),
                attributes=toxic.attrs,
            )
        )

    def remove(self, toxic: Toxic | str) -> None:
        """Remove a toxic (by object or name); for ``down``, enable the proxy again."""
        if isinstance(toxic, Toxic) and toxic.type == "down":
            self.enable()
            return
        name = toxic.name if isinstance(toxic, Toxic) else toxic
        self._server._call(lambda tp, api: self._proxy.destroy_toxic(name))

    def toxics(self) -> dict[str, dict[str, Any]]:
        """The toxics the server has on this proxy: name -> {type, stream, toxicity, attributes}."""
        found = self._server._call(lambda tp, api: self._proxy.toxics())
        return {
            n: {
                "type": t.type,
                "stream": t.stream,
                "toxicity": t.toxicity,
                "attributes": dict(t.attributes),
            }
            for n, t in found.items()
        }

    def disable(self) -> None:
        """Take the proxy down: stop listening and drop every open connection."""
        self._server._call(lambda tp, api: self._proxy.disable())

    def enable(self) -> None:
        self._server._call(lambda tp, api: self._proxy.enable())

    def _enable_quietly(self) -> None:
        # A timer thread: the server may have been stopped meanwhile; nothing to enable then.
        with contextlib.suppress(ToxiproxyError):
            self.enable()
        self.restored.set()

    @property
    def enabled(self) -> bool:
        found = self._server._call(lambda tp, api: tp.get_proxy(self.name))
        return bool(found is not None and found.enabled)

    def destroy(self) -> None:
        self._server._call(lambda tp, api: self._proxy.destroy())

    @contextlib.contextmanager
    def toxic(self, toxic: Toxic) -> Iterator[Toxic]:
        """Add ``toxic`` for the duration of the block."""
        self.add(toxic)
        try:
            yield toxic
        finally:
            self.remove(toxic)


# --------------------------------------------------------------------------- helpers

_T = TypeVar("_T")
_API_LOCK = threading.Lock()


def _api(host: str, port: int, fn: Callable[[Any, Any], _T]) -> _T:
    """Run ``fn(Toxiproxy(), APIConsumer)`` against ``host:port``: the one place
    toxiproxy-python and requests errors are mapped to :class:`ToxiproxyError`."""
    try:
        import requests
        from toxiproxy import Toxiproxy
        from toxiproxy.api import APIConsumer
        from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists
    except ImportError as exc:
        raise ToxiproxyError(
            "toxiproxy-python is not installed: pip install 'llm-transport-harness[netem]'"
        ) from exc
    with _API_LOCK:
        APIConsumer.host, APIConsumer.port = host, port
        try:
            return fn(Toxiproxy(), APIConsumer)
        except (ProxyExists, NotFound, InvalidToxic) as exc:
            detail = (
                exc.args[0].decode("utf-8", "replace")
                if exc.args and isinstance(exc.args[0], bytes)
                else str(exc)
            )
            raise ToxiproxyError(f"Toxiproxy API: {type(exc).__name__}: {detail.strip()}") from exc
        except requests.RequestException as exc:
            raise ToxiproxyError(
                f"Toxiproxy API at {host}:{port} unreachable: {type(exc).__name__}"
            ) from exc


def _can_connect(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        return s.connect_ex((host, port)) == 0


def _check_no_proxy_env(host: str) -> None:
    """toxiproxy-python uses ``requests``, which honours HTTP_PROXY even for loopback
    unless NO_PROXY covers it; refuse clearly instead of talking to a proxy."""
    import requests.utils

    if requests.utils.get_environ_proxies(f"http://{host}:1/"):
        raise ToxiproxyError(
            f"an HTTP proxy is configured in the environment and NO_PROXY does not cover {host}: "
            f"set NO_PROXY={host},localhost for the Toxiproxy API"
        )
