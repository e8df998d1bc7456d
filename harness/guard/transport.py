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

Not here: what bytes mean (``watch.py``), which socket (``sockets.py``), error classes
(``errors.py``).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import sys
from collections.abc import AsyncIterator, Iterator
from types import ModuleType
from typing import Any

from harness.client.attempt import clamp_connect
from harness.client.clock import MonotonicClock
from harness.client.deadlines import DeadlineState
from harness.client.errors import HarnessError, StallError, TruncatedStream
from harness.client.keepalive import keepalive_options, socket_constants
from harness.client.settings import ClientSettings
from harness.client.tokens import AttemptToken
from harness.client.watchdog import AsyncWatchdog, Watchdog
from harness.guard.errors import guard_error, library_of
from harness.guard.request import EXTENSION, GuardedRequest
from harness.guard.sockets import CURRENT, install
from harness.guard.watch import Watch

__all__ = ["AsyncGuardTransport", "GuardTransport"]


class _Face:
    """What both faces share: settings, the inner transport, the mapping to errors."""

    def __init__(
        self,
        *,
        settings: ClientSettings | None,
        http: ModuleType | None,
        inner: Any,
        is_async: bool,
    ) -> None:
        self.settings = settings or ClientSettings()
        self.http = http or library_of(None)
        if inner is None:
            options = keepalive_options(sys.platform, socket_constants(), self.settings)
            cls = self.http.AsyncHTTPTransport if is_async else self.http.HTTPTransport
            inner = cls(socket_options=options)
        install(inner, is_async=is_async)
        self.inner = inner
        #: requests whose watchdog or connection is still held (the client's close ends them)
        self.live: set[GuardedRequest] = set()

    def _watch(self, request: Any) -> Watch:
        return Watch.for_request(request.url.path, request.headers, self.settings)

    @staticmethod
    def _state(watch: Watch, now: float) -> DeadlineState:
        """The request's deadlines. The hard ceiling is the SDK *call's*: a retry (the
        SDKs number them in ``x-stainless-retry-count``) in the same thread or task
        continues the clock its first attempt started."""
        started = CALL_STARTED.get() if watch.attempt > 1 else None
        if started is None:
            started = now
            CALL_STARTED.set(started)
        return DeadlineState(watch.settings, call_started_at=started)

    def _clamp(self, request: Any, wd: Watchdog | AsyncWatchdog) -> None:
        timeout = dict(request.extensions.get("timeout") or {})
        for key in ("connect", "pool"):
            timeout[key] = clamp_connect(timeout.get(key), wd.next_deadline(), wd.now())
        request.extensions = {**request.extensions, "timeout": timeout}

    def _head(self, response: Any, watch: Watch, wd: Watchdog | AsyncWatchdog) -> None:
        hard_at = wd.hard_deadline_at()
        left_s = None if hard_at is None else hard_at - wd.now()
        for name, value in watch.response(response.status_code, response.headers, left_s).items():
            response.headers[name] = value

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

    def _failed(
        self, watch: Watch, exc: BaseException, token: AttemptToken, wd: Any, request: Any
    ) -> BaseException:
        typed = watch.failure(exc, token, wd.expired(), wd.elapsed_s())
        return exc if typed is None else self._error(typed, exc, request)


class GuardTransport(_Face):
    """A sync httpx transport enforcing the guard's deadlines on every request."""

    def __init__(
        self,
        *,
        settings: ClientSettings | None = None,
        http: ModuleType | None = None,
        inner: Any = None,
    ) -> None:
        super().__init__(settings=settings, http=http, inner=inner, is_async=False)

    def handle_request(self, request: Any) -> Any:
        watch = self._watch(request)
        held = GuardedRequest(self.live)
        wd = Watchdog(self._state(watch, _CLOCK.now()), clock=_CLOCK)
        wd.one_attempt(on_exit=held.watchdog_over)
        wd.start()
        token = wd.start_attempt(held.abort)
        held.arm(wd, token)
        self._clamp(request, wd)
        reset = CURRENT.set(held.binding)
        try:
            response = self.inner.handle_request(request)
        except Exception as exc:
            err = self._failed(watch, exc, token, wd, request)
            _stop(wd, token)
            held.connection_released()  # no body: the pool closed or kept it
            if err is exc:
                raise
            raise err from err.__cause__
        finally:
            CURRENT.reset(reset)
        self._head(response, watch, wd)
        body = _stream_class(_Body, self.http.SyncByteStream)
        response.stream = body(self, response.stream, watch, held, request)
        response.extensions[EXTENSION] = held
        return response

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


class _Body:
    """The sync response body: passed through unchanged, watched on the way."""

    def __init__(
        self, face: _Face, inner: Any, watch: Watch, held: GuardedRequest, request: Any
    ) -> None:
        self._face, self._inner, self._watch = face, inner, watch
        self._held, self._request = held, request
        held.attach(self._close_connection)

    def __iter__(self) -> Iterator[bytes]:
        held, watch = self._held, self._watch
        wd, token = held.watchdog, held.token
        receive, report = watch.receive, wd.report
        try:
            # ``reading`` brackets each read and ``reaped`` is checked after setting it
            # and after each read (request.py says why): a body left suspended at its
            # ``yield`` is never inside a read when the watchdog closes its connection
            held.reading = True
            if not held.reaped:
                for chunk in self._inner:
                    held.reading = False
                    if held.reaped:
                        break
                    kind = receive(chunk)
                    if kind is not None:
                        report(kind)
                    yield chunk
                    held.reading = True
                    if held.reaped:
                        break
            held.reading = False
        except Exception as exc:
            held.reading = False
            err = self._face._failed(watch, exc, token, wd, self._request)
            wd.end_attempt(token)
            held.close_connection()
            if err is exc:
                raise
            raise err from err.__cause__
        wd.end_attempt(token)  # the body is over: its watchdog thread exits now
        if held.reaped:
            held.close_connection()
        typed = watch.end(token, wd.elapsed_s())
        if typed is not None:
            err = self._face._error(typed, None, self._request)
            raise err from typed

    def close(self) -> None:
        held = self._held
        _stop(held.watchdog, held.token)
        held.close_connection()

    def _close_connection(self) -> None:
        try:
            self._inner.close()
        finally:
            self._held.connection_released()


class AsyncGuardTransport(_Face):
    """The asyncio face: the same steps, the watchdog a loop timer."""

    def __init__(
        self,
        *,
        settings: ClientSettings | None = None,
        http: ModuleType | None = None,
        inner: Any = None,
    ) -> None:
        super().__init__(settings=settings, http=http, inner=inner, is_async=True)
        #: connection closes scheduled by a fired deadline (kept until they have run)
        self._closing: set[asyncio.Task[None]] = set()

    async def handle_async_request(self, request: Any) -> Any:
        watch = self._watch(request)
        held = GuardedRequest(self.live)
        wd = AsyncWatchdog(self._state(watch, _CLOCK.now()), clock=_CLOCK)
        token = wd.start_attempt(functools.partial(self._abort, held))
        held.arm(wd, token)
        self._clamp(request, wd)
        reset = CURRENT.set(held.binding)
        try:
            response = await self.inner.handle_async_request(request)
        except Exception as exc:
            err = self._failed(watch, exc, token, wd, request)
            _end(held)
            held.connection_released()  # no body: the pool closed or kept it
            if err is exc:
                raise
            raise err from err.__cause__
        finally:
            CURRENT.reset(reset)
        self._head(response, watch, wd)
        body = _stream_class(_AsyncBody, self.http.AsyncByteStream)
        response.stream = body(self, response.stream, watch, held, request)
        response.extensions[EXTENSION] = held
        return response

    async def aclose(self) -> None:
        """Close the client: every request still held ends now (timer, connection)."""
        for held in list(self.live):
            _end(held)
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
        task = asyncio.get_running_loop().create_task(_aclose(inner, held))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)


class _AsyncBody:
    """The async response body: passed through unchanged, watched on the way."""

    def __init__(
        self,
        face: AsyncGuardTransport,
        inner: Any,
        watch: Watch,
        held: GuardedRequest,
        request: Any,
    ) -> None:
        self._face, self._inner, self._watch = face, inner, watch
        self._held, self._request = held, request
        held.attach(functools.partial(face._schedule_close, inner, held))

    async def __aiter__(self) -> AsyncIterator[bytes]:
        held, watch = self._held, self._watch
        wd, token = held.watchdog, held.token
        receive, report = watch.receive, wd.report
        try:
            held.reading = True  # as in the sync body (one thread here: no race, same rule)
            if not held.reaped:
                async for chunk in self._inner:
                    held.reading = False
                    if held.reaped:
                        break
                    kind = receive(chunk)
                    if kind is not None:
                        report(kind)
                    yield chunk
                    held.reading = True
                    if held.reaped:
                        break
            held.reading = False
        except Exception as exc:
            held.reading = False
            err = self._face._failed(watch, exc, token, wd, self._request)
            _end(held)
            if held.claim():
                await _aclose(self._inner, held)
            if err is exc:
                raise
            raise err from err.__cause__
        _end(held)
        if held.reaped and held.claim():
            await _aclose(self._inner, held)
        typed = watch.end(token, wd.elapsed_s())
        if typed is not None:
            err = self._face._error(typed, None, self._request)
            raise err from typed

    async def aclose(self) -> None:
        held = self._held
        _end(held)
        if held.claim():
            await _aclose(self._inner, held)


_CLOCK = MonotonicClock()
#: When the current SDK call's first attempt started, in this thread or task.
CALL_STARTED: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "harness_guard_call_started", default=None
)
_STREAM_CLASSES: dict[tuple[type, type], type] = {}


def _stream_class(body: type, base: type) -> type:
    """``body`` as a subclass of the library's byte-stream class (httpx checks it)."""
    cls = _STREAM_CLASSES.get((body, base))
    if cls is None:
        cls = _STREAM_CLASSES[(body, base)] = type(body.__name__, (body, base), {})
    return cls


def _stop(wd: Watchdog, token: AttemptToken) -> None:
    wd.end_attempt(token)
    wd.stop()


def _end(held: GuardedRequest) -> None:
    """End an async request's attempt: its timer is cancelled, its watchdog over."""
    held.watchdog.end_attempt(held.token)
    held.watchdog_over()


async def _aclose(inner: Any, held: GuardedRequest) -> None:
    try:
        await inner.aclose()
    finally:
        held.connection_released()
