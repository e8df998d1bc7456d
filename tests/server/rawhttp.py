"""A raw-socket HTTP/1.1 client for observing the fault server byte by byte.

Tests use it to see exactly what reached the wire (status line, framing, the cut)
and how the connection ended (EOF, ECONNRESET, or still open at a deadline).
"""

from __future__ import annotations

import json
import select
import socket
import time
from dataclasses import dataclass
from typing import Any

CHAT = "/v1/chat/completions"


@dataclass(frozen=True)
class Received:
    data: bytes
    ending: str  # "eof", "reset" or "open" (deadline reached, socket still open)

    @property
    def head(self) -> bytes:
        return self.data.split(b"\r\n\r\n", 1)[0]

    @property
    def status(self) -> int:
        return int(self.head.split(b" ", 2)[1])

    @property
    def headers(self) -> dict[str, str]:
        lines = self.head.decode("latin-1").split("\r\n")[1:]
        return {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines)}

    @property
    def raw_body(self) -> bytes:
        return self.data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in self.data else b""

    def body(self) -> tuple[bytes, bool]:
        """The body payload (de-chunked when chunked) and whether it ended cleanly."""
        raw = self.raw_body
        if self.headers.get("transfer-encoding") == "chunked":
            return dechunk(raw)
        if "content-length" in self.headers:
            n = int(self.headers["content-length"])
            return raw[:n], len(raw) >= n
        return raw, self.ending == "eof"


def request_bytes(
    path: str = CHAT, body: Any = None, *, method: str = "POST", close: bool = False
) -> bytes:
    if body is None and method == "POST":
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    payload = (
        json.dumps(body).encode()
        if body is not None and not isinstance(body, bytes)
        else (body or b"")
    )
    head = f"{method} {path} HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\n"
    head += f"content-length: {len(payload)}\r\n"
    if close:
        head += "connection: close\r\n"
    return head.encode() + b"\r\n" + payload


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def send(port: int, path: str = CHAT, body: Any = None, **kw: Any) -> socket.socket:
    s = connect(port)
    s.sendall(request_bytes(path, body, **kw))
    return s


def read_until(
    sock: socket.socket,
    timeout: float,
    *,
    until: bytes | None = None,
    max_bytes: int | None = None,
    complete: bool = False,
) -> Received:
    """Read until EOF/RST, ``timeout`` seconds, ``until`` seen, ``max_bytes`` read, or
    (``complete``) a length-delimited response is complete."""
    deadline = time.monotonic() + timeout
    buf = bytearray()
    while True:
        if until is not None and until in buf:
            return Received(bytes(buf), "open")
        if complete and b"\r\n\r\n" in buf:
            got = Received(bytes(buf), "open")
            if "connection" not in got.headers and got.body()[1]:
                return got
        if max_bytes is not None and len(buf) >= max_bytes:
            return Received(bytes(buf), "open")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return Received(bytes(buf), "open")
        ready, _, _ = select.select([sock], [], [], remaining)
        if not ready:
            continue
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return Received(bytes(buf), "reset")
        if not chunk:
            return Received(bytes(buf), "eof")
        buf += chunk


def dechunk(raw: bytes) -> tuple[bytes, bool]:
    """Payload of a chunked body and whether the 0 terminator was reached. A chunk cut
    short contributes the bytes that arrived."""
    out = bytearray()
    pos = 0
    while True:
        end = raw.find(b"\r\n", pos)
        if end < 0:
            return bytes(out), False
        size = int(raw[pos:end], 16)
        if size == 0:
            return bytes(out), raw[end + 2 : end + 4] == b"\r\n"
        out += raw[end + 2 : end + 2 + size]
        if len(raw) < end + 2 + size + 2:
            return bytes(out), False
        pos = end + 2 + size + 2


def sse_events(payload: bytes) -> list[Any]:
    from harness.sse import Event, SSEDecoder

    dec = SSEDecoder()
    return [e for e in dec.feed(payload) if isinstance(e, Event)]
