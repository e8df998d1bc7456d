"""Terminal-marker rules for the stream reader: how each API's stream ends, what is
keep-alive, what is an in-band error.

A small pure module (no I/O, no SDK). The marker rules are each API module's (``harness.apis``) (shared
with the ``harness.guard`` transport, which classifies items without parsing them);
this module adds what a reader that parses payloads needs on top. Rules, matched against the official SDKs' own stream
parsers (``openai._streaming.Stream``, ``anthropic._streaming.Stream``) by the
differential conformance tests (``tests/conformance``)::

    chat       terminal "data: [DONE]"; an event whose JSON has a truthy "error"
               is an in-band provider error (the openai SDK raises APIError there)
    responses  terminal response.completed or response.incomplete; response.failed
               and the "error" event are in-band provider errors; a "data: [DONE]"
               after the terminal event (some compatible servers send one) ends the
               stream, as the openai SDK's reader does
    messages   terminal message_stop; "ping" is keep-alive, never progress; "error"
               is an in-band provider error (the anthropic SDK raises there)
    every API  SSE ":" comments are keep-alive; events after the terminal marker are
               ignored (the SDKs stop reading at "[DONE]"; a terminal event is final)

A stream that ends without its terminal marker is truncated, even when it ended
"cleanly" (a close-delimited body ending on FIN): :func:`marker` names what is missing.

In-band errors map to an HTTP-like status so the retry policy treats them like the
same error on a status line: overloaded -> 529, rate limit -> 429, else 500.
"""

from __future__ import annotations

from typing import Any

from harness.apis import api_for
from harness.client.markers import DONE, is_done

__all__ = [
    "DONE",
    "error_status",
    "is_done",
    "is_keepalive_event",
    "marker",
]

#: In-band error types/codes -> the status a provider would have put on the status line.
_STATUS = {
    "overloaded_error": 529,
    "overloaded": 529,
    "server_is_overloaded": 529,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "rate_limited": 429,
    "too_many_requests": 429,
    "api_error": 500,
    "server_error": 500,
}


def marker(api: str) -> str:
    """What a complete ``api`` stream ends with (for error messages)."""
    return api_for(api).terminal_marker


def is_keepalive_event(api: str, kind: str) -> bool:
    """An event that is keep-alive traffic for ``api`` (Anthropic's ``ping``)."""
    return kind in api_for(api).keepalive_events


def error_status(err: Any) -> int:
    """The status an in-band error stands for, from its ``type`` or ``code`` (a numeric
    ``code``, as aggregators send, is used as is when it is an HTTP error status)."""
    if not isinstance(err, dict):
        return 500
    for key in ("type", "code"):
        value = err.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 400 <= value <= 599:
            return value
        if isinstance(value, str):
            if value.isdigit() and 400 <= int(value) <= 599:
                return int(value)
            if value in _STATUS:
                return _STATUS[value]
    return 500
