"""The load generator of ``harness bench server``: raw-socket asyncio SSE streams.

An httpx client saturates its core at about 10k events/s, before a lean server does
(measured for the bench), so streams are opened with ``asyncio.open_connection`` and events are
counted by their ``data: `` prefix. The same generator drives every server.

Also here: the server-side figures read back from the fault server's own timeline
(|actual - scheduled| of paced events, drip comments and hang ends).

Not here: the servers (``server_children.py``), the measurement plan (``server.py``).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "REQUEST_BODY",
    "StreamStats",
    "hang_end_errors",
    "request_bytes",
    "run_streams",
    "timeline_errors",
]

#: Seconds without a byte before a stream counts as an error.
READ_TIMEOUT_S = 30.0
REQUEST_BODY = {
    "model": "bench",
    "stream": True,
    "messages": [{"role": "user", "content": "bench"}],
}


@dataclass
class StreamStats:
    """What a batch of streams saw, from the client side."""

    events: int = 0
    errors: int = 0
    open: int = 0
    peak_open: int = 0
    wall_s: float = 0.0
    lateness: list[float] = field(default_factory=list)
    error_kinds: dict[str, int] = field(default_factory=dict)


async def run_streams(
    port: int,
    *,
    total: int,
    concurrency: int,
    interval_s: float,
    events: int,
    expect_done: bool = True,
) -> StreamStats:
    """Open ``total`` streams, ``concurrency`` at a time, and read each to its end."""
    stats = StreamStats()
    sem = asyncio.Semaphore(concurrency)
    request = request_bytes(port, events=events, interval_s=interval_s)
    t0 = time.monotonic()
    await asyncio.gather(
        *(_one_stream(port, request, sem, stats, interval_s, expect_done) for _ in range(total))
    )
    stats.wall_s = time.monotonic() - t0
    return stats


def request_bytes(port: int, *, events: int, interval_s: float) -> bytes:
    """One streamed chat request; baselines read the reply shape from x-bench-* headers."""
    body = json.dumps(REQUEST_BODY).encode()
    return (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
        "content-type: application/json\r\nauthorization: Bearer bench\r\n"
        f"x-bench-events: {events}\r\nx-bench-interval: {interval_s}\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode() + body


def timeline_errors(events: list[dict[str, Any]], kind: str) -> list[float]:
    """|actual - scheduled| of every ``kind`` event that carries its schedule."""
    return [
        abs(e["t"] - e["detail"]["scheduled"])
        for e in events
        if e["kind"] == kind and "scheduled" in e["detail"]
    ]


def hang_end_errors(events: list[dict[str, Any]], duration_s: float) -> list[float]:
    """|actual - scheduled| of each ``hang`` end (fault time + duration)."""
    fired: dict[tuple[int, Any], float] = {}
    errs = []
    for e in events:
        key = (e["conn"], e["request"])
        if e["kind"] == "fault" and e["detail"].get("action") == "hang":
            fired[key] = e["t"]
        elif e["kind"] == "closed" and e["detail"].get("reason") == "hang ended" and key in fired:
            errs.append(abs(e["t"] - (fired[key] + duration_s)))
    return errs


async def _one_stream(
    port: int,
    request: bytes,
    sem: asyncio.Semaphore,
    stats: StreamStats,
    interval_s: float,
    expect_done: bool,
) -> None:
    async with sem:
        writer = None
        counted_open = False
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
            if not head.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(head[:40].decode("latin-1"))
            stats.open += 1
            counted_open = True
            stats.peak_open = max(stats.peak_open, stats.open)
            offsets: list[float] = []  # arrival - i * interval, per event
            n = 0
            tail = b""
            while True:
                data = await asyncio.wait_for(reader.read(65536), READ_TIMEOUT_S)
                now = time.monotonic()
                if not data:
                    if expect_done:
                        raise RuntimeError("EOF before [DONE]")
                    break
                window = tail + data
                new = window.count(b"data: ") - tail.count(b"data: ")
                for _ in range(new):
                    offsets.append(now - n * interval_s)
                    n += 1
                stats.events += new
                if b"[DONE]" in window:
                    break
                tail = window[-16:]
            if interval_s > 0 and offsets:
                # the stream's schedule as the client sees it: its earliest offset
                anchor = min(offsets)
                stats.lateness.extend(o - anchor for o in offsets)
        except (TimeoutError, OSError, asyncio.IncompleteReadError, RuntimeError) as exc:
            stats.errors += 1
            key = type(exc).__name__
            stats.error_kinds[key] = stats.error_kinds.get(key, 0) + 1
        finally:
            if counted_open:
                stats.open -= 1
            if writer is not None:
                writer.close()
