"""The failure rows of DESIGN.md's table, shared by the two suites that run them over
real sockets: ``tests/client/test_fault_rows.py`` (the reference client, both drivers,
every row) and ``tests/guard/test_guard_rows.py`` (the guard under the real SDKs, the
rows marked ``guard``). One table, so a row changed or added is changed for both.

Each suite brings its own deadlines: ``settings`` holds only a row's own changes to
them (``ClientSettings.replace`` keywords).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.client import errors

__all__ = ["GUARD_ROWS", "ROWS", "Row"]


@dataclass(frozen=True)
class Row:
    name: str
    fault: dict[str, Any]
    expected: type[errors.HarnessError]
    api: str = "chat"
    stream: bool = True
    script: dict[str, Any] = field(default_factory=dict)
    #: this row's changes to the suite's settings
    settings: dict[str, Any] = field(default_factory=dict)
    #: the guard's SDK suite runs this row too (streamed rows whose typed error an SDK
    #: surfaces as its own class)
    guard: bool = False


ROWS = [
    Row("fin mid-stream", {"phase": "event:3", "action": "fin"}, errors.PeerClosed),
    Row(
        "fin on a close-delimited body",
        {"phase": "event:3", "action": "fin"},
        errors.TruncatedStream,
        script={"framing": "close"},
        guard=True,
    ),
    Row(
        "truncate chunked",
        {"phase": "event:3", "action": "truncate"},
        errors.TruncatedStream,
        guard=True,
    ),
    Row(
        "truncate close-delimited",
        {"phase": "event:3", "action": "truncate"},
        errors.TruncatedStream,
        script={"framing": "close"},
    ),
    Row(
        "truncate after finish_reason, before [DONE]",
        {"phase": "event:10", "action": "truncate"},
        errors.TruncatedStream,
    ),
    Row(
        "no first byte", {"phase": "request", "action": "hang"}, errors.FirstByteTimeout, guard=True
    ),
    Row(
        "headers then nothing",
        {"phase": "headers", "action": "hang"},
        errors.FirstByteTimeout,
        guard=True,
    ),
    Row(
        "mid-stream stall",
        {"phase": "event:3", "action": "hang"},
        errors.StreamIdleTimeout,
        guard=True,
    ),
    Row(
        "comment drip",
        {"phase": "event:3", "action": "drip", "interval_s": 0.05},
        errors.StaleCall,
        guard=True,
    ),
    Row(
        "comment drip, comments not counted",
        {"phase": "event:3", "action": "drip", "interval_s": 0.05},
        errors.StreamIdleTimeout,
        settings={"idle_counts_comments": False},
    ),
    Row("rst mid-stream", {"phase": "event:3", "action": "rst"}, errors.PeerReset, guard=True),
    Row("rst before the response", {"phase": "request", "action": "rst"}, errors.PeerReset),
    Row("half close mid-stream", {"phase": "event:3", "action": "half_close"}, errors.PeerClosed),
    Row(
        "429 with Retry-After",
        {"phase": "request", "action": "status", "code": 429, "retry_after_s": 0.05},
        errors.ProviderError,
    ),
    Row(
        "502 html page",
        {
            "phase": "request",
            "action": "status",
            "code": 502,
            "content_type": "text/html",
            "body": "<html><body><h1>Bad gateway</h1></body></html>",
        },
        errors.ProviderError,
    ),
    Row("malformed json chunk", {"phase": "event:3", "action": "malformed"}, errors.MalformedEvent),
    Row(
        "responses stall",
        {"phase": "event:5", "action": "hang"},
        errors.StreamIdleTimeout,
        api="responses",
        guard=True,
    ),
    Row(
        "responses truncate",
        {"phase": "event:6", "action": "truncate"},
        errors.TruncatedStream,
        api="responses",
        guard=True,
    ),
    Row(
        "messages ping drip",
        {"phase": "event:4", "action": "drip", "interval_s": 0.05},
        errors.StaleCall,
        api="messages",
        guard=True,
    ),
    Row(
        "messages truncate before message_stop",
        {"phase": "event:12", "action": "truncate"},
        errors.TruncatedStream,
        api="messages",
        guard=True,
    ),
    Row(
        "non-stream no first byte",
        {"phase": "request", "action": "hang"},
        errors.FirstByteTimeout,
        stream=False,
    ),
    Row(
        "non-stream body cut on FIN",
        {"phase": "bytes:40", "action": "fin"},
        errors.TruncatedStream,
        stream=False,
        script={"framing": "close"},
    ),
    Row(
        "non-stream space drip",
        {"phase": "headers", "action": "drip", "interval_s": 0.05},
        errors.StaleCall,
        stream=False,
    ),
]

GUARD_ROWS = [r for r in ROWS if r.guard]
