"""The outbound leg of the recorder and the fault proxy: one request to the real upstream.

:class:`Upstream` forwards a request received by the proxy to ``base_url`` with httpx
(https for real providers) and streams the response back as raw byte chunks, as they
arrive, with their monotonic arrival time. Paths map one to one: the proxy's base URL
is ``http://127.0.0.1:PORT`` plus the upstream's path, so ``/api/v1/chat/completions``
on the proxy is ``/api/v1/chat/completions`` upstream.

Forwarded as the client sent them: method, target, body and end-to-end headers,
credentials included (the upstream needs them; nothing here stores or logs them).
Dropped: hop-by-hop headers and ``host``; ``accept-encoding`` is forced to
``identity`` so the bytes recorded and parsed into events are the bytes of the stream.
Timeouts: connect and write are bounded; reading is not (``read=None``): a silent
upstream must reach the client as silence, whose own deadlines decide.

Not here: the response to the client (``writer.py``), recording (``proxy.py``).
"""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_S",
    "HOP_BY_HOP",
    "Upstream",
    "UpstreamError",
    "UpstreamResponse",
    "end_to_end",
]

DEFAULT_CONNECT_TIMEOUT_S = 30.0
DEFAULT_WRITE_TIMEOUT_S = 60.0
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "expect",
    }
)


class UpstreamError(Exception):
    """The upstream could not be reached or answered garbage; the message is one line
    without credentials."""


@dataclass
class UpstreamResponse:
    """An open upstream response: status, end-to-end headers, and its raw chunks."""

    status: int
    headers: tuple[tuple[str, str], ...]
    response: httpx.Response

    async def chunks(self) -> AsyncIterator[tuple[float, bytes]]:
        """``(time.monotonic(), bytes)`` per chunk as received; UpstreamError if the
        stream breaks before its end."""
        try:
            async for data in self.response.aiter_raw():
                if data:
                    yield time.monotonic(), data
        except httpx.HTTPError as exc:
            raise UpstreamError(f"{type(exc).__name__}: {exc}") from exc


class Upstream:
    """An httpx client to one upstream base URL; see the module docstring."""

    def __init__(
        self,
        base_url: str,
        *,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        write_timeout_s: float = DEFAULT_WRITE_TIMEOUT_S,
        verify: bool = True,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(
                f"--upstream: {base_url!r} is not valid; allowed: an http(s) base URL "
                "such as https://openrouter.ai/api/v1"
            )
        if parts.username or parts.password:
            raise ValueError(
                "--upstream: a URL with credentials is not allowed; send keys as headers"
            )
        self.base_url = base_url.rstrip("/")
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.path = parts.path.rstrip("/")
        self._timeout = httpx.Timeout(
            connect=connect_timeout_s, read=None, write=write_timeout_s, pool=connect_timeout_s
        )
        # built here, not on first use: creating the SSL context costs ~0.2 s, which
        # would otherwise land on the first request's latency (and in a cassette)
        # TCP_NODELAY: httpcore writes a request's head and body separately, and Nagle
        # would hold the body until the head's delayed ACK (~40 ms on the first event)
        transport = httpx.AsyncHTTPTransport(
            verify=verify, socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        )
        self._client: httpx.AsyncClient | None = httpx.AsyncClient(
            transport=transport,
            timeout=self._timeout,
            follow_redirects=False,
            trust_env=False,  # never route a provider key through an ambient proxy
        )

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            raise UpstreamError("the upstream client is closed")
        return self._client

    @asynccontextmanager
    async def open(
        self, method: str, target: str, headers: Iterable[tuple[str, str]], body: bytes
    ) -> AsyncIterator[UpstreamResponse]:
        """Send the request; yield the open response; close it on exit."""
        out_headers = [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP]
        out_headers = [(k, v) for k, v in out_headers if k.lower() != "accept-encoding"]
        out_headers.append(("accept-encoding", "identity"))
        request = self._http().build_request(
            method, self.origin + target, headers=out_headers, content=body
        )
        try:
            response = await self._http().send(request, stream=True)
        except httpx.HTTPError as exc:
            raise UpstreamError(f"{type(exc).__name__} from {self.origin}: {exc}") from exc
        try:
            yield UpstreamResponse(response.status_code, end_to_end(response.headers.raw), response)
        finally:
            await response.aclose()

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def end_to_end(raw: Iterable[tuple[bytes, bytes]]) -> tuple[tuple[str, str], ...]:
    """Response headers without hop-by-hop ones, names lower-cased, in order."""
    out = []
    for name, value in raw:
        k = name.decode("latin-1").lower()
        if k not in HOP_BY_HOP:
            out.append((k, value.decode("latin-1")))
    return tuple(out)
