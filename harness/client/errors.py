"""The reference client's exception tree, and the one boundary that maps foreign errors into it.

Our exception hierarchy::

    HarnessError                  anything the reference client raises
    + TransportError              the connection failed underneath us           (retryable)
      - ConnectError              could not connect (refused, unreachable, connect timeout)
      - PeerClosed                the peer closed the connection (FIN) before the response ended
      - PeerReset                 the peer reset the connection (RST, ECONNRESET, EPIPE)
      - DeadPeer                  the kernel gave up on the peer (ETIMEDOUT: keepalive,
                                  TCP_USER_TIMEOUT)
    + StallError                  a deadline fired: the peer is there but not answering
      - FirstByteTimeout          no first stream activity within ``first_byte_s``   (retryable)
      - StreamIdleTimeout         no activity for ``stream_idle_s`` mid-stream       (retryable)
      - StaleCall                 no content progress for ``stale_call_s``, even if
                                  keep-alive comments arrived                        (retryable)
      - HardCeiling               the whole call (every attempt and wait) ran out of time
    + ProtocolError               the bytes arrived but do not make a complete answer
      - TruncatedStream           the stream ended without its terminal marker      (retryable)
      - MalformedEvent            an event or body could not be decoded             (retryable)
    + ProviderError               the provider answered with an HTTP error status; carries
                                  ``status``, ``retry_after_s`` and the provider's message
                                  (retryable for 408, 409, 429 and 5xx)
    + RetriesExhausted            the retry policy gave up; ``.attempts`` lists every
                                  attempt's error in order

Every error carries ``attempt`` (1-based), ``elapsed_s`` (since the call started) and
``deadline`` (the name of the deadline that fired, e.g. ``"first_byte_s"``, or None) and
``kind`` (a stable snake-case name for reports).

:func:`map_exception` is the boundary: every foreign exception (``openai``, ``httpx`` /
``httpx2``, ``OSError``) is classified here, by cause and errno, and re-raised by the
caller with ``raise mapped from exc``. Sync httpx reports a kernel ``ETIMEDOUT`` as
``ReadTimeout`` and async httpx as ``ReadError``: both become :class:`DeadPeer` because
the classification looks at the errno in the cause chain, not at the wrapper's type.

Not here: deciding whether to retry (``retry.py``), enforcing deadlines (``watchdog.py``).
"""

from __future__ import annotations

import errno as errno_codes
import importlib
import json
import re
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from harness.client.compat import httpx, openai
from harness.vocab.statuses import is_retryable_status

__all__ = [
    "ConnectError",
    "DeadPeer",
    "FirstByteTimeout",
    "HardCeiling",
    "HarnessError",
    "MalformedEvent",
    "PeerClosed",
    "PeerReset",
    "ProtocolError",
    "ProviderError",
    "RetriesExhausted",
    "StaleCall",
    "StallError",
    "StreamIdleTimeout",
    "TransportError",
    "TruncatedStream",
    "map_exception",
    "provider_message",
    "retry_after_value",
]


class HarnessError(Exception):
    """Base of everything the reference client raises."""

    kind: ClassVar[str] = "harness_error"
    retryable: ClassVar[bool] = False

    def __init__(
        self,
        message: str,
        *,
        attempt: int | None = None,
        elapsed_s: float | None = None,
        deadline: str | None = None,
        deadline_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.attempt = attempt
        self.elapsed_s = elapsed_s
        self.deadline = deadline
        self.deadline_s = deadline_s

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # the kind is the class's name in snake case (a class may set its own: StallError)
        if "kind" not in cls.__dict__:
            cls.kind = re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()

    def is_retryable(self) -> bool:
        return self.retryable

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly summary (targets report this)."""
        return {
            "kind": self.kind,
            "type": type(self).__name__,
            "message": self.message,
            "attempt": self.attempt,
            "elapsed_s": self.elapsed_s,
            "deadline": self.deadline,
        }

    def __str__(self) -> str:
        where = []
        if self.attempt is not None:
            where.append(f"attempt {self.attempt}")
        if self.elapsed_s is not None:
            where.append(f"after {self.elapsed_s:.3f} s")
        if self.deadline is not None:
            where.append(
                f"deadline {self.deadline}" + (f"={self.deadline_s:g} s" if self.deadline_s else "")
            )
        return self.message + (f" ({', '.join(where)})" if where else "")


class TransportError(HarnessError):
    """The connection failed underneath the request."""

    retryable = True


class ConnectError(TransportError):
    """Could not connect: refused, unreachable, or the connect timeout ran out."""


class PeerClosed(TransportError):
    """The peer closed the connection (FIN) before the response was complete."""


class PeerReset(TransportError):
    """The peer reset the connection (RST): ECONNRESET or EPIPE."""


class DeadPeer(TransportError):
    """The kernel declared the peer dead (ETIMEDOUT from keepalive or TCP_USER_TIMEOUT)."""


class StallError(HarnessError):
    """A deadline fired: the peer is connected but not making progress."""

    kind = "stall"
    retryable = True


class FirstByteTimeout(StallError):
    """No stream activity arrived within ``first_byte_s`` of the attempt starting."""


class StreamIdleTimeout(StallError):
    """The stream went silent for ``stream_idle_s`` after it had started."""


class StaleCall(StallError):
    """No content progress for ``stale_call_s``, even if keep-alive comments arrived."""


class HardCeiling(StallError):
    """The whole call, over every attempt and wait, exceeded ``hard_ceiling_s``."""

    retryable = False


class ProtocolError(HarnessError):
    """Bytes arrived but they do not make a complete, decodable answer."""

    retryable = True


class TruncatedStream(ProtocolError):
    """The body ended without its terminal marker ([DONE] / finish_reason,
    response.completed, message_stop), even if it ended "cleanly" on FIN."""


class MalformedEvent(ProtocolError):
    """An SSE event (or a non-streamed body) could not be decoded."""


class ProviderError(HarnessError):
    """The provider answered with an HTTP error status."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        retry_after_s: float | None = None,
        provider_message: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(message, **kwargs)
        self.status = status
        self.retry_after_s = retry_after_s
        self.provider_message = provider_message

    def is_retryable(self) -> bool:
        return is_retryable_status(self.status)

    def to_dict(self) -> dict[str, Any]:
        return {
            **super().to_dict(),
            "status": self.status,
            "retry_after_s": self.retry_after_s,
            "provider_message": self.provider_message,
        }


class RetriesExhausted(HarnessError):
    """The retry policy gave up; ``attempts`` holds every attempt's error, in order."""

    def __init__(self, message: str, *, attempts: Sequence[HarnessError], **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.attempts = list(attempts)

    @property
    def last(self) -> HarnessError | None:
        return self.attempts[-1] if self.attempts else None

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "attempts": [a.to_dict() for a in self.attempts]}


# --------------------------------------------------------------------------- the boundary

RetryAfterParser = Callable[[str | None], float | None]


def map_exception(
    exc: BaseException,
    *,
    attempt: int | None = None,
    elapsed_s: float | None = None,
    parse_retry_after: RetryAfterParser | None = None,
) -> HarnessError:
    """Classify a foreign exception; the caller raises the result ``from exc``.

    Already-mapped errors pass through unchanged.
    """
    where = {"attempt": attempt, "elapsed_s": elapsed_s}
    if isinstance(exc, HarnessError):
        return exc
    if isinstance(exc, openai.APIStatusError):
        return _provider_error(exc.response, where, parse_retry_after)
    if isinstance(exc, openai.APIConnectionError) and exc.__cause__ is not None:
        return map_exception(exc.__cause__, parse_retry_after=parse_retry_after, **where)
    code = _errno_in_chain(exc)
    if isinstance(exc, _of("ConnectError", "ConnectTimeout")) or code in (
        errno_codes.ECONNREFUSED,
        errno_codes.EHOSTUNREACH,
        errno_codes.ENETUNREACH,
    ):
        return ConnectError(f"could not connect: {_brief(exc)}", **where)  # whatever the errno
    if code == errno_codes.ETIMEDOUT:
        return DeadPeer(f"the kernel gave up on the peer: {_brief(exc)}", **where)
    if code in (errno_codes.ECONNRESET, errno_codes.EPIPE, errno_codes.ECONNABORTED):
        return PeerReset(f"connection reset by peer: {_brief(exc)}", **where)
    if isinstance(exc, _of("ReadTimeout")):
        return StreamIdleTimeout(
            f"httpx read timeout: {_brief(exc)}", deadline="read_timeout_s", **where
        )
    if isinstance(exc, _of("RemoteProtocolError", "ReadError", "WriteError")):
        return PeerClosed(f"peer closed the connection: {_brief(exc)}", **where)
    if isinstance(exc, (*_of("TransportError"), OSError)):
        return TransportError(f"transport failed: {_brief(exc)}", **where)
    if isinstance(exc, RuntimeError) and "client has been closed" in str(exc):
        return TransportError(f"transport failed: {_brief(exc)}", **where)
    if isinstance(exc, openai.APIConnectionError):
        return TransportError(f"transport failed: {_brief(exc)}", **where)
    if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):
        return MalformedEvent(f"undecodable data: {_brief(exc)}", **where)
    return HarnessError(f"unexpected error: {_brief(exc)}", **where)


def _of(*names: str) -> tuple[type[BaseException], ...]:
    """The named exception classes of every HTTP library present: ``httpx`` (the one the
    openai SDK uses) and ``httpx2`` (openai 3.x, anthropic), which may both be installed."""
    return tuple(getattr(lib, name) for lib in _HTTP_LIBRARIES for name in names)


def _http_libraries() -> tuple[Any, ...]:
    libs = [httpx]
    for name in ("httpx", "httpx2"):
        try:
            lib = importlib.import_module(name)
        except ImportError:
            continue
        if lib not in libs:
            libs.append(lib)
    return tuple(libs)


_HTTP_LIBRARIES = _http_libraries()


def provider_message(body: bytes | str, content_type: str = "") -> str:
    """The provider's own message from an error body: ``error.message`` of a JSON body,
    or the visible text of an HTML page, cut to 300 characters."""
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"][:300]
        if isinstance(err, str):
            return err[:300]
    if "html" in content_type.lower() or text.lstrip().startswith("<"):
        text = re.sub(r"<(script|style)\b.*?</\1>", " ", text, flags=re.S | re.I)
        text = re.sub(r"<[^>]+>", " ", text)
    return " ".join(text.split())[:300]


def _provider_error(
    response: Any, where: dict[str, Any], parse: RetryAfterParser | None
) -> ProviderError:
    try:
        body = response.read()
    except Exception as exc:  # the body is best effort; the status is what matters
        body = f"<error body unreadable: {type(exc).__name__}>".encode()
    message = provider_message(body, response.headers.get("content-type", ""))
    retry_after_s = parse(retry_after_value(response.headers)) if parse is not None else None
    return ProviderError(
        f"HTTP {response.status_code} from provider: {message}",
        status=response.status_code,
        retry_after_s=retry_after_s,
        provider_message=message,
        **where,
    )


def retry_after_value(headers: Any) -> str | None:
    """The wait the provider asks for, as the official SDKs read it: ``retry-after-ms``
    (exact) first, as seconds for the parser, else ``Retry-After`` (whole seconds or a
    date)."""
    ms = headers.get("retry-after-ms")
    try:
        return f"{float(ms) / 1000.0:g}" if ms is not None else headers.get("retry-after")
    except ValueError:
        return headers.get("retry-after")


def _errno_in_chain(exc: BaseException) -> int | None:
    """The first OSError errno found along ``__cause__`` / ``__context__`` (bounded walk)."""
    seen = 0
    node: BaseException | None = exc
    while node is not None and seen < 16:
        if isinstance(node, OSError) and node.errno is not None:
            return node.errno
        code = node.args[0] if node.args and isinstance(node.args[0], OSError) else None
        if code is not None and code.errno is not None:
            return code.errno
        node = node.__cause__ or node.__context__
        seen += 1
    return None


def _brief(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:300]
