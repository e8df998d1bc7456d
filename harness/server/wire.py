"""Small complete HTTP/1.1 responses, and the request-level fault :class:`RequestSite`.

:func:`write_simple` sends a complete response with ``Content-Length`` (errors, models,
control API, a ``status`` fault). :class:`RequestSite` is where an action fires outside
a body (``accept``, ``request``, ``idle`` phases: ``harness.faults.Site``). The body
writer is ``body.py``; request parsing and routing are ``requests.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.faults import Fault, FaultScript
from harness.server.apis import error_body
from harness.server.connection import Connection

__all__ = [
    "REASONS",
    "Exchange",
    "RequestSite",
    "declared_length",
    "end_body",
    "framing_lines",
    "write_simple",
]

REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    413: "Payload Too Large",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
    529: "Overloaded",
}


@dataclass
class Exchange:
    """One request/response on a connection: what the writers need to act and record."""

    conn: Connection
    record: Callable[..., Any]  # record(kind, **detail) with conn/request already bound
    script: FaultScript
    fault: Fault | None
    request_id: str
    keep_alive: bool = True
    #: record_many(kind, [detail pairs, ...]): several events of one kind, one stamp
    record_many: Callable[[str, list[tuple[tuple[str, Any], ...]]], None] | None = None
    #: the loaded script's holds (``harness.server.holds``): where the body waits for a
    #: network fault the runner fires at one of its points
    holds: Any = None


async def write_simple(
    conn: Connection,
    code: int,
    body: bytes,
    *,
    content_type: str = "application/json",
    headers: Iterable[tuple[str, str]] = (),
    keep_alive: bool = True,
    record: Callable[..., Any] | None = None,
) -> None:
    """A complete response with ``Content-Length`` (errors, models, control API)."""
    lines = [f"HTTP/1.1 {code} {REASONS.get(code, 'Error')}", f"content-type: {content_type}"]
    lines += [f"{k}: {v}" for k, v in headers]
    lines.append(f"content-length: {len(body)}")
    if not keep_alive:
        lines.append("connection: close")
    conn.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    if record is not None:
        record("status_sent", code=code)
        record("headers_sent")
    await conn.drain()
    if record is not None:
        record("response_done", bytes=len(body))
    if not keep_alive:
        conn.close("connection: close")


class RequestSite:
    """The :class:`~harness.faults.Site` of a fault outside a body: the connection, the
    timeline and a complete error response; no body knobs."""

    def __init__(
        self, ex: Exchange, phase: str, api: str, ending: Callable[[], None] | None = None
    ) -> None:
        self.ex = ex
        self._ending = ending
        self.conn = ex.conn
        self.phase = phase
        self.api = api
        self._loop = asyncio.get_running_loop()

    def now(self) -> float:
        return self._loop.time()

    def record(self, kind: str, **detail: Any) -> None:
        self.ex.record(kind, **detail)

    def ending(self) -> None:
        if self._ending is not None:
            self._ending()

    async def respond(
        self, code: int, body: bytes, content_type: str, headers: Sequence[tuple[str, str]]
    ) -> None:
        await write_simple(
            self.conn,
            code,
            body,
            content_type=content_type,
            headers=headers,
            keep_alive=self.ex.keep_alive,
            record=self.ex.record,
        )

    def error_body(self, code: int, message: str) -> bytes:
        return error_body(self.api, code, message)

    async def end_body(self) -> None:
        raise RuntimeError(f"no body to end at phase {self.phase}")  # phases forbid it

    def keepalive_unit(self, comment: str) -> bytes:
        raise RuntimeError(f"no body at phase {self.phase}")

    async def write_keepalive(self, data: bytes, scheduled: float) -> None:
        raise RuntimeError(f"no body at phase {self.phase}")

    def slow_events(self, delay_s: float) -> None:
        raise RuntimeError(f"no body at phase {self.phase}")

    def slow_bytes(self, delay_s: float) -> None:
        raise RuntimeError(f"no body at phase {self.phase}")


async def end_body(
    ex: Exchange, framing: str, sent: int, *, truncated: bool = False, reason: str = "end of body"
) -> bool:
    """End a body of ``sent`` bytes under ``framing`` (the chunked terminator, the
    record, the close a close-delimited body or ``Connection: close`` needs); with
    ``truncated`` it ends before its terminal marker, a close-delimited one with FIN
    (``reason``). True when the connection may serve another request."""
    conn = ex.conn
    if truncated and framing == "close":
        await conn.flush()
        conn.half_close()
        conn.close(reason)
        return False
    if framing == "chunked":
        conn.write(b"0\r\n\r\n")
    await conn.drain()
    if truncated:
        ex.record("response_done", bytes=sent, truncated=True)
    else:
        ex.record("response_done", bytes=sent)
    if framing == "close" or not ex.keep_alive:
        conn.close("close-delimited body" if framing == "close" else "connection: close")
        return False
    return True


def framing_lines(framing: str, declared: int | None, *, keep_alive: bool) -> list[str]:
    """The header lines of a body's framing (chunked, content-length, close)."""
    lines = []
    if framing == "chunked":
        lines.append("transfer-encoding: chunked")
    elif framing == "content-length":
        lines.append(f"content-length: {declared}")
    if framing == "close" or not keep_alive:
        lines.append("connection: close")
    return lines


def declared_length(units: Sequence[tuple[bytes, bool]], fault: Fault | None) -> int:
    """A ``content-length`` body's length, computed up front: the units' bytes, or where
    ``fault``'s action ends the body cleanly (``truncate``), the bytes before its phase
    (its event count of counted units, its byte count, nothing at ``headers``)."""
    total = sum(len(u) for u, _ in units)
    if fault is None or not fault.action.ends_body_cleanly:
        return total
    if fault.phase.kind == "headers":
        return 0
    if fault.phase.kind == "bytes":
        return min(fault.phase.n or 0, total)
    n, size = 0, 0
    for data, counted in units:
        if counted and n == fault.phase.n:
            break
        size += len(data)
        n += counted
    return size
