"""The guard's two faces: an httpx transport (sync) and an async transport, thin drivers
of one :class:`~harness.guard.watch.Watch` per request.

Per request, both faces do the same steps; only how they read and wait differs:

1. a :class:`~harness.client.deadlines.DeadlineState` and a watchdog for the request
   (the reference stack's :class:`~harness.client.watchdog.Watchdog` thread in sync
   code, its loop-timer :class:`~harness.client.watchdog.AsyncWatchdog` in async code),
   one attempt armed with the request's :class:`~harness.guard.sockets.Binding` as
   ``abort``; the connect timeout clamped to the next deadline;
2. the inner ``HTTPTransport`` (keepalive + TCP_USER_TIMEOUT socket options, its pool's
   streams bound to the request) sends it and reads the head;
3. the body is passed through byte for byte; each chunk's activity goes to the watchdog;
4. at its end the watch decides (terminal marker, retirement) and the response's close
   disarms the watchdog. Errors leave as ``Guard<httpx class>`` with the typed cause.

Not here: the bodies of step 3 (``body.py``), what bytes mean (``watch.py``), which
socket (``sockets.py``), error classes (``errors.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any, ClassVar

from harness.client.attempt import clamp_connect
from harness.client.clock import MonotonicClock
from harness.client.deadlines import DeadlineState
from harness.client.errors import HarnessError, StallError, TruncatedStream
from harness.client.keepalive import keepalive_options, socket_constants
from harness.client.settings import ClientSettings
from harness.client.tokens import AttemptToken
from harness.client.watchdog import AsyncWatchdog, Watchdog
from harness.guard.body import AsyncBody, Body, aclose_inner, end, reraise, stop
from harness.guard.errors import guard_error, library_of
from harness.guard.request import EXTENSION, GuardedRequest
from harness.guard.sockets import CURRENT, install
from harness.guard.watch import Watch

__all__ = ["AsyncGuardTransport", "GuardTransport"]


class _Face:
    """What both faces share: settings, the inner transport, the mapping to errors."""

    _is_async: ClassVar[bool]

    def __init__(
        self,
        *,
        settings: ClientSettings | None = None,
        http: ModuleType | None = None,
        inner: Any = None,
    ) -> None:
        self.settings = settings or ClientSettings()
        self.http = http or library_of(None)
        if inner is None:
            options = keepalive_options(sys.platform, socket_constants(), self.settings)
            cls = self.http.AsyncHTTPTransport if self._is_async else self.http.HTTPTransport
            inner = cls(socket_options=options)
        install(inner, is_async=self._is_async)
        self.inner = inner
        #: requests whose watchdog or connection is still held (the client's close ends them)
        self.live: set[GuardedRequest] = set()
        #: connection closes scheduled by a fired deadline, kept until they have run (only
        #: the async face schedules any)
        self._closing: set[asyncio.Task[None]] = set()

    def _begin(self, request: Any) -> tuple[Watch, GuardedRequest, DeadlineState]:
        """Step 1's common part: the request's watch, its hold and its deadlines."""
        watch = Watch.for_request(request.url.path, request.headers, self.settings)
        return watch, GuardedRequest(self.live), self._state(watch, _CLOCK.now())

    @staticmethod
    def _state(watch: Watch, now: float) -> DeadlineState:
        """The request's deadlines. The hard ceiling is the SDK *call's*: a retry (the
        SDKs number them in ``x-stainless-retry-count``) in the same thread or task
        continues the clock its first attempt started."""
        started = CALL_STARTED.get() if watch.attempt > 1 else None
        if started is None:
            started = now
            CALL_STARTED.set(started)
            CALL_SENT.set(0)
        return DeadlineState(watch.settings, call_started_at=started)

    @contextlib.contextmanager
    def _sending(
        self,
        request: Any,
        watch: Watch,
        held: GuardedRequest,
        wd: Watchdog | AsyncWatchdog,
        token: AttemptToken,
    ) -> Iterator[None]:
        """Around step 2's send: the attempt armed, the connect timeout clamped, the
        pool's streams bound to the request; a failure mapped and the request over."""
        held.arm(wd, token)
        due = wd.expired()
        if due is not None:
            # A retry begun after the call's own deadline (its hard ceiling) is refused
            # before a byte is sent: no request may reach the server after the call has
            # given up (sent anyway, it raced the watchdog's abort onto the wire).
            self._end_request(held)
            held.connection_released()
            sent = max(1, CALL_SENT.get())  # the error names the last attempt really made
            raise self._error(watch.overdue(due, wd.elapsed_s(), attempt=sent), None, request)
        CALL_SENT.set(CALL_SENT.get() + 1)
        timeout = dict(request.extensions.get("timeout") or {})
        for key in ("connect", "pool"):
            timeout[key] = clamp_connect(timeout.get(key), wd.next_deadline(), wd.now())
        request.extensions = {**request.extensions, "timeout": timeout}
        reset = CURRENT.set(held.binding)
        try:
            yield
        except Exception as exc:
            reraise(self._send_failed(watch, exc, held, request), exc)
        finally:
            CURRENT.reset(reset)

    def _respond(
        self, response: Any, watch: Watch, held: GuardedRequest, request: Any, body: type
    ) -> Any:
        """Steps 2-3 after the head: headers from the watch, the body watched on the way."""
        wd = held.watchdog
        hard_at = wd.hard_deadline_at()
        left_s = None if hard_at is None else hard_at - wd.now()
        for name, value in watch.response(response.status_code, response.headers, left_s).items():
            response.headers[name] = value
        base = self.http.AsyncByteStream if self._is_async else self.http.SyncByteStream
        response.stream = _stream_class(body, base)(self, response.stream, watch, held, request)
        response.extensions[EXTENSION] = held
        return response

    def _error(self, typed: HarnessError, exc: BaseException | None, request: Any) -> BaseException:
        if isinstance(typed, StallError):
            base: type[BaseException] = self.http.ReadTimeout
        elif isinstance(typed, TruncatedStream):
            base = self.http.RemoteProtocolError
        elif exc is not None and isinstance(exc, self.http.TransportError):
            base = type(exc)
        else:
            base = self.http.ReadError
        if exc is not None and typed.__cause__ is None:
            typed.__cause__ = exc
        return guard_error(base, typed, request)

    def _send_failed(
        self, watch: Watch, exc: BaseException, held: GuardedRequest, request: Any
    ) -> BaseException:
        """Sending or reading the head raised: the error to raise, the request over."""
        err = self._failed(watch, exc, held.token, held.watchdog, request)
        self._end_request(held)
        held.connection_released()  # no body: the pool closed or kept it
        return err

    def _end_request(self, held: GuardedRequest) -> None:
        raise NotImplementedError

    def _failed(
        self, watch: Watch, exc: BaseException, token: AttemptToken, wd: Any, request: Any
    ) -> BaseException:
        typed = watch.failure(exc, token, wd.expired(), wd.elapsed_s())
        return exc if typed is None else self._error(typed, exc, request)


class GuardTransport(_Face):
    """A sync httpx transport enforcing the guard's deadlines on every request."""

    _is_async = False

    def handle_request(self, request: Any) -> Any:
        watch, held, state = self._begin(request)
        wd = Watchdog(state, clock=_CLOCK)
        wd.one_attempt(on_exit=held.watchdog_over)
        wd.start()
        token = wd.start_attempt(held.abort)
        with self._sending(request, watch, held, wd, token):
            response = self.inner.handle_request(request)
        return self._respond(response, watch, held, request, Body)

    def _end_request(self, held: GuardedRequest) -> None:
        stop(held.watchdog, held.token)

    def close(self) -> None:
        """Close the client: every request still held ends now (watchdog, connection)."""
        for held in list(self.live):
            wd = held.watchdog
            wd.end_attempt(held.token)
            held.binding.abort()  # a read blocked in another thread wakes and closes its own
            held.reap()
            wd.stop()
        self.inner.close()

    def __enter__(self) -> GuardTransport:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncGuardTransport(_Face):
    """The asyncio face: the same steps, the watchdog a loop timer."""

    _is_async = True

    async def handle_async_request(self, request: Any) -> Any:
        watch, held, state = self._begin(request)
        wd = AsyncWatchdog(state, clock=_CLOCK)
        token = wd.start_attempt(functools.partial(self._abort, held))
        with self._sending(request, watch, held, wd, token):
            response = await self.inner.handle_async_request(request)
        return self._respond(response, watch, held, request, AsyncBody)

    def _end_request(self, held: GuardedRequest) -> None:
        end(held)

    async def aclose(self) -> None:
        """Close the client: every request still held ends now (timer, connection)."""
        for held in list(self.live):
            end(held)
            held.binding.abort()
            held.reap()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
        await self.inner.aclose()

    async def __aenter__(self) -> AsyncGuardTransport:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def _abort(self, held: GuardedRequest) -> None:
        """A deadline fired (on the loop): the timer is spent, the body is reaped."""
        held.abort()
        held.watchdog_over()

    def _schedule_close(self, inner: Any, held: GuardedRequest) -> None:
        task = asyncio.get_running_loop().create_task(aclose_inner(inner, held))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)


_CLOCK = MonotonicClock()
#: When the current SDK call's first attempt started, in this thread or task.
CALL_STARTED: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "harness_guard_call_started", default=None
)
#: How many of the current SDK call's attempts were sent (not refused past its deadline).
CALL_SENT: contextvars.ContextVar[int] = contextvars.ContextVar(
    "harness_guard_call_sent", default=0
)
_STREAM_CLASSES: dict[tuple[type, type], type] = {}


def _stream_class(body: type, base: type) -> type:
    """``body`` as a subclass of the library's byte-stream class (httpx checks it)."""
    cls = _STREAM_CLASSES.get((body, base))
    if cls is None:
        cls = _STREAM_CLASSES[(body, base)] = type(body.__name__, (body, base), {})
    return cls
