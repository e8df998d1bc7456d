"""The baseline servers of ``harness bench server``, each run as a child's main.

Every baseline answers ``POST /v1/chat/completions`` with a streamed reply whose shape
comes from the request's ``x-bench-events`` and ``x-bench-interval`` headers:

* :func:`raw_asyncio_main`: a minimal ``asyncio.start_server`` SSE server writing the
  same bytes as ours (the units of ``harness.server.apis.plan_reply``, chunked, the
  same response head), paced against absolute deadlines from the first event;
* :func:`uvicorn_main`: uvicorn + starlette ``StreamingResponse`` of the same units;
* :func:`llmock_main`: llmock 0.2.2 (the ``bench`` extra) as its ``llmock serve`` runs
  it (uvicorn's defaults), scripted through its Python API to reply with the same
  words (role chunk + one chunk per word + finish chunk + ``[DONE]``). It paces with
  its own ``chunk_delay_ms`` (a fixed sleep per chunk), set from the headers.

Each prints ``{"port": N, "notes": "..."}`` on stdout once it accepts connections.

Not here: the child-process handle (``server_children.py``).
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Sequence
from typing import Any

__all__ = ["llmock_main", "raw_asyncio_main", "uvicorn_main"]

BACKLOG = 4096
DEFAULT_EVENTS = 8


def raw_asyncio_main() -> int:
    """A minimal raw-asyncio SSE server (streams API), the same bytes as ours."""

    async def serve() -> None:
        server = await asyncio.start_server(raw_asyncio_handler(), sock=_listen())
        port = server.sockets[0].getsockname()[1]
        print(json.dumps({"port": port, "notes": "(asyncio.start_server)"}), flush=True)
        await server.serve_forever()

    asyncio.run(serve())
    return 0


def raw_asyncio_handler() -> Any:
    """The raw-asyncio server's ``client_connected_cb``."""
    from harness.server.apis import plan_reply

    count = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal count
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            headers = _headers(head)
            body = json.loads(await reader.readexactly(int(headers.get(b"content-length", 0))))
            events, interval = _shape(headers)
            plan = plan_reply("chat", body, events=events)
            count += 1
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: %s\r\ncache-control: no-cache\r\n"
                b"x-request-id: req_%d\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
                % (plan.content_type.encode(), count)
            )
            async for unit in _paced(plan.units, interval):
                writer.write(b"%x\r\n%b\r\n" % (len(unit), unit))
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass  # the client went away or sent garbage: this stream ends, the server goes on
        finally:
            writer.close()

    return handle


def uvicorn_main() -> int:
    """A minimal uvicorn + starlette SSE server producing the same chunk bytes."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    from harness.server.apis import plan_reply

    async def chat(request: Request) -> StreamingResponse:
        body = await request.json()
        events, interval = _shape({k.encode(): v.encode() for k, v in request.headers.items()})
        plan = plan_reply("chat", body, events=events)
        return StreamingResponse(_paced(plan.units, interval), media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    return _serve_uvicorn(app, uvicorn, label="uvicorn")


def llmock_main() -> int:
    """llmock 0.2.2, scripted to the same words as ours; see the module docstring."""
    import llmock
    import uvicorn
    from llmock.chaos import StreamChaos
    from llmock.main import create_app
    from llmock.scenarios import Reply
    from llmock.simulation import MockResponseSettings

    from harness.bench.server_load import REQUEST_BODY
    from harness.server.apis import plan_reply

    app = create_app(responses=MockResponseSettings(response_style="static", tool_mode="off"))
    state = app.state.llmock
    current: dict[str, Any] = {}

    def script(events: int, interval: float) -> None:
        # every stream of one bench phase has the same shape: re-script only on a change
        if current.get("shape") == (events, interval):
            return
        current["shape"] = (events, interval)
        text = plan_reply("chat", REQUEST_BODY, events=events).expected_text
        state.scenarios.clear()
        state.scenarios.add(Reply(text=text, times=None))
        state.stream_chaos = StreamChaos(chunk_delay_ms=round(interval * 1000))

    async def scripted(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            script(*_shape(dict(scope["headers"])))
        await app(scope, receive, send)

    return _serve_uvicorn(scripted, uvicorn, label=f"llmock {llmock.__version__}")


# --------------------------------------------------------------------------- helpers


def _headers(head: bytes) -> dict[bytes, bytes]:
    out = {}
    for line in head.split(b"\r\n")[1:]:
        name, sep, value = line.partition(b":")
        if sep:
            out[name.strip().lower()] = value.strip()
    return out


def _shape(headers: dict[bytes, bytes]) -> tuple[int, float]:
    return (
        int(headers.get(b"x-bench-events", DEFAULT_EVENTS)),
        float(headers.get(b"x-bench-interval", 0)),
    )


def _listen() -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(BACKLOG)
    return sock


def _serve_uvicorn(app: Any, uvicorn: Any, *, label: str) -> int:
    sock = _listen()
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, backlog=BACKLOG, lifespan="off"
    )
    server = uvicorn.Server(config)
    config.load()  # resolves "auto" http/loop to what is installed, as `uvicorn.run` does
    factory = config.get_loop_factory()
    loop = getattr(factory, "__module__", None) or "asyncio"
    impl = f"({label}, uvicorn {uvicorn.__version__}, {config.http_protocol_class.__name__}, loop {loop})"
    print(json.dumps({"port": sock.getsockname()[1], "notes": impl}), flush=True)
    server.run(sockets=[sock])
    return 0


async def _paced(units: Sequence[bytes], interval: float) -> AsyncIterator[bytes]:
    """``units`` on ours's schedule: one every ``interval`` s, on absolute deadlines from
    the first (a late one does not push the rest back)."""
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    for i, unit in enumerate(units):
        delay = t0 + i * interval - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        yield unit
