"""``harness.guard``: the reference stack as a drop-in transport for any httpx-based SDK.

Two lines to adopt it::

    from harness import guard
    client = openai.OpenAI(http_client=guard.http_client(openai, first_byte_s=30, stream_idle_s=60))

(``anthropic.Anthropic(http_client=guard.http_client(anthropic, ...))`` alike;
``guard.async_http_client`` for ``AsyncOpenAI`` / ``AsyncAnthropic``.) The client is the
SDK's own ``DefaultHttpxClient`` (its timeouts, limits and redirects), with the guard as
its transport. Per request, the guard:

- sets SO_KEEPALIVE, the keepalive timings and TCP_USER_TIMEOUT on every socket
  (``harness.client.keepalive``, the same pure per-platform function);
- enforces first byte, stream idle, stale call (no content progress, however many SSE
  comments or pings arrive) and a hard ceiling by shutting that request's socket down
  (the only thing that wakes a blocked sync read); the hard ceiling is the SDK call's:
  its retries (numbered in the SDKs' ``x-stainless-retry-count`` header) in the same
  thread or task continue the first attempt's clock, and a retry that would begin after it
  has passed is refused before a byte is sent;
- watches the SSE body for its API's terminal marker (``[DONE]``, ``response.completed``,
  ``message_stop``) and raises a transport error into the SDK's iterator when the body
  ends without it;
- stops the SDK from sleeping a Retry-After longer than the hard ceiling
  (``x-should-retry: false`` on that error response);
- never changes a healthy stream's bytes.

Errors are the HTTP library's own classes (subclasses: ``GuardReadTimeout``,
``GuardRemoteProtocolError``, ...), so the SDK wraps and retries them as it always does
(``APITimeoutError`` / ``APIConnectionError``); the reference stack's typed error
(``FirstByteTimeout``, ``StaleCall``, ``TruncatedStream``, ``DeadPeer``, ...) is their
``__cause__``, and :func:`typed_cause` finds it from whatever the SDK raised.

Settings are :class:`harness.client.ClientSettings` fields (``first_byte_s``,
``stream_idle_s``, ``stale_call_s``, ``hard_ceiling_s``, ``idle_counts_comments``,
keepalive values, ``tcp_user_timeout_s``); ``None`` or ``inf`` turns a deadline off.

Modules: ``watch.py`` (one request, sans-IO), ``transport.py`` (the sync and async
faces), ``sockets.py`` (which socket a request uses), ``errors.py`` (error classes).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from harness.client.settings import ClientSettings
from harness.guard.errors import library_of, typed_cause
from harness.guard.transport import AsyncGuardTransport, GuardTransport

__all__ = [
    "AsyncGuardTransport",
    "GuardTransport",
    "async_http_client",
    "http_client",
    "library_of",
    "typed_cause",
]


def http_client(
    sdk: ModuleType | None = None, *, settings: ClientSettings | None = None, **overrides: Any
) -> Any:
    """A sync httpx client for ``sdk`` (``openai``, ``anthropic``; None: the openai line
    ``harness.client`` uses) with the guard as its transport. ``overrides`` are
    :class:`ClientSettings` fields applied to ``settings`` (default: its defaults)."""
    resolved = _settings(settings, overrides)
    http = library_of(sdk)
    transport = GuardTransport(settings=resolved, http=http)
    cls = getattr(sdk, "DefaultHttpxClient", None) or http.Client
    return cls(transport=transport)


def async_http_client(
    sdk: ModuleType | None = None, *, settings: ClientSettings | None = None, **overrides: Any
) -> Any:
    """The async twin of :func:`http_client` (for ``AsyncOpenAI``, ``AsyncAnthropic``)."""
    resolved = _settings(settings, overrides)
    http = library_of(sdk)
    transport = AsyncGuardTransport(settings=resolved, http=http)
    cls = getattr(sdk, "DefaultAsyncHttpxClient", None) or http.AsyncClient
    return cls(transport=transport)


def _settings(settings: ClientSettings | None, overrides: dict[str, Any]) -> ClientSettings:
    base = settings or ClientSettings()
    return base.replace(**overrides) if overrides else base
