"""Which socket a request is using, so a fired deadline can shut exactly that one down.

A guarded client shares one connection pool between requests (and threads), so an
abort must reach the one socket serving *this* request -- also before its response
exists (no first byte yet) and on a reused pooled connection, where no connect event
fires. The guard therefore wraps the pool's network backend: every network stream it
hands out is a :class:`BoundStream`, which on each write binds itself to the
request running in the current context (:data:`CURRENT`, a ``ContextVar``: per thread
in sync code, per task in async code). The transport sets :data:`CURRENT` only while
the pool sends the request and reads its headers; the body's reads need no binding
(the connection is the request's until its response is closed).

:meth:`Binding.abort` is what the watchdog calls: ``shutdown(SHUT_RDWR)`` on the bound
socket (the only thing that wakes a thread blocked in ``recv``; it wakes an asyncio
reader too), now, or on the socket bound later if the abort raced the connect.

:func:`install` swaps the backend of an httpx ``HTTPTransport`` / ``AsyncHTTPTransport``
(httpx and httpx2 alike): ``transport._pool._network_backend``, the one private name the
guard relies on (pinned by a test for both libraries).

Not here: deadlines (``harness.client.watchdog``), the transport (``transport.py``).
"""

from __future__ import annotations

import contextvars
import socket
import threading
from typing import Any

__all__ = ["CURRENT", "AsyncBoundBackend", "Binding", "BoundBackend", "BoundStream", "install"]


class Binding:
    """The socket of one request; ``abort`` shuts it down (from any thread, never blocks)."""

    __slots__ = ("_lock", "_stream", "aborted")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stream: Any = None
        self.aborted = False

    def bind(self, stream: Any) -> None:
        with self._lock:
            self._stream = stream
            aborted = self.aborted
        if aborted:  # the abort came first (e.g. during connect): end this one too
            _shutdown(stream)

    def abort(self) -> None:
        with self._lock:
            self.aborted = True
            stream = self._stream
        if stream is not None:
            _shutdown(stream)


#: The request whose I/O runs in this context (set by the transport around the pool call).
CURRENT: contextvars.ContextVar[Binding | None] = contextvars.ContextVar(
    "harness_guard_binding", default=None
)


def install(transport: Any, *, is_async: bool) -> None:
    """Wrap ``transport``'s pool backend so its streams bind to the current request."""
    pool = transport._pool
    inner = pool._network_backend
    if isinstance(inner, BoundBackend | AsyncBoundBackend):
        return
    pool._network_backend = AsyncBoundBackend(inner) if is_async else BoundBackend(inner)


class BoundStream:
    """A network stream that binds itself to the current request on every write.

    A request's first I/O on a connection, new or pooled, is writing itself (HTTP/1.1:
    the request goes out before its response is read), so binding on writes reaches
    every request; reads go straight to the inner stream (``read`` is the inner
    stream's own method: no lookup per body read)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.read = inner.read

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        binding = CURRENT.get()
        if binding is not None:
            binding.bind(self)
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, *args: Any, **kwargs: Any) -> BoundStream:
        return BoundStream(self._inner.start_tls(*args, **kwargs))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class AsyncBoundStream(BoundStream):
    """The asyncio twin of :class:`BoundStream`."""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # type: ignore[override]
        binding = CURRENT.get()
        if binding is not None:
            binding.bind(self)
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, *args: Any, **kwargs: Any) -> AsyncBoundStream:  # type: ignore[override]
        return AsyncBoundStream(await self._inner.start_tls(*args, **kwargs))


class BoundBackend:
    """A sync network backend whose streams are :class:`BoundStream`."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def connect_tcp(self, *args: Any, **kwargs: Any) -> BoundStream:
        return BoundStream(self._inner.connect_tcp(*args, **kwargs))

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> BoundStream:
        return BoundStream(self._inner.connect_unix_socket(*args, **kwargs))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class AsyncBoundBackend(BoundBackend):
    """An async network backend whose streams are :class:`AsyncBoundStream`."""

    async def connect_tcp(self, *args: Any, **kwargs: Any) -> AsyncBoundStream:  # type: ignore[override]
        return AsyncBoundStream(await self._inner.connect_tcp(*args, **kwargs))

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> AsyncBoundStream:  # type: ignore[override]
        return AsyncBoundStream(await self._inner.connect_unix_socket(*args, **kwargs))

    async def sleep(self, seconds: float) -> None:  # type: ignore[override]
        await self._inner.sleep(seconds)


def _shutdown(stream: Any) -> None:
    try:
        sock = stream.get_extra_info("socket")
    except (AttributeError, KeyError):
        return
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed or never connected: nothing left to wake
