"""One attempt of a reference-client call, sans-IO: events in, decisions out.

The sync and the async client drive the same :class:`AttemptRun`; a driver only opens
the request, reads chunks, and waits. In order, per attempt::

    run = AttemptRun(call, components)
    check_ceiling(watchdog.expired(), attempt=n, elapsed_s=...)  # the ceiling passed: raises
    with watchdog.attempt(owned.abort) as token:                 # the scope (sync and async)
        connect_s = run.start(token, watchdog.next_deadline(), watchdog.now(), settings)
        try:
            ...open the request with connect_s...
            for chunk in body:
                if not run.alive: break                          # retired: drop the rest
                watchdog.report(run.receive(chunk))              # "content" | "comment" | None
            watchdog.report(run.finish())
        except Exception as exc:
            run.failed(exc, watchdog.expired())
    verdict = run.verdict(watchdog.elapsed_s(), aborted=owned.aborted)
    if verdict.discard: ...close the SDK client...
    return verdict.unwrap()                                      # the Reply, or raise

Decisions, made here once for both drivers:

- the connect timeout is clamped to the next deadline (a blocked connect has no socket
  for ``abort`` to shut down yet, so only its own timeout can end it);
- an attempt that failed after one of its deadlines had passed is that deadline's
  (the watchdog and the failed read race at the same instant; the deadline wins);
- the SDK client is discarded when the attempt was retired or aborted, when the
  connection failed (:class:`TransportError`) or any deadline ended it: an aborted
  attempt's connection is never reused.

Not here: deadline arithmetic (``deadlines.py``), enforcement (``watchdog.py``), the
retry policy (``retry.py``), SDK request shapes (``sdk_calls.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.client.assembly import ToolCall
from harness.client.deadlines import Deadline
from harness.client.errors import HarnessError, TransportError, map_exception
from harness.client.settings import ClientSettings
from harness.client.streams import Parsed, StreamReader, parse_document
from harness.client.tokens import AttemptToken, error_for_deadline
from harness.sse import SSEDecoder

if TYPE_CHECKING:
    from harness.client.components import Components

__all__ = ["AttemptRun", "Call", "Reply", "Verdict", "check_ceiling", "clamp_connect"]


@dataclass(frozen=True)
class Reply:
    """A completed answer (never a partial one)."""

    text: str
    finish_reason: str | None
    api: str
    stream: bool
    attempts: int
    elapsed_s: float
    #: complete tool calls, arguments parsed (never a partial one)
    tool_calls: tuple[ToolCall, ...] = ()
    #: reasoning / thinking text, when the provider streamed any
    reasoning: str = ""


@dataclass
class Call:
    """One call's request, shared by every attempt, and the errors of its attempts."""

    api: str
    stream: bool
    model: str
    messages: list[Any]
    max_tokens: int | None
    on_delta: Callable[[str], None] | None = None
    errors: list[HarnessError] = field(default_factory=list)
    tools: list[Any] | None = None
    tool_choice: Any = None


@dataclass(frozen=True)
class Verdict:
    """What an attempt came to: a reply or an error (raised from ``cause``), and
    whether its SDK client must be discarded."""

    reply: Reply | None = None
    error: HarnessError | None = None
    cause: BaseException | None = None
    discard: bool = False

    def unwrap(self) -> Reply:
        if self.error is None:
            assert self.reply is not None
            return self.reply
        if self.cause is None or self.cause is self.error:
            raise self.error.with_traceback(self.error.__traceback__)
        raise self.error from self.cause


def check_ceiling(due: Deadline | None, *, attempt: int, elapsed_s: float) -> None:
    """Between attempts only the hard ceiling is armed; if it passed while the next
    attempt was being prepared (building an SDK client), do not start it."""
    if due is not None:
        raise error_for_deadline(due, attempt=attempt, elapsed_s=elapsed_s)


def clamp_connect(connect_s: float | None, nxt: Deadline | None, now: float) -> float | None:
    """The connect timeout, never past the next deadline: a blocked connect has no
    socket for an abort to shut down yet, so only its own timeout can end it."""
    if nxt is None:
        return connect_s
    remaining = max(0.001, nxt.at - now)
    return remaining if connect_s is None else min(connect_s, remaining)


class AttemptRun:
    """One attempt's state: what it read, how it ended. Pure: no clock, no I/O."""

    def __init__(self, call: Call, components: Components) -> None:
        self.call = call
        self.components = components
        self.check = components.retirement_check
        self.reader = StreamReader(call.api)
        self.body = bytearray()
        self.decoder = SSEDecoder() if call.stream else None
        self.token: AttemptToken | None = None
        self.exc: BaseException | None = None

    # ------------------------------------------------------------------ events

    def start(
        self, token: AttemptToken, nxt: Deadline | None, now: float, settings: ClientSettings
    ) -> float | None:
        """The attempt is armed; returns its connect timeout (clamped to ``nxt``)."""
        self.token = token
        return clamp_connect(settings.connect_timeout_s, nxt, now)

    @property
    def alive(self) -> bool:
        """May this attempt still deliver? False once a watchdog retired it."""
        return self.token is not None and self.check(self.token)

    def receive(self, chunk: bytes) -> str | None:
        """A body chunk arrived; returns the activity to report (None: nothing complete)."""
        if self.decoder is None:
            self.body += chunk
            return "content" if chunk.strip() else "comment"
        activity = None
        for item in self.decoder.feed(chunk):
            activity = self._deliver(self.reader.feed(item), activity)
        return activity

    def finish(self) -> str | None:
        """The body ended: flush a trailing line (comments only, per the SSE rules)."""
        activity = None
        if self.decoder is not None and self.alive:
            for item in self.decoder.flush():
                activity = self._deliver(self.reader.feed(item), activity)
        return activity

    def failed(self, exc: BaseException, due: Deadline | None) -> None:
        """The request or a read raised ``exc``; ``due`` is the deadline that had passed
        by then, if one had: the failure is then that deadline's."""
        self.exc = exc
        if due is not None and self.token is not None:
            self.token.retire(due, due.at)

    # ------------------------------------------------------------------ the decision

    def verdict(self, elapsed_s: float, *, aborted: bool = False) -> Verdict:
        token = self.token
        n = token.number if token is not None else 0
        if token is not None and not self.check(token):
            assert token.retired_by is not None
            err = error_for_deadline(token.retired_by, attempt=n, elapsed_s=elapsed_s)
            return Verdict(error=err, discard=True)  # an aborted attempt's client is never reused
        if self.exc is not None:
            err = map_exception(
                self.exc,
                attempt=n,
                elapsed_s=elapsed_s,
                parse_retry_after=self.components.parse_retry_after,
            )
            discard = aborted or isinstance(err, TransportError) or err.deadline is not None
            return Verdict(error=fill(err, n, elapsed_s), cause=self.exc, discard=discard)
        try:
            got = self._result()
        except HarnessError as err:
            return Verdict(error=fill(err, n, elapsed_s))
        call = self.call
        reply = Reply(
            got.text,
            got.finish_reason,
            call.api,
            call.stream,
            n,
            elapsed_s,
            tool_calls=got.tool_calls,
            reasoning=got.reasoning,
        )
        return Verdict(reply=reply)

    def _result(self) -> Parsed:
        """The complete answer; raises a HarnessError for a truncated or bad body."""
        if self.call.stream:
            self.components.truncation_guard(self.reader)
            return self.reader.parsed()
        return parse_document(self.call.api, bytes(self.body))

    def _deliver(self, step: Any, activity: str | None) -> str | None:
        if step.kind == "comment":
            return activity or "comment"
        # a retired attempt's late delta is dropped, never shown to the caller
        if step.text and self.call.on_delta is not None and self.alive:
            self.call.on_delta(step.text)
        return "content"


def fill(err: HarnessError, attempt: int, elapsed_s: float) -> HarnessError:
    """Stamp the attempt number and elapsed time on an error that lacks them."""
    if err.attempt is None:
        err.attempt = attempt
    if err.elapsed_s is None:
        err.elapsed_s = elapsed_s
    return err
