"""One LLM request on the fault server: route -> rule -> handler.

:func:`answer` takes a parsed request head whose number, attempt and connection are
known, and runs the pipeline: the **route** (which API, from the path), the **rule**
(the script's first match), then the **handler**: the rule's action hooks
(``Action.before_body`` at ``accept``, ``upload_stall`` while the body is read,
``after_body`` at ``request``; see ``harness.faults.base``) and otherwise the healthy
reply written by ``body.write_reply`` (which fires body-phase faults). No action is
named here: what an action does lives in its own module.

Phases as implemented:

* ``accept`` fires once the request line and headers are parsed (the path is needed
  to match a rule) and before the body is read; the kernel has already accepted
  whatever the client sent, so to the client this is "before the request was read".
  The request record of an accept-phase fault has ``stream=False`` and no
  ``expected_text`` unless the body was read (``status``, ``stall_upload``).
* ``idle`` is run by ``reading.read_head`` before the next request (``Action.at_idle``).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import h11

from harness.apis import api_at, api_for, names
from harness.apis.lineage import Conversation, place
from harness.faults import FaultScript
from harness.server.apis import conversation_of, error_body, models_body, plan_reply
from harness.server.body import write_reply
from harness.server.connection import Connection
from harness.server.reading import MAX_BODY_BYTES, Head, read_body
from harness.server.timeline import RequestRecord, Timeline
from harness.server.wire import Exchange, RequestSite, write_simple

__all__ = ["Request", "answer"]


@dataclass
class Request:
    """A request head the loop has numbered, and where its records go."""

    conn: Connection
    record: Callable[..., Any]
    head: Head
    index: int
    attempt: int
    connection: int
    request_on_connection: int
    script: FaultScript
    timeline: Timeline
    #: answers the request in place of the synthetic reply (``harness.record``), or None
    reply_source: Any = None
    record_many: Callable[..., Any] | None = None
    holds: Any = None  # harness.server.holds.Holds


async def answer(req: Request) -> tuple[bool, Exchange | None]:
    """Answer one request; (keep the connection?, idle-phase exchange or None)."""
    conn, record, path = req.conn, req.record, req.head.path
    api = api_at(path) or ("models" if path == "/v1/models" else "unknown")
    rule = req.script.rule_for(
        path=path,
        attempt=req.attempt,
        connection=req.connection,
        request_on_connection=req.request_on_connection,
    )
    fault = rule.fault if rule is not None else None
    action = fault.action if fault is not None else None
    phase = fault.phase.kind if fault is not None else None
    # port: the client's, so a pooled connection first accepted in an earlier case is
    # still tied to its client-side socket (harness.posture.carried)
    record(
        "request_head",
        method=req.head.method,
        path=path,
        attempt=req.attempt,
        port=conn.peer_port,
    )
    ex = Exchange(
        conn,
        record,
        req.script,
        fault,
        f"req_{req.index}",
        req.head.keep_alive,
        req.record_many,
        req.holds if api in names() else None,
    )
    add_record = _once(req, api, str(fault) if fault is not None else None)

    if action is not None and phase == "accept":
        site = RequestSite(ex, "accept", api, ending=lambda: add_record(False, "", 0))
        if await action.before_body(site):
            return False, None

    declared = _content_length(req.head.request)
    if declared is not None and declared > MAX_BODY_BYTES:
        add_record(False, "", 0)
        record("bad_request", code=413, error=f"content-length {declared}")
        message = f"request body of {declared} bytes is over the limit of {MAX_BODY_BYTES}"
        await write_simple(conn, 413, error_body(api, 413, message), keep_alive=False)
        return False, None
    stall = action.upload_stall() if action is not None and phase == "accept" else None
    if req.head.parser.they_are_waiting_for_100_continue:  # curl does this for bodies over 1 KB
        conn.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    body_record = record
    if stall is not None and stall[1] is None:
        # A stall without end never finishes the read: count the request when it
        # stalls, so a runner that reads the records while the client is still
        # blocked in send (or just gave up) sees it (recorded before the event, so a
        # waiter on upload_stalled finds it).
        def body_record(kind: str, **detail: Any) -> None:
            if kind == "upload_stalled":
                add_record(False, "", int(detail.get("body_bytes", 0)))
            record(kind, **detail)

    framed = declared if not _has_header(req.head.request, b"transfer-encoding") else None
    body = await read_body(conn, req.head.parser, stall, body_record, framed)
    if body is None:
        add_record(False, "", 0)
        if not conn.gone:
            await write_simple(
                conn, 400, error_body(None, 400, "malformed request body"), keep_alive=False
            )
        return False, None

    doc, bad = _parse_json(req.head.method, api, body)
    stream = bool(doc.get("stream")) if isinstance(doc, dict) else False
    conv = conversation_of(api, doc) if bad is None and isinstance(doc, dict) else None
    placed = _place(req, conv)
    plan = None
    source = req.reply_source
    if bad is None and isinstance(doc, dict) and source is None:
        s = req.script
        plan = plan_reply(
            api,
            doc,
            events=s.events,
            content=s.content,
            shape=s.reply,
            reasoning_events=s.reasoning_events,
            dialect=s.dialect,
            tool=s.tool,
            answered=_answered(req, placed, conv),
            answer_tool=s.answer_tool,
        )
    expected = plan.expected_text if plan is not None else ""
    if source is not None:
        expected = source.expected_text(path)
    wrapped = plan.answer_arguments if plan is not None and source is None else None
    lineage = add_record(stream, expected, len(body), conv, placed, wrapped)
    record("request_read", bytes=len(body))
    if conv is not None and lineage is not None:
        record(
            "request_shape",
            stream=stream,
            tools=conv.tool_names,
            roles=conv.roles,
            messages=len(conv.turns),
            lineage=lineage["kind"],
            of=lineage["of"],
            call=lineage["call"],
            appended=tuple(lineage["appended"]),
            replaced=tuple(lineage["replaced"]),
        )

    if action is not None and phase in ("accept", "request"):
        if await action.after_body(RequestSite(ex, phase, api)):
            return req.head.keep_alive and not conn.closing and not conn.gone, None

    idle = ex if phase == "idle" else None
    if source is not None:
        keep = await source.reply(ex, req.head.request, body)
        return keep, idle if keep else None
    if bad is not None:
        await write_simple(
            conn, 400, error_body(api, 400, bad), keep_alive=req.head.keep_alive, record=record
        )
        return req.head.keep_alive, None
    if plan is None:
        if req.head.method == "GET" and path == "/v1/models":
            await write_simple(
                conn, 200, models_body(), keep_alive=req.head.keep_alive, record=record
            )
            return req.head.keep_alive, idle
        code = 405 if api_at(path) is not None or path == "/v1/models" else 404
        message = (
            f"{req.head.method} {path} is not a route of this server"
            if code == 404
            else f"{req.head.method} not allowed"
        )
        await write_simple(
            conn,
            code,
            error_body(None, code, message),
            keep_alive=req.head.keep_alive,
            record=record,
        )
        return req.head.keep_alive, None
    keep = await write_reply(ex, plan)
    return keep, idle if keep else None


def _once(req: Request, api: str, fault: str | None) -> Callable[..., dict[str, Any] | None]:
    """The request's record for the timeline, added once (whichever step ends it);
    returns its lineage (None: no body read, or added already)."""
    t_start = min(req.head.arrived_t, time.monotonic())
    done = False

    def add(
        stream: bool,
        expected: str,
        body_bytes: int,
        conv: Conversation | None = None,
        lineage: dict[str, Any] | None = None,
        answer_arguments: str | None = None,
    ) -> dict[str, Any] | None:
        nonlocal done
        if done:
            return None
        done = True
        req.timeline.add_request(
            RequestRecord(
                index=req.index,
                path=req.head.path,
                api=api,
                stream=stream,
                attempt=req.attempt,
                connection=req.connection,
                request_on_connection=req.request_on_connection,
                fault=fault,
                expected_text=expected,
                t_start=t_start,
                body_bytes=body_bytes,
                lineage=lineage,
                answer_arguments=answer_arguments,
                conversation=conv,
            )
        )
        return lineage

    return add


#: A tool call id the server issues (``call_<seed>_<n>``, every API), as an agent that
#: writes its calls into the conversation as text echoes it.
_CALL_ID = re.compile(r"call_[0-9a-f]{8}_[0-9]+")


def _place(req: Request, conv: Conversation | None) -> dict[str, Any] | None:
    """The request's lineage among the LLM requests the server read before it (None: no
    conversation read)."""
    if conv is None:
        return None
    earlier = [
        (r.index, r.conversation, int(r.lineage["call"]))
        for r in req.timeline.requests()
        if r.conversation is not None and r.lineage is not None
    ]
    return place(req.index, conv, earlier).to_dict()


def _answered(req: Request, lineage: dict[str, Any] | None, conv: Conversation | None) -> bool:
    """Does the request carry the model's tool call acted on, in a form the body alone
    does not show (a text observation: the call echoed as assistant text, then a user
    turn)? A continuation that appended both; a retry asks what the request that began
    its model call asked (``call``: the same turns, so ``conv`` serves both)."""
    if lineage is not None and lineage["kind"] == "retry":
        began = lineage["call"]
        lineage = next((r.lineage for r in req.timeline.requests() if r.index == began), None)
    if conv is None or lineage is None or lineage["kind"] != "continuation":
        return False
    # the server's tool call echoed as assistant text (its id), then the user's turn; a
    # client asking the model to go on with a cut answer echoes no id
    labels = list(lineage["appended"])
    turns = conv.turns[len(conv.turns) - len(labels) :]
    echoed = any(
        t.role == "assistant" and t.kind == "text" and _CALL_ID.search(str(t.key))
        for t in turns[:-1]
    )
    return echoed and labels[-1:] == ["user:text"]


def _parse_json(method: str, api: str, body: bytes) -> tuple[Any, str | None]:
    if api not in names() or method != api_for(api).method:
        return None, None
    try:
        doc = json.loads(body.decode("utf-8")) if body else None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"request body is not valid JSON: {exc}"
    if not isinstance(doc, dict):
        return None, "request body must be a JSON object"
    return doc, None


def _content_length(request: h11.Request) -> int | None:
    for name, value in request.headers:
        if name == b"content-length":
            return int(value)  # h11 has validated it
    return None


def _has_header(request: h11.Request, name: bytes) -> bool:
    return any(k == name for k, _ in request.headers)
