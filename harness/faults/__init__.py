"""The fault model: what goes wrong, where in a response, and for which requests.

A fault is ``(phase, action, params)``. The phase says *where* in the life of one
request it fires; the action says *what* the server (or relay, or kernel backend) does
there. A :class:`FaultScript` is an ordered list of :class:`Rule` objects, each a
:class:`Match` (which requests) plus a fault; the first matching rule wins and an
unmatched request gets a healthy response.

Phases::

    accept       connection accepted, request not read yet
    request      request read, nothing sent
    headers      status line and headers sent, no body
    event:N      after N SSE events of the body were sent (N >= 0)
    bytes:N      after N body bytes were sent (may split a chunk or a UTF-8 sequence)
    idle         between requests on a kept-alive connection

Actions (one module each in :mod:`harness.faults.actions`, registered by name in
``ACTIONS``, with their server behaviour beside their params)::

    hang           hold the socket open and silent; ``duration_s`` (None: until the peer goes)
    fin            close the connection (FIN) without ending the response
    half_close     shutdown the write side; keep reading until the peer closes
    rst            abort the connection (SO_LINGER 0 -> RST)
    drip           send SSE comment lines every ``interval_s``; no content, ever
    slow           delay every following event (``per="event"``) or byte by ``delay_s``
    status         answer with an HTTP error ``code``, optional ``retry_after_s``/``body``
    malformed      send one data line of broken JSON, then continue the stream
    truncate       end the body cleanly but without the terminal marker
    close_idle     close a kept-alive connection after ``after_s`` idle
    stall_upload   stop reading the request body after ``after_bytes``
    swallow_close  relay only: the upstream closed, the client leg is kept open and silent
  payload faults (edit the events themselves; ``event:N`` = from counted unit N on):
    cut_tool_call  end the body inside a tool call's arguments (``at`` json, string, utf8)
    drop_field     remove ``field`` (finish_reason, usage, stop_reason, ...) from an event
    drop_event     leave out one event (``type``: e.g. the terminal one)
    duplicate_event send one event twice
    swap_events    send two adjacent events in the wrong order
    inband_error   an error event inside the 200 stream (``kind`` overloaded, rate_limit,
                   server_error), then the body ends
    comment        provider "processing" comments (``text``, ``count``) before unit N

There is no ``blackhole`` action: a dead peer is the kernel backend's ``[network]``
table (``harness.netem``), which takes the link down at its own trigger.

All durations are in *scenario seconds*: ``Fault.scaled(k)`` multiplies every one of
them by one ``time_scale`` factor. Invalid input raises :class:`FaultSpecError` naming
the field, the value and the allowed values.

This package imports nothing from the rest of ``harness``: the server, the relay, the
kernel backend and the scenario loader all share it.
"""

from __future__ import annotations

from harness.faults import actions as _actions  # noqa: F401  (registers every action)
from harness.faults.actions.close_idle import CloseIdle
from harness.faults.actions.drip import Drip
from harness.faults.actions.fin import Fin
from harness.faults.actions.half_close import HalfClose
from harness.faults.actions.hang import Hang
from harness.faults.actions.malformed import Malformed
from harness.faults.actions.rst import Rst
from harness.faults.actions.slow import Slow
from harness.faults.actions.stall_upload import StallUpload
from harness.faults.actions.status import Status
from harness.faults.actions.swallow_close import SwallowClose
from harness.faults.actions.truncate import Truncate
from harness.faults.base import (
    ACTIONS,
    BACKENDS,
    PHASE_KINDS,
    Action,
    FaultSpecError,
    Phase,
    Site,
    register,
)
from harness.faults.script import (
    DIALECTS,
    FRAMINGS,
    REPLY_SHAPES,
    Fault,
    FaultScript,
    Match,
    Rule,
    fault_from_dict,
    script_from_dict,
)

__all__ = [
    "ACTIONS",
    "BACKENDS",
    "DIALECTS",
    "FRAMINGS",
    "PHASE_KINDS",
    "REPLY_SHAPES",
    "Action",
    "CloseIdle",
    "Drip",
    "Fault",
    "FaultScript",
    "FaultSpecError",
    "Fin",
    "HalfClose",
    "Hang",
    "Malformed",
    "Match",
    "Phase",
    "Rst",
    "Rule",
    "Site",
    "Slow",
    "StallUpload",
    "Status",
    "SwallowClose",
    "Truncate",
    "fault_from_dict",
    "register",
    "script_from_dict",
]
