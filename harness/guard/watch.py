"""One guarded request, sans-IO: what its bytes mean and what the guard decides.

The transport (``transport.py``, sync and async alike) feeds a :class:`Watch` the
request, the response head, each body chunk as it passes (unchanged), the end of the
body or the exception that ended it; the watch answers with the activity to report to
the watchdog and the typed error to raise, if any::

    watch = Watch.for_request(method, path, headers, settings)  # which API, which deadlines
    watch.response(status, headers)    # -> headers to add (x-should-retry: false), SSE or not
    watch.receive(chunk)               # -> "content" | "comment" | None
    watch.end(token, elapsed_s)        # -> TruncatedStream / the deadline's error / None
    watch.failure(exc, token, due, elapsed_s)  # -> the typed error for exc, or None

Rules, each shared with the reference client: deadlines are
:class:`~harness.client.deadlines.DeadlineState`'s (first byte is off for a very large
request body, as ``ClientSettings.for_prompt`` says); keep-alive and terminal markers
are :mod:`harness.client.markers`'; SSE is :mod:`harness.sse`'s decoder; foreign
errors are classified by :func:`harness.client.errors.map_exception`.

A Retry-After longer than what is left of the call's hard ceiling can never fit, so the
guard adds the SDKs' own ``x-should-retry: false`` to that error response: the SDK
raises its typed status error at once instead of sleeping past every deadline. It adds
it as well to an error status no retry can fix (one not in
``harness.vocab.statuses.RETRYABLE_STATUSES``, the reference client's set: the SDKs
retry every 5xx, 501 and 505 too).

Not here: sockets, threads, the HTTP library.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.apis import api_for, api_of_path
from harness.client.deadlines import Deadline
from harness.client.errors import (
    HarnessError,
    TransportError,
    TruncatedStream,
    map_exception,
    retry_after_value,
)
from harness.client.markers import kind_of
from harness.client.retry import parse_retry_after
from harness.client.settings import ClientSettings
from harness.client.tokens import AttemptToken, error_for_deadline
from harness.guard.scan import one_event
from harness.sse import SSEDecoder
from harness.vocab.statuses import is_retryable_status

__all__ = ["Watch"]

#: The SDKs' own header that makes them raise an error response at once, unretried.
_NO_RETRY = {"x-should-retry": "false"}


class Watch:
    """The state of one guarded request and response."""

    def __init__(self, api: str | None, settings: ClientSettings, attempt: int) -> None:
        self.api = api
        self.settings = settings
        self.attempt = attempt
        self.decoder: SSEDecoder | None = None
        self.check_terminal = False
        self.complete = False
        self.events = 0
        #: the one-event fast path (``scan.py``); used while the decoder holds nothing
        self._one = None if api is None else one_event(api)
        self._fast = False

    @classmethod
    def for_request(cls, path: str, headers: Mapping[str, str], settings: ClientSettings) -> Watch:
        try:
            size = int(headers.get("content-length") or 0)
        except ValueError:
            size = 0
        try:  # the SDKs number their own retries; 0 is the first attempt
            attempt = int(headers.get("x-stainless-retry-count") or 0) + 1
        except ValueError:
            attempt = 1
        return cls(api_of_path(path), settings.for_prompt(size), attempt)

    # ------------------------------------------------------------------ events

    def response(
        self, status: int, headers: Mapping[str, str], ceiling_left_s: float | None = None
    ) -> dict[str, str]:
        """The response head arrived (``ceiling_left_s`` before the call's hard ceiling);
        returns headers the guard adds to it."""
        sse = headers.get("content-type", "").startswith("text/event-stream")
        if sse:
            self.decoder = SSEDecoder()
            self.check_terminal = 200 <= status < 300 and self.api is not None
            self._fast = self._one is not None
        return self._no_retry(status, headers, ceiling_left_s)

    def receive(self, chunk: bytes) -> str | None:
        """One body chunk passed through; the activity it carried."""
        if self._fast:
            kind = self._one(chunk)  # type: ignore[misc]
            if kind == "content" or kind == "terminal":
                self.events += 1
                if kind == "terminal":
                    self.complete = True
                return "content"
            if kind == "comment":
                return kind
        if self.decoder is None:
            return "content" if chunk.strip() else "comment"
        activity = self._decode(chunk)
        self._fast = self._one is not None and self.decoder.idle
        return activity

    def _decode(self, chunk: bytes) -> str | None:
        """The full decoder and the marker rules, one item at a time."""
        activity = None
        assert self.decoder is not None
        for item in self.decoder.feed(chunk):
            kind = kind_of(self.api, item) if self.api is not None else "content"
            if kind == "comment":
                activity = activity or "comment"
                continue
            self.events += 1
            activity = "content"
            if kind == "terminal":
                self.complete = True
        return activity

    def end(self, token: AttemptToken, elapsed_s: float) -> HarnessError | None:
        """The body ended without an error: retired (a shut-down close-delimited body ends
        "cleanly"), truncated (no terminal marker), or fine (None)."""
        if token.retired_by is not None:
            return self.overdue(token.retired_by, elapsed_s)
        if self.check_terminal and not self.complete:
            assert self.api is not None
            return TruncatedStream(
                f"{self.api} stream ended after {self.events} events without"
                f" {api_for(self.api).terminal_marker}",
                attempt=self.attempt,
                elapsed_s=elapsed_s,
            )
        return None

    def failure(
        self, exc: BaseException, token: AttemptToken, due: Deadline | None, elapsed_s: float
    ) -> HarnessError | None:
        """The typed error for ``exc``: the deadline's when one retired the attempt or had
        passed, the mapped transport error otherwise; None: let ``exc`` through as is."""
        deadline = token.retired_by or due
        if deadline is not None:
            return self.overdue(deadline, elapsed_s)
        typed = map_exception(exc, attempt=self.attempt, elapsed_s=elapsed_s)
        return typed if isinstance(typed, TransportError) else None

    def overdue(
        self, deadline: Deadline, elapsed_s: float, *, attempt: int | None = None
    ) -> HarnessError:
        """The typed error of ``deadline``: it retired the attempt, or had passed before
        the attempt could start (then ``attempt`` is the last one that was sent)."""
        number = self.attempt if attempt is None else attempt
        return error_for_deadline(deadline, attempt=number, elapsed_s=elapsed_s)

    # ------------------------------------------------------------------ helpers

    def _no_retry(
        self, status: int, headers: Mapping[str, Any], left_s: float | None
    ) -> dict[str, str]:
        if status < 400:
            return {}
        if not is_retryable_status(status):
            return dict(_NO_RETRY)  # the reference client would not retry it: nor does the SDK
        if left_s is None:
            return {}
        wait = _retry_after_s(headers)
        if wait is None or wait < left_s:
            return {}
        return dict(_NO_RETRY)


def _retry_after_s(headers: Mapping[str, Any]) -> float | None:
    """The wait the provider asks for, as the SDKs read it (``retry-after-ms`` first)."""
    return parse_retry_after(retry_after_value(headers))
