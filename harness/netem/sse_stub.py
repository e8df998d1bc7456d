"""A tiny stdlib-only SSE upstream for the netem backends and relay tests.

What it is for: a server the kernel backend can start inside a network namespace
(``ip netns exec A python -m harness.netem.sse_stub ...``) and that relay tests can run
in a thread, with no dependency on the fault server. It answers every POST with a
chat-completions style SSE stream over HTTP/1.1 chunked encoding, keeps connections
alive between requests, and after the scripted number of events either finishes
(``done``: final chunk, ``[DONE]``, terminating chunk), goes silent with the socket
open (``hang``) or closes without the terminating chunk (``fin``).

What it is not: the fault server. Scenarios use ``harness.server``; this stub only has
to make bytes flow so the network path can be cut under them.

As a program it prints ``{"event": "ready", "host": ..., "port": ...}`` on stdout once listening and runs until
killed (SIGTERM/SIGINT end it cleanly). With ``--announce`` it also prints its timeline
as JSON lines, the same kinds as the fault server's (``accepted``, ``request_read``,
``headers_sent``, ``event_sent`` with ``n``, ``response_done``, ``closed``), each with
``t`` = ``time.monotonic()``, so a parent in another namespace can wait for a scripted
point (``harness.netem.deadpeer.run_dead_peer``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass

__all__ = ["AFTER", "StubSettings", "StubServer", "main", "serve"]

AFTER = ("done", "hang", "fin")


@dataclass(frozen=True)
class StubSettings:
    """What every response looks like. ``first_done`` requests finish normally before
    ``after`` applies (so a pooled connection can be set up first)."""

    events: int = 5
    interval_s: float = 0.0
    after: str = "done"
    first_done: int = 0
    text: str = "tok"

    def __post_init__(self) -> None:
        if self.after not in AFTER:
            raise ValueError(f"after: {self.after!r} is not valid; allowed: {', '.join(AFTER)}")
        if self.events < 0 or self.interval_s < 0 or self.first_done < 0:
            raise ValueError("events, interval_s and first_done must be >= 0")


class StubServer:
    """The stub in a background thread: ``with StubServer(StubSettings(...)) as s: s.port``."""

    def __init__(
        self, settings: StubSettings | None = None, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.settings = settings or StubSettings()
        self.host = host
        self.port = port
        self.requests = 0
        self._events: list[dict] = []
        self._cond = threading.Condition()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None

    def __enter__(self) -> StubServer:
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(ready,), daemon=True, name="sse-stub"
        )
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("sse stub did not start within 10 s")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def timeline(self) -> list[dict]:
        """Events so far: ``{"kind", "t", "conn", ...}`` (the fault server's kinds)."""
        with self._cond:
            return list(self._events)

    def wait_for(self, kind: str, *, timeout: float, count: int = 1) -> dict:
        """Block until the ``count``-th event of ``kind``; same contract as
        ``FaultServer.wait_for`` (raises ``TimeoutError``)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                hits = [e for e in self._events if e["kind"] == kind]
                if len(hits) >= count:
                    return hits[count - 1]
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"sse stub: no {kind!r} #{count} within {timeout} s")
                self._cond.wait(remaining)

    def _note(self, kind: str, **detail) -> None:
        with self._cond:
            self._events.append({"kind": kind, "t": time.monotonic(), **detail})
            self._cond.notify_all()

    def _run(self, ready: threading.Event) -> None:
        async def go() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            await serve(
                self.settings,
                host=self.host,
                port=self.port,
                on_ready=lambda p: (setattr(self, "port", p), ready.set()),
                stop=self._stop,
                counter=self,
                on_event=self._note,
            )

        asyncio.run(go())


async def serve(
    settings: StubSettings,
    *,
    host: str,
    port: int,
    on_ready=None,
    stop: asyncio.Event | None = None,
    counter: StubServer | None = None,
    on_event=None,
) -> None:
    """Serve until ``stop`` is set (or forever). ``on_event(kind, **detail)`` is called
    for every timeline event."""
    writers: set[asyncio.StreamWriter] = set()
    tasks: set[asyncio.Task] = set()
    conns = 0

    def note(kind: str, **detail) -> None:
        if on_event is not None:
            on_event(kind, **detail)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal conns
        conns += 1
        conn = conns
        writers.add(writer)
        me = asyncio.current_task()
        if me is not None:
            tasks.add(me)
        note("accepted", conn=conn)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                if length:
                    await reader.readexactly(length)
                n = 1
                if counter is not None:
                    counter.requests += 1
                    n = counter.requests
                note("request_read", conn=conn, request=n)
                done = n <= settings.first_done or settings.after == "done"
                if not await _respond(
                    writer,
                    settings,
                    finish=done,
                    note=functools.partial(note, conn=conn, request=n),
                ):
                    return
                if done:
                    note("response_done", conn=conn, request=n)
                else:
                    if settings.after == "fin":
                        writer.close()
                        return
                    await reader.read()  # hang: silent until the peer goes
                    return
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            return
        finally:
            writers.discard(writer)
            writer.close()
            note("closed", conn=conn)

    server = await asyncio.start_server(handle, host, port)
    bound = server.sockets[0].getsockname()[1]
    if on_ready is not None:
        on_ready(bound)
    async with server:
        if stop is None:
            await asyncio.Event().wait()
        else:
            await stop.wait()
        for w in list(writers):
            w.close()  # a handler waiting in read() sees EOF and returns
        await asyncio.gather(*(t for t in tasks if not t.done()), return_exceptions=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m harness.netem.sse_stub", description=__doc__.splitlines()[0]
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--events", type=int, default=5)
    p.add_argument("--interval-s", type=float, default=0.0)
    p.add_argument("--after", choices=AFTER, default="done")
    p.add_argument("--first-done", type=int, default=0)
    p.add_argument("--announce", action="store_true", help="print the timeline as JSON lines")
    args = p.parse_args(argv)
    settings = StubSettings(
        events=args.events, interval_s=args.interval_s, after=args.after, first_done=args.first_done
    )

    async def go() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)

        def ready(port: int) -> None:
            _print({"event": "ready", "host": args.host, "port": port, "pid": os.getpid()})

        def announce(kind: str, **detail) -> None:
            if args.announce:
                _print({"kind": kind, **detail})

        await serve(
            settings,
            host=args.host,
            port=args.port,
            on_ready=ready,
            stop=stop,
            counter=StubServer(settings),
            on_event=announce,
        )

    asyncio.run(go())
    return 0


# --------------------------------------------------------------------------- helpers


def _print(obj: dict) -> None:
    print(json.dumps({**obj, "t": time.monotonic()}), flush=True)


async def _respond(writer: asyncio.StreamWriter, s: StubSettings, *, finish: bool, note) -> bool:
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"transfer-encoding: chunked\r\ncache-control: no-cache\r\n\r\n"
    )
    try:
        writer.write(head)
        await writer.drain()
        note("headers_sent")
        for i in range(s.events):
            if s.interval_s and i:
                await asyncio.sleep(s.interval_s)  # the stream's pacing, not a synchronisation
            writer.write(_chunk(_event({"content": f"{s.text}{i} "}, None)))
            await writer.drain()
            note("event_sent", n=i + 1)
        if finish:
            writer.write(_chunk(_event({}, "stop")) + _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
            await writer.drain()
        return True
    except ConnectionError:
        return False


def _event(delta: dict, finish_reason: str | None) -> bytes:
    body = {
        "id": "chatcmpl-stub",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
