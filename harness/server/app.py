"""The fault server's connections, counters and control API.

:class:`ServerCore` lives on the asyncio loop thread. For every accepted connection
it runs :meth:`ServerCore.serve_connection`: read a request head (``reading.py``; the
previous rule's idle-phase fault runs while the connection waits), number the request
(index, attempt per path, connection, request on connection) and hand it to
``requests.answer`` (route -> rule -> handler), or answer a control request here.

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
from harness.server.apis import error_body
from harness.server.connection import READ_CHUNK, Connection, PeerGone
from harness.server.holds import Holds
from harness.server.reading import (
    CAUTIOUS_READ_BYTES,
    MAX_BODY_BYTES,
    MAX_HEAD_BYTES,
    Head,
    has_stall,
    read_body,
    read_head,
)
from harness.server.requests import Request, answer
from harness.server.timeline import Timeline
from harness.server.wire import Exchange, write_simple

__all__ = ["MAX_BODY_BYTES", "MAX_HEAD_BYTES", "ServerCore", "check_server_script"]

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
                f"{', '.join(action.backends)} only)",
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
    #: The script epoch the connection was accepted in (a connection that ends with no
    #: request is shown only in its own case's timeline).
    born: int = -1
    held: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)


class ServerCore:
    """Script, counters and timeline, plus the request loop run on the event loop."""

    def __init__(self, script: FaultScript, *, time_scale: float) -> None:
        self.timeline = Timeline()
        self.holds = Holds()  # where bodies wait for the runner's network faults
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
        self.holds.clear()

    # ------------------------------------------------------------------ connections

    def protocol_factory(self) -> Connection:
        state = _ConnState()
        holder: dict[str, Any] = {}

        def record(kind: str, **detail: Any) -> None:
            if state.visible and state.epoch == self._epoch:
                self.timeline.record(state.number, holder.get("request"), kind, **detail)
            elif not state.visible and not state.had_control:
                state.held.append((time.monotonic(), kind, detail))
            # else: a connection of an earlier script (the last case's, still closing or
            # pooled): its events belong to that case's timeline, never to this one's. A
            # request on it in this case numbers it afresh (``_handle``).

        def record_many(kind: str, details: list[tuple[tuple[str, Any], ...]]) -> None:
            if state.visible and state.epoch == self._epoch:
                self.timeline.record_many(state.number, holder.get("request"), kind, details)
            else:
                for d in details:
                    record(kind, **dict(d))

        def made(conn: Connection) -> None:
            state.born = self._epoch
            self.open.add(conn)
            record("accepted", port=conn.peer_port)
            task = asyncio.get_running_loop().create_task(
                self.serve_connection(conn, state, holder, record, record_many)
            )
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

        cautious = has_stall(self.script)
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
        record_many: Callable[..., Any] | None = None,
    ) -> None:
        idle_fault = None
        try:
            while True:
                script = self.script
                head = await read_head(conn, script, idle_fault, record, self._bad_request)
                idle_fault = None
                if head is None:
                    break
                holder["request"] = None
                keep, idle_fault = await self._handle(
                    conn, state, holder, (record, record_many), head
                )
                if not keep:
                    break
        except PeerGone:
            pass
        finally:
            if not state.visible and not state.had_control and state.born == self._epoch:
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

    # ------------------------------------------------------------------ one request

    async def _handle(
        self,
        conn: Connection,
        state: _ConnState,
        holder: dict[str, Any],
        records: tuple[Callable[..., Any], Callable[..., Any] | None],
        head: Head,
    ) -> tuple[bool, Exchange | None]:
        """Answer one request; (keep the connection?, idle-phase exchange or None)."""
        record, record_many = records
        method, path, keep_alive = head.method, head.path, head.keep_alive

        if path.startswith(CONTROL_PREFIX):
            if not state.visible:
                state.had_control = True
                state.held.clear()
            body = await read_body(conn, head.parser, None, record)
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
        elif state.epoch != self._epoch:
            state.held.clear()  # a pooled connection of an earlier case, reused in this one
        self._number(state)
        with self._lock:
            state.requests += 1
            self._request_index += 1
            index = self._request_index
            self._attempts[path] = self._attempts.get(path, 0) + 1
            attempt = self._attempts[path]
        holder["request"] = index
        req = Request(
            conn=conn,
            record=record,
            head=head,
            index=index,
            attempt=attempt,
            connection=state.number,
            request_on_connection=state.requests,
            script=self.script,
            timeline=self.timeline,
            reply_source=self.reply_source,
            record_many=record_many,
            holds=self.holds,
        )
        return await answer(req)

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


def _err(code: int, message: str) -> dict[str, Any]:
    return json.loads(error_body(None, code, message))
