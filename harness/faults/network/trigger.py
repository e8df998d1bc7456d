"""Scripted points: *when* a network fault fires, named by the fault server's timeline.

A scenario says ``at = "event:3"`` (a toxic) or ``cut_at = "event:3"`` (the kernel
link): fire once the server has sent its third SSE event. ``start`` means "before the
call", the default. The runner (or a test) waits for the point on the server's
timeline with :func:`wait_for_trigger`, which blocks on ``FaultServer.wait_for``
(a condition variable, no polling), then fires the fault.

    start        before the call starts
    accept       a connection was accepted          (server kind ``accepted``)
    request      a request was read                 (``request_read``)
    headers      status line and headers were sent  (``headers_sent``)
    event:N      the N-th SSE event was sent, N>=1  (``event_sent``, count N)
    request:N    the N-th request was read, N>=1    (``request_read``, count N)
    done:N       the N-th response ended normally   (``response_done``, count N)

Only LLM API exchanges (``/v1/chat/completions``, ``/v1/responses``, ``/v1/messages``)
count for the per-request points (request, headers, event, done): an agent's metadata
probes against a local base URL (GET /v1/models, /api/tags, ...) are not the call a
scenario means.

What it is not: a scheduler. It names the point and waits for it; firing is the
backend's job.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

from harness.apis import LLM_PATHS
from harness.faults import FaultSpecError

__all__ = ["TRIGGERS", "Trigger", "parse_trigger", "wait_for_trigger"]

#: Trigger kind -> the server timeline kind it waits for (None: fires at once).
TRIGGERS: dict[str, str | None] = {
    "start": None,
    "accept": "accepted",
    "request": "request_read",
    "headers": "headers_sent",
    "event": "event_sent",
    "done": "response_done",
}
_ALLOWED = "start, accept, request, request:N, headers, event:N, done:N (N >= 1)"
#: Server timeline kinds that belong to one request (filtered to LLM requests).
_PER_REQUEST = frozenset({"request_read", "headers_sent", "event_sent", "response_done"})


class _Server(Protocol):
    def wait_for(self, kind: str, *, timeout: float, count: int = 1) -> Any: ...


@dataclass(frozen=True)
class Trigger:
    """A point on the server's timeline: ``kind`` and the count ``n`` (>= 1)."""

    kind: str = "start"
    n: int = 1

    def __post_init__(self) -> None:
        if self.kind not in TRIGGERS:
            raise FaultSpecError("at", self.kind, _ALLOWED)
        if not isinstance(self.n, int) or isinstance(self.n, bool) or self.n < 1:
            raise FaultSpecError("at", f"{self.kind}:{self.n}", _ALLOWED)

    @property
    def immediate(self) -> bool:
        return self.kind == "start"

    def __str__(self) -> str:
        return self.kind if self.n == 1 and self.kind != "event" else f"{self.kind}:{self.n}"


def parse_trigger(text: Any, *, where: str = "at") -> Trigger:
    """``"event:3"`` -> ``Trigger("event", 3)``; errors name ``where`` and the allowed forms."""
    if isinstance(text, Trigger):
        return text
    if not isinstance(text, str):
        raise FaultSpecError(where, text, _ALLOWED)
    kind, sep, count = text.strip().partition(":")
    try:
        if kind == "event" and not sep:
            raise ValueError(text)
        return Trigger(kind, int(count) if sep else 1)
    except (ValueError, FaultSpecError):
        raise FaultSpecError(where, text, _ALLOWED) from None


def wait_for_trigger(trigger: Trigger, server: _Server, *, timeout: float) -> Any:
    """Block until ``trigger`` happened on ``server``'s timeline; returns the server's
    event (None for ``start``). Raises the server's ``TimeoutError`` after ``timeout``.

    Per-request points count LLM API exchanges only (see the module docstring): each
    round waits (on the server's condition, no polling) for as many more events as
    probes took, so the loop ends by the count or by the server's timeout."""
    kind = TRIGGERS[trigger.kind]
    if kind is None:
        return None
    # A server without request records (the kernel probe's SSE stub) counts everything.
    if kind not in _PER_REQUEST or not callable(getattr(server, "requests", None)):
        return server.wait_for(kind, timeout=timeout, count=trigger.n)
    deadline = time.monotonic() + timeout
    count = trigger.n
    while True:
        server.wait_for(kind, timeout=max(deadline - time.monotonic(), 0.0), count=count)
        llm = {r.index for r in server.requests() if r.path in LLM_PATHS}
        hits = [e for e in server.timeline() if e.kind == kind][:count]
        mine = [e for e in hits if e.request in llm]
        if len(mine) >= trigger.n:
            return mine[trigger.n - 1]
        count += trigger.n - len(mine)
