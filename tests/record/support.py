"""Test doubles written independently of harness.record: an upstream and a raw client.

:class:`StubUpstream` is a plain asyncio HTTP/1.1 server (its own parsing, its own
chunking, no project code) that answers every request with a scripted list of
``(pause_s, bytes)`` chunks, each written as one HTTP chunk after its pause, and keeps
the raw request it received. :func:`fetch` is an h11 client that returns the status,
headers and the body as the list of HTTP chunks exactly as framed on the wire
(h11's ``chunk_start``/``chunk_end`` marks), so chunk boundaries are observable
regardless of how TCP coalesced segments.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import h11


@dataclass
class StubUpstream:
    """An independent upstream in its own thread; see the module docstring."""

    chunks: Sequence[tuple[float, bytes]] = ()
    status: int = 200
    content_type: str = "text/event-stream"
    requests: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="stub-upstream")
        self.port = 0

    def __enter__(self) -> StubUpstream:
        self._thread.start()
        assert self._ready.wait(10), "stub upstream did not start"
        return self

    def __exit__(self, *exc: Any) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())
        self._loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            body = await reader.readexactly(length)
            self.requests.append(head + body)
            writer.write(
                b"HTTP/1.1 %d OK\r\ncontent-type: %s\r\ntransfer-encoding: chunked\r\n"
                # It closes after one response, so it says so: without the header a
                # client may reuse the connection while the FIN is still on its way.
                b"x-upstream: stub\r\nconnection: close\r\n\r\n"
                % (self.status, self.content_type.encode())
            )
            await writer.drain()
            loop = asyncio.get_running_loop()
            t = loop.time()
            for pause, data in self.chunks:
                t += pause  # absolute schedule: pauses do not drift
                await asyncio.sleep(max(0.0, t - loop.time()))
                writer.write(b"%x\r\n%s\r\n" % (len(data), data))
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


@dataclass(frozen=True)
class Fetched:
    status: int
    headers: dict[str, str]
    chunks: list[bytes]
    complete: bool

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)


def fetch(
    url_base: str,
    path: str = "/chat/completions",
    body: Any = None,
    *,
    headers: Sequence[tuple[str, str]] = (),
    timeout: float = 10.0,
) -> Fetched:
    """POST ``body`` (JSON) to ``url_base + path``; read until the response ends."""
    rest = url_base.split("://", 1)[1]
    hostport, _, prefix = rest.partition("/")
    host, port = hostport.rsplit(":", 1)
    payload = json.dumps(body if body is not None else {"model": "m", "stream": True}).encode()
    conn = h11.Connection(h11.CLIENT)
    sock = socket.create_connection((host, int(port)), timeout=timeout)
    try:
        req = h11.Request(
            method="POST",
            target=f"/{prefix}{path}",
            headers=[
                ("host", hostport),
                ("content-type", "application/json"),
                ("content-length", str(len(payload))),
                *headers,
            ],
        )
        sock.sendall(
            conn.send(req) + conn.send(h11.Data(data=payload)) + conn.send(h11.EndOfMessage())
        )
        chunks: list[bytes] = []
        current = b""
        status, hdrs, complete = 0, {}, False
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = sock.recv(65536)
                conn.receive_data(data)
                if not data:
                    try:
                        event = conn.next_event()
                    except h11.RemoteProtocolError:
                        break
                    if event is h11.NEED_DATA:
                        break
                else:
                    continue
            if isinstance(event, h11.Response):
                status = event.status_code
                hdrs = {k.decode(): v.decode() for k, v in event.headers}
            elif isinstance(event, h11.Data):
                if event.chunk_start:
                    current = b""
                current += event.data
                if event.chunk_end:
                    chunks.append(current)
                    current = b""
            elif isinstance(event, h11.EndOfMessage):
                complete = True
                break
            elif isinstance(event, h11.ConnectionClosed):
                break
        if current:
            chunks.append(current)
        return Fetched(status, hdrs, chunks, complete)
    finally:
        sock.close()


def sse_chunks(texts: Sequence[str]) -> list[bytes]:
    """One SSE ``data:`` event per text."""
    return [f"data: {t}\n\n".encode() for t in texts]
