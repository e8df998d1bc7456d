"""Error sentinels: failure texts that must never pass as a successful reply.

A client that swallows a transport failure often hands the error text back as if it
were the model's answer ("API call failed after 3 retries: Connection error."). The
string is truthy, so a naive ``assert reply`` passes it. This module is the one
documented list of such texts and the detector that finds them in reply text, in
streamed chunks (joined first, so a sentinel split across chunks is still caught),
in raised errors and in captured log records.

Matching is case-insensitive and whitespace-tolerant: every space in a sentinel's
phrase matches any run of whitespace (newlines included). Phrases that also occur in
ordinary prose ("connection error", "request timed out", "internal server error") are
only matched in their error-message shape: at the start of a line or right after a
colon, and with the SDK's exact wording. A reply that *discusses* HTTP status lines
verbatim ("a 502 Bad Gateway means ...") is flagged; the live tier never asks for such
text, and a false alarm there is cheaper than a missed failure.

The sentinels (name: what it catches)::

    api_call_failed        "API call failed after 3 retries" (any count, retry/retries)
    stale_giveup           hermes-agent's stale-stream circuit breaker: "Provider has been
                           unresponsive ... for 5 consecutive stale attempts"
    client_closed          "Cannot send a request, as the client has been closed"
    connection_error       "Connection error." as a message (line start or after ':')
    request_timed_out      "Request timed out." as a message (line start or after ':')
    http_status_line       an HTTP error code with its reason phrase: "429 Too Many
                           Requests", "502 Bad Gateway", "504 Gateway Time-out", ...
    internal_server_error  "Internal Server Error" as a message (line start or after ':')
    error_code             "error code: 502" (Cloudflare) and the SDK's "Error code: 429 - "
    provider_error_json    a JSON/dict object with an "error" key holding an object, or an
                           error ``"type"`` such as "rate_limit_error", leaking into a reply
    provider_returned_error  OpenRouter's "Provider returned error"
    rate_limit_exceeded    "Rate limit exceeded" as a message (line start or after ':')
    upstream_error         proxy texts: "upstream connect error", "no healthy upstream",
                           "upstream request timeout"
    server_disconnected    "Server disconnected without sending a response"
    incomplete_body        "peer closed connection without sending complete message
                           body" / "incomplete chunked read"
    connection_reset       "Connection reset by peer", "[Errno 104]" (also 110, 111, 32)
    connection_refused     "Connection refused" as a message (line start or after ':')
    exception_text         an SDK/transport exception rendered as text: "APIConnectionError:",
                           "httpx.ReadTimeout:", "RemoteProtocolError(" ...
    traceback              "Traceback (most recent call last)"

Besides text, ``harness.live.sentinels.check_reply`` adds two structural findings:
``empty_reply`` (no non-whitespace text) and ``bad_finish_reason`` (anything but stop or
length).

This module is layer 1 (stdlib only): the runner's outcome classification and the
live tier both use it. Not here: scanning streamed chunks, raised errors and log
records, and the structural checks (``harness.live.sentinels``); redaction
(``harness.live.redact``); what counts as the *right* answer (``harness.live.cases``).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

__all__ = [
    "EXCERPT_CHARS",
    "SENTINELS",
    "WHERE",
    "Finding",
    "Sentinel",
    "find_sentinels",
]

#: Where a finding was made.
WHERE = ("reply", "chunks", "error", "log", "finish_reason")

#: How much text around a match a finding keeps (for the report).
EXCERPT_CHARS = 40


@dataclass(frozen=True)
class Sentinel:
    """One known failure text: a name, its pattern, why it is a failure, and examples
    that it must catch (the property tests embed each example in arbitrary text)."""

    name: str
    pattern: re.Pattern[str]
    description: str
    examples: tuple[str, ...]
    #: True when the phrase only counts at a message position (line start or after ':').
    anchored: bool = False

    def __repr__(self) -> str:
        return f"Sentinel({self.name!r})"


@dataclass(frozen=True)
class Finding:
    """One reason a call is a failure.

    ``sentinel`` is a sentinel name, or ``empty_reply`` / ``bad_finish_reason``;
    ``where`` is one of :data:`WHERE`; ``offset`` is the character offset of the match
    in the scanned text (for ``chunks``, in the joined text; ``chunk`` then names the
    chunk it starts in); ``excerpt`` is the matched text with a little context.
    """

    sentinel: str
    where: str
    offset: int | None = None
    excerpt: str = ""
    chunk: int | None = None

    def describe(self) -> str:
        at = f" at {self.offset}" if self.offset is not None else ""
        chunk = f" (chunk {self.chunk})" if self.chunk is not None else ""
        excerpt = f": {self.excerpt!r}" if self.excerpt else ""
        return f"{self.sentinel} in {self.where}{at}{chunk}{excerpt}"

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def find_sentinels(text: str | None, *, where: str = "reply") -> list[Finding]:
    """Every sentinel match in ``text``, in order of offset. ``None`` or ``""`` gives none
    (emptiness is ``check_reply``'s concern, not a text sentinel)."""
    if where not in WHERE:
        raise ValueError(f"where: {where!r} is not valid; allowed: {', '.join(WHERE)}")
    if not text:
        return []
    findings = []
    for sentinel in SENTINELS:
        for m in sentinel.pattern.finditer(text):
            findings.append(
                Finding(sentinel.name, where, m.start(), _excerpt(text, m.start(), m.end()))
            )
    findings.sort(key=lambda f: (f.offset, f.sentinel))
    return findings


# --------------------------------------------------------------------------- the list


def _phrase(text: str) -> str:
    """A literal phrase as a regex where each space matches any whitespace run."""
    return r"\s+".join(re.escape(word) for word in text.split())


# A message position: start of the text or of a line (optionally after a bullet or a
# quote), or right after a colon -- where an error string sits, not inside prose.
_AT_MESSAGE = r"(?:^[ \t>*\-\"'`\[(]*|(?<=:)\s*)"

_STATUS_PHRASES = {
    400: "Bad Request",
    401: "Unauthorized",
    402: "Payment Required",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    409: "Conflict",
    413: "Payload Too Large",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
    520: "Unknown Error",
    521: "Web Server Is Down",
    522: "Connection Timed Out",
    523: "Origin Is Unreachable",
    524: "A Timeout Occurred",
    529: "Site is overloaded",
}

_EXCEPTION_NAMES = (
    "APIConnectionError",
    "APITimeoutError",
    "APIStatusError",
    "RateLimitError",
    "InternalServerError",
    "AuthenticationError",
    "PermissionDeniedError",
    "ServiceUnavailableError",
    "RemoteProtocolError",
    "ReadTimeout",
    "ConnectTimeout",
    "WriteTimeout",
    "PoolTimeout",
    "ConnectError",
    "ReadError",
    "ConnectionResetError",
    "ConnectionRefusedError",
    "BrokenPipeError",
)


def _status_pattern() -> str:
    alternatives = []
    for code, phrase in _STATUS_PHRASES.items():
        body = _phrase(phrase)
        if code == 504:
            body = r"gateway\s+time-?\s*out"
        alternatives.append(rf"{code}\s+{body}")
    return r"\b(?:" + "|".join(alternatives) + r")\b"


def _s(name: str, pattern: str, description: str, *examples: str) -> Sentinel:
    compiled = re.compile(pattern, re.IGNORECASE | re.MULTILINE)
    return Sentinel(name, compiled, description, examples, anchored=pattern.startswith(_AT_MESSAGE))


SENTINELS: tuple[Sentinel, ...] = (
    _s(
        "api_call_failed",
        r"\bapi\s+call\s+failed\s+after\s+\d+\s+(?:retry|retries|attempts?)\b",
        "an agent's give-up message returned as the reply (the #10933 symptom)",
        "API call failed after 3 retries",
        "API call failed after 3 retries: Connection error.",
    ),
    _s(
        "stale_giveup",
        r"\bprovider\s+has\s+been\s+unresponsive\b[\s\S]{0,80}?"
        r"\bconsecutive\s+stale\s+attempts\b",
        "an agent's stale-stream circuit breaker returned as the reply (hermes-agent 0.19.0:"
        " after N stale kills in one session, each call aborts with this text)",
        "Provider has been unresponsive (no response received) for 5 consecutive stale attempts"
        " — aborting this call to avoid an indefinite stall.",
        "RuntimeError: Provider has been unresponsive for 3 consecutive stale attempts",
    ),
    _s(
        "client_closed",
        r"\bcannot\s+send\s+a\s+request,?\s+as\s+the\s+client\s+has\s+been\s+closed\b",
        "httpx refusing a closed client: a closed transport was reused after a rebuild",
        "Cannot send a request, as the client has been closed",
        "RuntimeError: Cannot send a request, as the client has been closed.",
    ),
    _s(
        "connection_error",
        _AT_MESSAGE + r"connection\s+error\s*(?:\.|$)",
        "the openai SDK's APIConnectionError message",
        "Connection error.",
        "Error: Connection error.",
    ),
    _s(
        "request_timed_out",
        _AT_MESSAGE + r"request\s+timed\s+out\s*(?:\.|$|after\b)",
        "the openai SDK's APITimeoutError message",
        "Request timed out.",
        "error: request timed out after 600 seconds",
    ),
    _s(
        "http_status_line",
        _status_pattern(),
        "an HTTP error status with its reason phrase (status line, HTML error page title)",
        "429 Too Many Requests",
        "502 Bad Gateway",
        "503 Service Unavailable",
        "504 Gateway Time-out",
        "500 Internal Server Error",
        "<title>401 Unauthorized</title>",
    ),
    _s(
        "internal_server_error",
        _AT_MESSAGE + r"internal\s+server\s+error\b",
        "a bare 'Internal Server Error' body or message",
        "Internal Server Error",
        "error: Internal Server Error",
    ),
    _s(
        "error_code",
        r"\berror\s+code\s*:\s*[45]\d\d\b",
        "Cloudflare's 'error code: 502' page and the SDK's 'Error code: 429 - {...}'",
        "error code: 502",
        "Error code: 429 - {'error': {'message': 'Rate limit reached'}}",
    ),
    _s(
        "provider_error_json",
        r"[{,]\s*[\"']error[\"']\s*:\s*\{"
        r"|[\"']type[\"']\s*:\s*[\"'](?:invalid_request_error|rate_limit_error|rate_limit_exceeded"
        r"|insufficient_quota|server_error|api_error|overloaded_error|authentication_error"
        r"|permission_error|not_found_error|timeout_error)[\"']",
        "a provider's error JSON (or its Python repr) leaking into a reply",
        '{"error": {"message": "Upstream error", "code": 502}}',
        "{'error': {'message': 'overloaded'}}",
        '{"type": "error", "error": {"type": "overloaded_error"}}',
    ),
    _s(
        "provider_returned_error",
        r"\bprovider\s+returned\s+error\b",
        "OpenRouter's message when the upstream provider failed",
        "Provider returned error",
    ),
    _s(
        "rate_limit_exceeded",
        _AT_MESSAGE + r"rate\s+limit\s+(?:exceeded|reached)\b",
        "a rate-limit message returned as text",
        "Rate limit exceeded",
        "Error: rate limit reached for requests",
    ),
    _s(
        "upstream_error",
        r"\bupstream\s+connect\s+error\b|\bno\s+healthy\s+upstream\b"
        r"|\bupstream\s+request\s+timeout\b",
        "a proxy (Envoy, load balancer) error body",
        "upstream connect error or disconnect/reset before headers",
        "no healthy upstream",
        "upstream request timeout",
    ),
    _s(
        "server_disconnected",
        r"\bserver\s+disconnected\s+without\s+sending\s+a\s+response\b",
        "httpx/h11 when a pooled connection was closed under a request",
        "Server disconnected without sending a response.",
    ),
    _s(
        "incomplete_body",
        r"\bpeer\s+closed\s+connection\s+without\s+sending\s+complete\s+message\s+body\b"
        r"|\bincomplete\s+chunked\s+read\b",
        "h11 when the peer closed mid-body",
        "peer closed connection without sending complete message body (incomplete chunked read)",
    ),
    _s(
        "connection_reset",
        r"(?:\[errno\s+(?:104|110|111|32)\]\s*)?\bconnection\s+reset\s+by\s+peer\b"
        r"|\[errno\s+(?:104|110|111|32)\]",
        "a socket error rendered as text",
        "[Errno 104] Connection reset by peer",
        "[Errno 111] Connection refused",
    ),
    _s(
        "connection_refused",
        _AT_MESSAGE + r"connection\s+refused\b",
        "a refused connection reported as a message",
        "Connection refused",
        "ConnectError: connection refused",
    ),
    _s(
        "exception_text",
        # Not code: "except X:" and "raise X(" are how replies about code mention them.
        r"(?<!except )(?<!raise )(?<![.\w])(?:openai\.|httpx\.|httpcore\.|h11\.)?(?:"
        + "|".join(_EXCEPTION_NAMES)
        + r")(?:\s*:\s*\S|\(\s*[\"'])",
        "an SDK or transport exception rendered as text",
        "APIConnectionError: Connection error.",
        "httpx.ReadTimeout: The read operation timed out",
        "RemoteProtocolError('Server disconnected')",
    ),
    _s(
        "traceback",
        r"\btraceback\s+\(most\s+recent\s+call\s+last\)",
        "a Python traceback in the reply",
        "Traceback (most recent call last):",
    ),
)


# --------------------------------------------------------------------------- helpers


def _excerpt(text: str, start: int, end: int) -> str:
    lo = max(0, start - EXCERPT_CHARS // 2)
    hi = min(len(text), end + EXCERPT_CHARS // 2)
    return " ".join(text[lo:hi].split())
