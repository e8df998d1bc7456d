"""The guard's response bodies: passed through byte for byte, each chunk's activity to
the request's watchdog, the watch's verdict at the end (step 3-4 of ``transport.py``).

The per-chunk steps are :class:`_Watched`'s; :class:`Body` and :class:`AsyncBody` only
read, yield and close, in their own way (a thread's close, a loop task's).

Not here: the request's send and head (``transport.py``), what bytes mean (``watch.py``).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Iterator
from typing import Any, NoReturn, Protocol

from harness.client.errors import HarnessError
from harness.client.tokens import AttemptToken
from harness.client.watchdog import Watchdog
from harness.guard.request import GuardedRequest
from harness.guard.watch import Watch

__all__ = ["AsyncBody", "Body", "Face", "aclose_inner", "end", "reraise", "stop"]


class Face(Protocol):
    """What a body asks of its transport: the mapping of failures to the library's errors."""

    def _failed(
        self, watch: Watch, exc: BaseException, token: AttemptToken, wd: Any, request: Any
    ) -> BaseException: ...

    def _error(
        self, typed: HarnessError, exc: BaseException | None, request: Any
    ) -> BaseException: ...


class _Watched:
    """What both bodies share: the per-chunk steps around each read (sans-IO: the
    drivers below only read, yield and close)."""

    def __init__(
        self, face: Face, inner: Any, watch: Watch, held: GuardedRequest, request: Any
    ) -> None:
        self._face, self._inner, self._watch = face, inner, watch
        self._held, self._request = held, request
        self._receive, self._report = watch.receive, held.watchdog.report

    def _reading(self) -> bool:
        """Before a read. ``reading`` brackets each read and ``reaped`` is checked after
        setting it and after each read (request.py says why): a body left suspended at
        its ``yield`` is never inside a read when the watchdog closes its connection."""
        self._held.reading = True
        return not self._held.reaped

    def _read(self, chunk: bytes) -> bool:
        """After a read: whether ``chunk`` goes on (not when the body was reaped meanwhile)."""
        held = self._held
        held.reading = False
        if held.reaped:
            return False
        kind = self._receive(chunk)
        if kind is not None:
            self._report(kind)
        return True

    def _end_attempt(self) -> None:
        self._held.watchdog.end_attempt(self._held.token)

    def _failure(self, exc: BaseException) -> BaseException:
        """A read raised: the error to raise, the attempt ended."""
        held = self._held
        held.reading = False
        err = self._face._failed(self._watch, exc, held.token, held.watchdog, self._request)
        self._end_attempt()
        return err

    def _verdict(self) -> None:
        """The body is over: the watch's verdict on its end (terminal marker, retirement)."""
        held = self._held
        typed = self._watch.end(held.token, held.watchdog.elapsed_s())
        if typed is not None:
            err = self._face._error(typed, None, self._request)
            raise err from typed


class Body(_Watched):
    """The sync response body: passed through unchanged, watched on the way."""

    def __init__(
        self, face: Face, inner: Any, watch: Watch, held: GuardedRequest, request: Any
    ) -> None:
        super().__init__(face, inner, watch, held, request)
        held.attach(self._close_connection)

    def __iter__(self) -> Iterator[bytes]:
        held = self._held
        try:
            if self._reading():
                for chunk in self._inner:
                    if not self._read(chunk):
                        break
                    yield chunk
                    if not self._reading():
                        break
            held.reading = False
        except Exception as exc:
            err = self._failure(exc)
            held.close_connection()
            reraise(err, exc)
        self._end_attempt()  # the body is over: its watchdog thread exits now
        if held.reaped:
            held.close_connection()
        self._verdict()

    def close(self) -> None:
        held = self._held
        stop(held.watchdog, held.token)
        held.close_connection()

    def _close_connection(self) -> None:
        try:
            self._inner.close()
        finally:
            self._held.connection_released()


class AsyncBody(_Watched):
    """The async response body: passed through unchanged, watched on the way (one
    thread here: no race, but the same ``reading`` rule as the sync body)."""

    def __init__(
        self,
        face: Any,
        inner: Any,
        watch: Watch,
        held: GuardedRequest,
        request: Any,
    ) -> None:
        super().__init__(face, inner, watch, held, request)
        held.attach(functools.partial(face._schedule_close, inner, held))

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            if self._reading():
                async for chunk in self._inner:
                    if not self._read(chunk):
                        break
                    yield chunk
                    if not self._reading():
                        break
            self._held.reading = False
        except Exception as exc:
            err = self._failure(exc)
            await self._close_once()
            reraise(err, exc)
        end(self._held)
        if self._held.reaped:
            await self._close_once()
        self._verdict()

    async def aclose(self) -> None:
        end(self._held)
        await self._close_once()

    def _end_attempt(self) -> None:
        end(self._held)

    async def _close_once(self) -> None:
        """Close the connection unless the watchdog's scheduled close claimed it first."""
        if self._held.claim():
            await aclose_inner(self._inner, self._held)


def reraise(err: BaseException, exc: BaseException) -> NoReturn:
    """Raise the mapped error (``exc`` itself when the watch left it unmapped)."""
    if err is exc:
        raise exc
    raise err from err.__cause__


def stop(wd: Watchdog, token: AttemptToken) -> None:
    wd.end_attempt(token)
    wd.stop()


def end(held: GuardedRequest) -> None:
    """End an async request's attempt: its timer is cancelled, its watchdog over."""
    held.watchdog.end_attempt(held.token)
    held.watchdog_over()


async def aclose_inner(inner: Any, held: GuardedRequest) -> None:
    try:
        await inner.aclose()
    finally:
        held.connection_released()
