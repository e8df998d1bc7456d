"""A minimal streaming client run inside the client namespace by the kernel backend.

What it is for: measuring how a bare httpx client and one with TCP keepalive /
TCP_USER_TIMEOUT socket options notice a dead path, without depending on the reference
stack (the runner runs real targets through ``KernelPath.command_prefix``). It speaks
JSON lines on stdout, one object per line, each stamped with ``time.monotonic()``
(system-wide on Linux, so comparable with the parent's cut time)::

    {"event": "ready", "pid": ...}
    {"event": "sse", "request": 1, "n": 3}             every SSE data line received
    {"event": "response", "request": 1, "text": ...}   a stream that ended normally
    {"event": "waiting_for_go"}                        shape in_flight: request 1 done,
                                                       waits for a line on stdin
    {"event": "result", "status": "returned" | "raised", "error": "ReadTimeout",
     "errno": 110, "strerror": "Connection timed out", "mro": [...]}

Shapes: ``waiting`` makes one streaming request and waits on it (the path dies while
the client only reads); ``in_flight`` makes one request to completion (the connection
is pooled), waits for "go" on stdin (the parent cuts the path first), then sends the
second request on the pooled connection, so its bytes are in flight when nothing
answers.

What it is not: a target. No retries, no deadlines beyond the optional read timeout.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from typing import Any

__all__ = ["SHAPES", "main", "socket_options"]

SHAPES = ("waiting", "in_flight")
BODY = {"model": "test-model", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def socket_options(
    keepalive: tuple[int, int, int] | None, user_timeout_s: float | None
) -> list[tuple[int, int, int]]:
    """Linux socket options: SO_KEEPALIVE + KEEPIDLE/KEEPINTVL/KEEPCNT, TCP_USER_TIMEOUT (ms)."""
    opts: list[tuple[int, int, int]] = []
    if keepalive is not None:
        idle, interval, count = keepalive
        opts += [
            (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1),
            (socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, idle),
            (socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, interval),
            (socket.IPPROTO_TCP, socket.TCP_KEEPCNT, count),
        ]
    if user_timeout_s is not None:
        opts.append(
            (socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, max(1, round(user_timeout_s * 1000)))
        )
    return opts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.netem.probe")
    p.add_argument("--url", required=True, help="server root URL, e.g. http://10.213.0.1:8000")
    p.add_argument("--shape", choices=SHAPES, default="waiting")
    p.add_argument("--keepalive", default=None, help="idle,interval,count in seconds, e.g. 1,1,2")
    p.add_argument("--user-timeout-s", type=float, default=None)
    p.add_argument("--read-timeout-s", type=float, default=None)
    args = p.parse_args(argv)
    keepalive = tuple(int(x) for x in args.keepalive.split(",")) if args.keepalive else None
    if keepalive is not None and len(keepalive) != 3:
        p.error("--keepalive: idle,interval,count")

    import httpx  # imported after argument checks: startup cost matters in the namespace

    transport = httpx.HTTPTransport(socket_options=socket_options(keepalive, args.user_timeout_s))
    timeout = httpx.Timeout(connect=5.0, read=args.read_timeout_s, write=None, pool=None)
    _emit("ready", pid=_pid())
    with httpx.Client(transport=transport, timeout=timeout, trust_env=False) as client:
        try:
            if args.shape == "in_flight":
                text = _stream(client, args.url, 1)
                _emit("response", request=1, text=text)
                _emit("waiting_for_go")
                sys.stdin.readline()
            n = 2 if args.shape == "in_flight" else 1
            text = _stream(client, args.url, n)
            _emit("response", request=n, text=text)
            _emit("result", status="returned", text=text)
        except Exception as exc:  # noqa: BLE001 - reported, not swallowed: this is the probe's output
            err = _errno_of(exc)
            _emit(
                "result",
                status="raised",
                error=type(exc).__name__,
                mro=[c.__name__ for c in type(exc).__mro__],
                message=str(exc)[:300],
                errno=err[0],
                strerror=err[1],
            )
    return 0


# --------------------------------------------------------------------------- helpers


def _stream(client: Any, url: str, request: int) -> str:
    parts = []
    n = 0
    with client.stream("POST", url.rstrip("/") + "/v1/chat/completions", json=BODY) as resp:
        for line in resp.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                n += 1
                _emit("sse", request=request, n=n)
                choices = json.loads(line[6:]).get("choices") or [{}]
                parts.append(choices[0].get("delta", {}).get("content") or "")
    return "".join(parts)


def _errno_of(exc: BaseException) -> tuple[int | None, str | None]:
    """The first OSError errno in the cause/context chain (how httpx wraps socket errors)."""
    seen = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, OSError) and cur.errno is not None:
            return cur.errno, cur.strerror
        cur = cur.__cause__ or cur.__context__
    return None, None


def _emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, "t": time.monotonic(), **fields}), flush=True)


def _pid() -> int:
    import os

    return os.getpid()


if __name__ == "__main__":
    sys.exit(main())
