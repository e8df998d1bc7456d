"""The reference keepalive client and watchdog stack: what a correct LLM transport does.

Public API::

    from harness.client import ReferenceClient, AsyncReferenceClient, ClientSettings, Reply
    from harness.client import errors

    with ReferenceClient(base_url, api_key, settings=ClientSettings(first_byte_s=5)) as client:
        reply = client.complete([{"role": "user", "content": "hi"}], model="test-model",
                                api="chat" | "responses" | "messages", stream=True)
        reply.text, reply.finish_reason, reply.attempts, reply.elapsed_s
        client.rebuild(); client.close()      # safe in any order; the client stays usable

Modules, one job each::

    settings.py   ClientSettings (frozen, DEFAULT_* constants, from_environment)
    keepalive.py  socket options per platform (pure)
    transport.py  one fresh httpx client per SDK client; defensive copy of kwargs; abort
    deadlines.py  the pure deadline state (first byte, idle, stale call, hard ceiling)
    watchdog.py   enforcement: condition-wait thread (sync) or loop timer (async), both
                  shutting the sockets down; ``with watchdog.attempt(abort) as token:``
    tokens.py     retirement tokens; a fired deadline's typed error
    markers.py    per-API keep-alive and terminal-marker rules (pure; shared with the guard)
    streams.py    per-API stream reading and the truncation guard
    errors.py     the error tree and the one mapping boundary
    retry.py      retry policy, Retry-After parsing, backoff with jitter
    attempt.py    one attempt, sans-IO: events in, decisions out (both clients drive it)
    sdk_calls.py  the request an attempt sends through the SDK's raw-response path
    components.py the replaceable seams (Components)
    client.py     ReferenceClient / AsyncReferenceClient: two thin drivers
    clock.py      the injectable clock (MonotonicClock, FakeClock)
    compat.py     httpx (openai 2.x) vs httpx2 (openai 3.x)

Seams for mutants (issue 7): each correct component is replaceable on its own through
``Components`` (``ReferenceClient(..., components=Components(...))``)::

    keepalive_options     (platform, constants, settings) -> socket options
    transport_factory     TransportFactory: defensive copy + fresh owned httpx client
    watchdog_factory      Watchdog: sync deadline enforcement (async_watchdog_factory)
    retirement_check      AttemptToken -> may it still deliver?   (owns_attempt)
    truncation_guard      StreamReader -> raise TruncatedStream   (require_terminal)
    parse_retry_after     header value -> seconds                 (parse_retry_after)
    describe_deadlines    (DeadlineState, now) -> text            (describe_deadlines)
"""

from harness.client import errors
from harness.client.assembly import ToolCall
from harness.client.attempt import Reply
from harness.client.client import AsyncReferenceClient, ReferenceClient
from harness.client.components import Components
from harness.client.settings import ClientSettings, SettingsError

__all__ = [
    "AsyncReferenceClient",
    "ClientSettings",
    "Components",
    "ReferenceClient",
    "Reply",
    "SettingsError",
    "ToolCall",
    "errors",
]
