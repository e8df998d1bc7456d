"""Every SDK client gets its own fresh httpx client, built from a copy of the caller's kwargs.

The regression this module exists for: a keepalive fix injected an ``httpx.Client`` into
the caller's ``client_kwargs`` dict *in place*; the first SDK client closed it on
rebuild, and every later SDK client built from the same dict reused the closed transport
("Cannot send a request, as the client has been closed"). Here:

- :meth:`TransportFactory.build` copies the caller's mapping (and the dicts inside it)
  before touching it; the caller's dict is never mutated and never holds a transport.
- Each :class:`OwnedClient` pairs one ``openai.OpenAI`` with one ``httpx.Client`` built
  for it (``HTTPTransport(socket_options=...)`` with the keepalive options) and closes
  both together. ``close()`` is idempotent; rebuild and close are safe in any order.
- :meth:`OwnedClient.abort` shuts down every socket the client opened
  (``shutdown(SHUT_RDWR)``: the one call that wakes a thread blocked in ``recv``) and
  marks it aborted; the reference client never sends another request on an aborted
  client, it builds a new one.

Sockets are found through httpcore's public ``trace`` request extension (installed by a
request event hook): the ``connection.connect_tcp.complete`` event carries the new
network stream, whose ``get_extra_info("socket")`` is the socket. That works before any
response exists (a stall waiting for the status line), which
``response.extensions["network_stream"]`` cannot.

Not here: deadlines (``watchdog.py``), retries (``retry.py``).
"""

from __future__ import annotations

import copy
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from harness.client.compat import httpx, openai
from harness.client.keepalive import SocketOption, keepalive_options, socket_constants
from harness.client.settings import ClientSettings, SettingsError

__all__ = ["OwnedClient", "SocketRegistry", "TransportFactory", "copy_sdk_kwargs"]

KeepaliveBuilder = Callable[[str, Mapping[str, int], ClientSettings], list[SocketOption]]

#: Keys the reference client sets itself; a caller passing them is told so.
_OWNED_KEYS = ("http_client", "base_url", "api_key")


def copy_sdk_kwargs(sdk_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """A defensive copy: a new dict, and new containers for dict/list values, so nothing
    the SDK or we do to the copy can reach the caller's objects."""
    return {k: copy.copy(v) if isinstance(v, dict | list) else v for k, v in sdk_kwargs.items()}


class SocketRegistry:
    """The sockets one httpx client opened, seen through httpcore's trace extension."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Strong references, pruned as they close: asyncio hands out TransportSocket
        # wrappers, which cannot be weakly referenced.
        self._sockets: list[Any] = []
        self._aborted = False

    def install(self, request: Any) -> None:
        """Request event hook (sync): trace this request's connection setup."""
        request.extensions = {**request.extensions, "trace": self._trace}

    async def ainstall(self, request: Any) -> None:
        """Request event hook (async)."""
        request.extensions = {**request.extensions, "trace": self._atrace}

    def add(self, sock: Any) -> None:
        if sock is None:
            return
        with self._lock:
            self._sockets = [s for s in self._sockets if s.fileno() != -1]
            self._sockets.append(sock)
            aborted = self._aborted
        if aborted:
            # The abort raced the connect (the caller's thread was descheduled before it
            # connected): shut the new socket down too, or its first read would block.
            _shutdown(sock)

    def live(self) -> list[Any]:
        with self._lock:
            return [s for s in self._sockets if s.fileno() != -1]

    def shutdown_all(self) -> int:
        """``shutdown(SHUT_RDWR)`` every open socket, now and any opened later; returns
        how many were shut now. Never blocks."""
        with self._lock:
            self._aborted = True
        return sum(_shutdown(sock) for sock in self.live())

    def _trace(self, event_name: str, info: Mapping[str, Any]) -> None:
        if event_name == "connection.connect_tcp.complete":
            self.add(_socket_of(info.get("return_value")))

    async def _atrace(self, event_name: str, info: Mapping[str, Any]) -> None:
        self._trace(event_name, info)


class OwnedClient:
    """One SDK client and the one httpx client it owns; closed together."""

    def __init__(
        self, sdk: Any, http: Any, sockets: SocketRegistry, socket_options: list[SocketOption]
    ) -> None:
        self.sdk = sdk
        self.http = http
        self.sockets = sockets
        self.socket_options = socket_options
        self.aborted = False

    @property
    def closed(self) -> bool:
        return bool(self.http.is_closed)

    @property
    def usable(self) -> bool:
        return not self.aborted and not self.closed

    def abort(self) -> None:
        """Mark aborted and wake any blocked reader or writer (safe from any thread)."""
        self.aborted = True
        self.sockets.shutdown_all()

    def close(self) -> None:
        """Close the SDK client and its transport (idempotent)."""
        self.sdk.close()
        self.http.close()

    async def aclose(self) -> None:
        await self.sdk.close()
        await self.http.aclose()


class TransportFactory:
    """Builds :class:`OwnedClient` objects. Replaceable as a whole (a mutant seam)."""

    def __init__(
        self,
        *,
        keepalive_builder: KeepaliveBuilder = keepalive_options,
        platform: str = sys.platform,
        constants: Mapping[str, int] | None = None,
    ) -> None:
        self.keepalive_builder = keepalive_builder
        self.platform = platform
        self.constants = dict(socket_constants() if constants is None else constants)

    def socket_options(self, settings: ClientSettings) -> list[SocketOption]:
        return self.keepalive_builder(self.platform, self.constants, settings)

    def build(
        self,
        *,
        base_url: str,
        api_key: str,
        sdk_kwargs: Mapping[str, Any],
        settings: ClientSettings,
        is_async: bool = False,
    ) -> OwnedClient:
        """One SDK client with its own httpx client; only the classes differ by flavour."""
        kwargs = self._sdk_kwargs(base_url, api_key, sdk_kwargs, settings)
        options = self.socket_options(settings)
        sockets = SocketRegistry()
        if is_async:
            client_cls, transport_cls, sdk_cls = (
                httpx.AsyncClient,
                httpx.AsyncHTTPTransport,
                openai.AsyncOpenAI,
            )
            hook = sockets.ainstall
        else:
            client_cls, transport_cls, sdk_cls = httpx.Client, httpx.HTTPTransport, openai.OpenAI
            hook = sockets.install
        http = client_cls(
            transport=transport_cls(socket_options=options),
            timeout=kwargs["timeout"],
            event_hooks={"request": [hook]},
            trust_env=False,
        )
        return OwnedClient(sdk_cls(**kwargs, http_client=http), http, sockets, options)

    @staticmethod
    def _sdk_kwargs(
        base_url: str, api_key: str, sdk_kwargs: Mapping[str, Any], settings: ClientSettings
    ) -> dict[str, Any]:
        kwargs = copy_sdk_kwargs(sdk_kwargs)
        for key in _OWNED_KEYS:
            if key in kwargs:
                raise SettingsError(
                    f"sdk_kwargs[{key!r}]",
                    "<given>",
                    "omitted: the reference client sets it itself",
                )
        kwargs["base_url"] = base_url
        kwargs["api_key"] = api_key
        kwargs["max_retries"] = 0  # retries are ours (retry.py), with deadlines
        kwargs.setdefault(
            "timeout",
            httpx.Timeout(
                connect=settings.connect_timeout_s,
                read=settings.read_timeout_s,
                write=settings.read_timeout_s,
                pool=settings.connect_timeout_s,
            ),
        )
        return kwargs


def _shutdown(sock: Any) -> bool:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        return False  # already closed or not connected: nothing left to wake
    return True


def _socket_of(stream: Any) -> Any:
    """The stream's socket: a ``socket.socket`` (sync) or asyncio's ``TransportSocket``
    (async; it allows ``shutdown``, which is all an abort needs)."""
    if stream is None:
        return None
    try:
        sock = stream.get_extra_info("socket")
    except (AttributeError, KeyError):
        return None
    return sock if hasattr(sock, "shutdown") and hasattr(sock, "fileno") else None
