"""The fault server's routes, control API and per-connection request loop.

:class:`ServerCore` lives on the asyncio loop thread. For every accepted connection
it runs :meth:`ServerCore.serve_connection`: parse a request head with h11, match the
script's rule (by path, attempt, connection, request on connection), fire
``accept``-phase faults, read the body (``stall_upload`` stops reading it), fire
``request``-phase faults, route, and write the reply with ``wire.write_reply`` (body
faults). After the reply, the rule's ``idle``-phase fault, the script's
``idle_timeout_s``, or the next request.

Phases as implemented here:

* ``accept`` fires once the request line and headers are parsed (the path is needed
  to match a rule) and before the body is read; the kernel has already accepted
  whatever the client sent, so to the client this is "before the request was read".
  The request record of an accept-phase fault has ``stream=False`` and no
  ``expected_text`` unless the body was read (``status``, ``stall_upload``).
* ``idle``: ``close_idle`` closes (FIN, or RST with ``rst=true``) when no request
  arrives within ``after_s``; ``hang``/``fin``/``half_close``/``rst`` wait for the
  first bytes of the next request on the connection and then fire without answering
  it -- the close that races a request on a pooled connection.

Routes: ``POST /v1/chat/completions``, ``POST /v1/responses``, ``POST /v1/messages``,
``GET /v1/models``; control API ``PUT /_harness/script`` (``{"script": {...},
"time_scale": 1.0}``), ``GET /_harness/timeline``, ``GET /_harness/requests``,
``POST /_harness/reset``. Control requests are neither matched nor recorded. Any API
key is accepted. Bad input (garbage, oversized head -> 431, oversized body -> 413,
invalid JSON -> 400, unknown route -> 404) is answered in the OpenAI error shape or
closed; it never stops the server.

The thread wrapper is :class:`harness.server.fault_server.FaultServer`.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import h11

from harness.faults import FaultScript, FaultSpecError, script_from_dict
from harness.server.apis import API_BY_PATH, error_body, models_body, plan_reply
from harness.server.connection import READ_CHUNK, Connection, PeerGone
from harness.server.timeline import RequestRecord, Timeline
from harness.server.wire import (
    Exchange,
    fire_connection_fault,
    status_response,
    write_reply,
    write_simple,
)

__all__ = ["MAX_BODY_BYTES", "MAX_HEAD_BYTES", "ServerCore", "check_server_script"]

MAX_HEAD_BYTES = 16 * 1024
MAX_BODY_BYTES = 32 * 1024 * 1024
#: While a script has a stall_upload rule, request heads are read this many bytes at a
#: time so that little of the body is pulled from the kernel before the rule is known.
CAUTIOUS_READ_BYTES = 512
CONTROL_PREFIX = "/_harness/"
SERVER_BACKEND = "server"


def check_server_script(script: FaultScript) -> None:
    """Raise FaultSpecError for actions the userspace server cannot perform."""
    for i, rule in enumerate(script.rules):
        action = rule.fault.action
        if SERVER_BACKEND not in action.backends:
            raise FaultSpecError(
                f"rules[{i}].fault.action",
                action.name,
                f"actions the fault server can perform (not {action.name}: backends "
                f"{', '.join(action.backends)} only; blackhole needs the kernel backend, "
                "swallow_close the relay)",
            )


@dataclass
class _ConnState:
    """Per-connection numbering and visibility. A connection joins the timeline (and
    gets its number) at its first non-control request, or when it ends having sent
    none; until then its events are held back, and a connection used only for the
    control API never appears, so it cannot shift ``match.connections``."""

    epoch: int = -1
    number: int = 0
    requests: int = 0
    visible: bool = False
    had_control: bool = False
    held: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)


class ServerCore:
    """Script, counters and timeline, plus the request loop run on the event loop."""

    def __init__(self, script: FaultScript, *, time_scale: float) -> None:
        self.timeline = Timeline()
        self._lock = threading.Lock()
        self._time_scale = time_scale
        self._script = script.scaled(time_scale)
        self._epoch = 0
        self._connections = 0
        self._request_index = 0
        self._attempts: dict[str, int] = {}
        self.on_load: Callable[[], None] | None = None  # FaultServer adjusts its listener
        self.tasks: set[asyncio.Task[None]] = set()
        self._read_buffer = bytearray(READ_CHUNK)  # shared by the loop's connections
        self.open: set[Connection] = set()
        #: When set, answers every routed request in place of the synthetic replies:
        #: ``await reply_source.reply(ex, request, body) -> keep`` (harness.record).
        self.reply_source: Any = None

    # ------------------------------------------------------------------ script / counters

    def load(self, script: FaultScript, *, time_scale: float | None = None) -> None:
        check_server_script(script)
        k = self._time_scale if time_scale is None else time_scale
        scaled = script.scaled(k)
        with self._lock:
            self._script = scaled
            self._reset_locked()
        if self.on_load is not None:
            self.on_load()

    def reset(self) -> None:
        with self._lock:
            self._reset_locked()

    @property
    def script(self) -> FaultScript:
        with self._lock:
            return self._script

    def _reset_locked(self) -> None:
        self._epoch += 1
        self._connections = 0
        self._request_index = 0
        self._attempts = {}
        self.timeline.reset()

    # ------------------------------------------------------------------ connections

    def protocol_factory(self) -> Connection:
        state = _ConnState()
        holder: dict[str, Any] = {}

        def record(kind: str, **detail: Any) -> None:
            if state.visible:
                self.timeline.record(state.number, holder.get("request"), kind, **detail)
            elif not state.had_control:
                state.held.append((time.monotonic(), kind, detail))

        def made(conn: Connection) -> None:
            self.open.add(conn)
            record("accepted")
            task = asyncio.get_running_loop().create_task(
                self.serve_connection(conn, state, holder, record)
            )
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

        cautious = _has_stall(self.script)
        return Connection(
            made,
            record,
            read_limit=CAUTIOUS_READ_BYTES if cautious else None,
            read_buffer=self._read_buffer,
        )

    def _number(self, state: _ConnState) -> None:
        with self._lock:
            if state.epoch != self._epoch:
                self._connections += 1
                state.epoch, state.number, state.requests = self._epoch, self._connections, 0

    async def serve_connection(
        self,
        conn: Connection,
        state: _ConnState,
        holder: dict[str, Any],
        record: Callable[..., Any],
    ) -> None:
        idle_fault = None
        try:
            while True:
                script = self.script
                head = await self._read_head(conn, script, idle_fault, record)
                idle_fault = None
                if head is None:
                    break
                parser, request = head
                holder["request"] = None
                keep, idle_fault = await self._handle(conn, state, holder, record, parser, request)
                if not keep:
                    break
        except PeerGone:
            pass
        finally:
            if not state.visible and not state.had_control:
                self._show(state)
            if not conn.lost and not conn.closing:
                conn.close("end of connection")
            self.open.discard(conn)

    def _show(self, state: _ConnState) -> None:
        """Make a connection visible: number it and release its held-back events."""
        self._number(state)
        state.visible = True
        for t, kind, detail in state.held:
            self.timeline.record_at(t, state.number, None, kind, detail)
        state.held.clear()

    # ------------------------------------------------------------------ reading

    async def _read_head(
        self, conn: Connection, script: FaultScript, idle_fault: Any, record: Callable[..., Any]
    ) -> tuple[h11.Connection, h11.Request] | None:
        """Parse the next request head; None when the connection should end."""
        loop = asyncio.get_running_loop()
        cautious = _has_stall(script)
        conn.allow_read(conn.bytes_in + CAUTIOUS_READ_BYTES if cautious else None)
        parser = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        idle_deadline = (
            None if script.idle_timeout_s is None else loop.time() + script.idle_timeout_s
        )
        got_any = False
        eof_fed = False
        while True:
            data = conn.take_input()
            if data:
                parser.receive_data(data)
                got_any = True
            try:
                event = parser.next_event()
            except h11.RemoteProtocolError as exc:
                await self._bad_request(conn, exc, record)
                return None
            if isinstance(event, h11.Request):
                size = len(event.target) + sum(len(k) + len(v) + 4 for k, v in event.headers)
                if size > MAX_HEAD_BYTES:  # h11 only limits heads that arrive incomplete
                    err = h11.RemoteProtocolError("request head too large", error_status_hint=431)
                    await self._bad_request(conn, err, record)
                    return None
                return parser, event
            if isinstance(event, h11.ConnectionClosed):
                return None
            # NEED_DATA
            if conn.gone:
                if not got_any or eof_fed:
                    return None  # a clean close between requests (or after a half request)
                parser.receive_data(b"")
                eof_fed = True
                continue
            if got_any:
                await conn.wait_input(None)
                continue
            if idle_fault is not None:
                if not await self._idle_fault(conn, idle_fault, record):
                    return None
                idle_fault = None
                continue
            if not await conn.wait_input(idle_deadline):
                conn.close("idle_timeout_s")
                return None

    async def _idle_fault(self, conn: Connection, ex: Exchange, record: Callable[..., Any]) -> bool:
        """Run a rule's idle-phase fault; True when the connection goes on serving."""
        loop = asyncio.get_running_loop()
        action = ex.fault.action  # type: ignore[union-attr]
        if action.name == "close_idle":
            if await conn.wait_input(loop.time() + action.after_s) and not conn.gone:
                return True
            if conn.gone:
                return False
            record("fault", action="close_idle", phase="idle")
            if action.rst:
                conn.reset("close_idle")
            else:
                conn.half_close()
                conn.close("close_idle")
            return False
        await conn.wait_input(None)
        if conn.gone:
            return False
        await fire_connection_fault(ex, "idle")
        return False

    async def _read_body(
        self, conn: Connection, parser: h11.Connection, stall: Any, record: Callable[..., Any]
    ) -> bytes | None:
        """Read the request body (None: the peer went away or sent garbage)."""
        loop = asyncio.get_running_loop()
        chunks: list[bytes] = []
        size = 0
        stalled = stall is None
        if stall is not None:
            conn.allow_read(
                conn.bytes_in + max(0, stall.after_bytes - len(parser.trailing_data[0]))
            )
        while True:
            try:
                event = parser.next_event()
            except h11.RemoteProtocolError:
                return None
            if isinstance(event, h11.Data):
                chunks.append(event.data)
                size += len(event.data)
                if size > MAX_BODY_BYTES:
                    return None
                continue
            if isinstance(event, h11.EndOfMessage):
                leftover, _closed = parser.trailing_data
                conn.unread(leftover)
                conn.allow_read(None)
                return b"".join(chunks)
            if isinstance(event, h11.ConnectionClosed):
                return None
            # NEED_DATA
            if not stalled and size >= stall.after_bytes:
                stalled = True
                conn.allow_read(conn.bytes_in)  # read nothing more from the kernel
                record("upload_stalled", body_bytes=size)
                deadline = None if stall.duration_s is None else loop.time() + stall.duration_s
                if not await conn.sleep_until(deadline):
                    return None
                record("upload_resumed", body_bytes=size)
                conn.allow_read(None)
            data = conn.take_input()
            if data:
                parser.receive_data(data)
                continue
            if conn.gone:
                parser.receive_data(b"")
                continue
            if not stalled:
                conn.allow_read(conn.bytes_in + max(1, stall.after_bytes - size))
            await conn.wait_input(None)

    # ------------------------------------------------------------------ one request

    async def _handle(
        self,
        conn: Connection,
        state: _ConnState,
        holder: dict[str, Any],
        record: Callable[..., Any],
        parser: h11.Connection,
        request: h11.Request,
    ) -> tuple[bool, Exchange | None]:
        """Answer one request; (keep the connection?, idle-phase exchange or None)."""
        method = request.method.decode("latin-1")
        target = request.target.decode("latin-1")
        path = target.split("?", 1)[0]
        keep_alive = _keep_alive(request)

        if path.startswith(CONTROL_PREFIX):
            if not state.visible:
                state.had_control = True
                state.held.clear()
            body = await self._read_body(conn, parser, None, record)
            if body is None:
                return False, None
            # in a worker thread: serializing a long timeline takes tens of ms, and the
            # loop must keep paced streams on schedule meanwhile (the GIL is shared, but
            # the loop gets its turn every switch interval instead of waiting it out)
            code, payload = await asyncio.to_thread(self._control_response, method, path, body)
            await write_simple(conn, code, payload, keep_alive=keep_alive)
            return keep_alive, None

        if not state.visible:
            self._show(state)
        self._number(state)
        script = self.script
        with self._lock:
            state.requests += 1
            self._request_index += 1
            index = self._request_index
            self._attempts[path] = self._attempts.get(path, 0) + 1
            attempt = self._attempts[path]
        holder["request"] = index
        t_start = time.monotonic()
        rule = script.rule_for(
            path=path,
            attempt=attempt,
            connection=state.number,
            request_on_connection=state.requests,
        )
        fault = rule.fault if rule is not None else None
        record("request_head", method=method, path=path, attempt=attempt)
        ex = Exchange(conn, record, script, fault, f"req_{index}", keep_alive)
        api = API_BY_PATH.get(path, "models" if path == "/v1/models" else "unknown")

        recorded = False

        def add_record(stream: bool, expected: str, body_bytes: int) -> None:
            nonlocal recorded
            if recorded:
                return
            recorded = True
            self.timeline.add_request(
                RequestRecord(
                    index=index,
                    path=path,
                    api=api,
                    stream=stream,
                    attempt=attempt,
                    connection=state.number,
                    request_on_connection=state.requests,
                    fault=str(fault) if fault is not None else None,
                    expected_text=expected,
                    t_start=t_start,
                    body_bytes=body_bytes,
                )
            )

        phase = fault.phase.kind if fault is not None else None
        name = fault.action.name if fault is not None else None
        if phase == "accept" and name in ("hang", "fin", "half_close", "rst"):
            add_record(False, "", 0)
            await fire_connection_fault(ex, "accept")
            return False, None

        declared = _content_length(request)
        if declared is not None and declared > MAX_BODY_BYTES:
            add_record(False, "", 0)
            record("bad_request", code=413, error=f"content-length {declared}")
            message = f"request body of {declared} bytes is over the limit of {MAX_BODY_BYTES}"
            await write_simple(conn, 413, error_body(api, 413, message), keep_alive=False)
            return False, None
        stall = fault.action if name == "stall_upload" else None
        if stall is not None:
            record("fault", action="stall_upload", phase="accept", after_bytes=stall.after_bytes)
        if parser.they_are_waiting_for_100_continue:  # curl does this for bodies over 1 KB
            conn.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        body_record = record
        if stall is not None and stall.duration_s is None:
            # A stall without end never finishes the read: count the request when it
            # stalls, so a runner that reads the records while the client is still
            # blocked in send (or just gave up) sees it.
            # (recorded before the event, so a waiter on upload_stalled finds it)
            def body_record(kind: str, **detail: Any) -> None:
                if kind == "upload_stalled":
                    add_record(False, "", int(detail.get("body_bytes", 0)))
                record(kind, **detail)

        body = await self._read_body(conn, parser, stall, body_record)
        if body is None:
            add_record(False, "", 0)
            if not conn.gone:
                await write_simple(
                    conn, 400, error_body(None, 400, "malformed request body"), keep_alive=False
                )
            return False, None

        doc: Any = None
        bad: str | None = None
        if method == "POST" and api in ("chat", "responses", "messages"):
            try:
                doc = json.loads(body.decode("utf-8")) if body else None
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                bad = f"request body is not valid JSON: {exc}"
            if bad is None and not isinstance(doc, dict):
                bad = "request body must be a JSON object"
        stream = bool(doc.get("stream")) if isinstance(doc, dict) else False
        plan = None
        if bad is None and isinstance(doc, dict) and self.reply_source is None:
            plan = plan_reply(api, doc, events=script.events, content=script.content)
        expected = plan.expected_text if plan is not None else ""
        if self.reply_source is not None:
            expected = self.reply_source.expected_text(path)
        add_record(stream, expected, len(body))
        record("request_read", bytes=len(body))

        if name == "status" or (
            phase == "request" and name in ("hang", "fin", "half_close", "rst")
        ):
            if name == "status":
                record("fault", action="status", phase=phase)
                code, err, ctype, headers = status_response(fault.action, api)
                await write_simple(
                    conn,
                    code,
                    err,
                    content_type=ctype,
                    headers=headers,
                    keep_alive=keep_alive,
                    record=record,
                )
                return keep_alive and not conn.closing, None
            await fire_connection_fault(ex, "request")
            return False, None

        if self.reply_source is not None:
            keep = await self.reply_source.reply(ex, request, body)
            return keep, _idle(ex, phase) if keep else None
        if bad is not None:
            await write_simple(
                conn, 400, error_body(api, 400, bad), keep_alive=keep_alive, record=record
            )
            return keep_alive, None
        if plan is None:
            if method == "GET" and path == "/v1/models":
                await write_simple(conn, 200, models_body(), keep_alive=keep_alive, record=record)
                return keep_alive, _idle(ex, phase)
            code = 405 if path in API_BY_PATH or path == "/v1/models" else 404
            message = (
                f"{method} {path} is not a route of this server"
                if code == 404
                else f"{method} not allowed"
            )
            await write_simple(
                conn, code, error_body(None, code, message), keep_alive=keep_alive, record=record
            )
            return keep_alive, None
        keep = await write_reply(ex, plan)
        return keep, _idle(ex, phase) if keep else None

    async def _bad_request(
        self, conn: Connection, exc: h11.RemoteProtocolError, record: Callable[..., Any]
    ) -> None:
        code = exc.error_status_hint if exc.error_status_hint in (400, 413, 431) else 400
        record("bad_request", code=code, error=str(exc))
        if not conn.gone:
            await write_simple(
                conn, code, error_body(None, code, f"bad request: {exc}"), keep_alive=False
            )
        else:
            conn.close("bad request")

    # ------------------------------------------------------------------ control API

    def _control_response(self, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        code, doc = self._control(method, path, body)
        return code, json.dumps(doc).encode()

    def _control(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        route = path[len(CONTROL_PREFIX) :]
        if route == "script" and method == "PUT":
            try:
                doc = json.loads(body.decode("utf-8") or "{}")
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                return 400, _err(400, f"body is not valid JSON: {exc}")
            if not isinstance(doc, dict):
                return 400, _err(400, "body must be a JSON object with script and time_scale")
            try:
                script = script_from_dict(doc.get("script"))
                scale = doc.get("time_scale")
                self.load(script, time_scale=None if scale is None else scale)
            except FaultSpecError as exc:
                return 400, {
                    "error": {
                        "message": str(exc),
                        "type": "invalid_request_error",
                        "code": "bad_script",
                        "field": exc.field,
                        "allowed": exc.allowed,
                    }
                }
            return 200, {"ok": True, "script": self.script.to_dict()}
        if route == "timeline" and method == "GET":
            return 200, {"events": [e.to_dict() for e in self.timeline.events()]}
        if route == "requests" and method == "GET":
            return 200, {"requests": [r.to_dict() for r in self.timeline.requests()]}
        if route == "reset" and method == "POST":
            self.reset()
            return 200, {"ok": True}
        return 404, _err(404, f"{method} {path} is not a control route")


def _has_stall(script: FaultScript) -> bool:
    return any(r.fault.action.name == "stall_upload" for r in script.rules)


def _idle(ex: Exchange, phase: str | None) -> Exchange | None:
    return ex if phase == "idle" else None


def _content_length(request: h11.Request) -> int | None:
    for name, value in request.headers:
        if name == b"content-length":
            return int(value)  # h11 has validated it
    return None


def _keep_alive(request: h11.Request) -> bool:
    if request.http_version == b"1.0":
        return False
    for name, value in request.headers:
        if name == b"connection" and b"close" in value.lower():
            return False
    return True


def _err(code: int, message: str) -> dict[str, Any]:
    return json.loads(error_body(None, code, message))
