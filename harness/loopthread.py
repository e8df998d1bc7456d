"""An asyncio event loop on its own daemon thread, started and stopped from sync code.

The fault server and the relay both serve sockets from a background loop so that sync
tests and the CLI can drive them. :class:`LoopThread` is that shared piece: ``start``
runs a setup coroutine (bind, listen) on a fresh loop and returns once the loop is
running, raising in the caller whatever the setup raised; ``stop`` runs a shutdown
coroutine on the loop, stops it and joins the thread.

    lt = LoopThread("relay")
    lt.start(self._listen)                 # errors from _listen raise here
    lt.call(self._sample_all(), timeout_s=5)
    lt.stop(self._shutdown, timeout_s=5)   # idempotent

:class:`LoopService` is the one owner of that thread for a socket service (the fault
server, the middlebox relay): ``start``/``stop``, the ``with`` form, ``url`` and
``base_url``; a subclass says what to serve (``_serve``), how to shut down
(``_shutdown``) and what a failed start raises (``_start_failed``).

Not here: what runs on the loop (``harness.server``, ``harness.relay``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Self, TypeVar

from harness.apis import PATH_PREFIX

__all__ = ["LoopService", "LoopThread", "LoopThreadError"]

T = TypeVar("T")


class LoopThreadError(RuntimeError):
    """The loop thread did not come up in time, or is not running."""


class LoopThread:
    """One event loop on one daemon thread; see the module docstring."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def started(self) -> bool:
        return self._thread is not None

    @property
    def running(self) -> bool:
        return self.loop is not None and self.loop.is_running()

    def start(
        self, setup: Callable[[], Awaitable[None]], *, timeout_s: float | None = None
    ) -> None:
        """Start the thread, run ``setup()`` on its loop, return once the loop runs.

        If ``setup`` raises, the thread ends and the exception is raised here; if it has
        not finished within ``timeout_s`` (None: no limit), :class:`LoopThreadError`."""
        ready = threading.Event()
        failed: list[BaseException] = []
        self._thread = threading.Thread(
            target=self._run, args=(setup, ready, failed), name=self.name, daemon=True
        )
        self._thread.start()
        if not ready.wait(timeout_s):
            raise LoopThreadError(f"{self.name} did not start within {timeout_s} s")
        if failed:
            self._thread.join()
            self._thread = self.loop = None
            raise failed[0]

    def call(self, coro: Coroutine[Any, Any, T], *, timeout_s: float | None = None) -> T:
        """Run ``coro`` on the loop from another thread and return its result."""
        if not self.running:
            coro.close()
            raise LoopThreadError(f"{self.name} is not running")
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout_s)

    def stop(
        self,
        shutdown: Callable[[], Awaitable[None]] | None = None,
        *,
        timeout_s: float | None = None,
    ) -> None:
        """Run ``shutdown()`` on the loop (if it is running), stop the loop, join the
        thread. Idempotent."""
        loop, thread = self.loop, self._thread
        if loop is None or thread is None:
            return
        if loop.is_running():
            if shutdown is not None:
                asyncio.run_coroutine_threadsafe(_await(shutdown), loop).result(timeout_s)
            loop.call_soon_threadsafe(loop.stop)
        thread.join()
        self._thread = self.loop = None

    def _run(
        self,
        setup: Callable[[], Awaitable[None]],
        ready: threading.Event,
        failed: list[BaseException],
    ) -> None:
        loop = asyncio.new_event_loop()
        self.loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(_await(setup))
        except BaseException as exc:  # reported to start(), raised there
            failed.append(exc)
            ready.set()
            loop.close()
            return
        # ready only once run_forever runs: a stop() right after start() then finds
        # the loop running and can stop it (else loop.stop would never be called)
        loop.call_soon(ready.set)
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            # join the default executor's threads: work handed to them (a /proc read, a
            # control-API reply) must not outlive the server or relay that started it
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()


class LoopService:
    """A socket service on its own loop thread; see the module docstring.

    Subclasses set ``host`` and ``port`` (the bound port once started) and implement
    :meth:`_serve` and :meth:`_shutdown`."""

    host: str
    port: int
    #: How long a start or a stop may take (None: no limit).
    loop_timeout_s: float | None = None

    def __init__(self, name: str) -> None:
        self._loop_thread = LoopThread(name)

    def start(self) -> Self:
        """Serve from the loop thread; returns once accepting. Idempotent."""
        if self._loop_thread.started:
            return self
        self._before_start()
        try:
            self._loop_thread.start(self._serve, timeout_s=self.loop_timeout_s)
        except Exception as exc:
            raise self._start_failed(exc) from exc
        return self

    def stop(self) -> None:
        """Run :meth:`_shutdown` on the loop, stop it, join the thread. Idempotent."""
        self._loop_thread.stop(self._shutdown, timeout_s=self.loop_timeout_s)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._loop_thread.running

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        return self.url + PATH_PREFIX

    def _before_start(self) -> None:
        """Sync set-up in the caller's thread before the loop starts (bind early)."""

    async def _serve(self) -> None:
        raise NotImplementedError

    async def _shutdown(self) -> None:
        raise NotImplementedError

    def _start_failed(self, exc: Exception) -> Exception:
        """The error :meth:`start` raises when ``_serve`` (or the thread) failed."""
        return exc


async def _await(fn: Callable[[], Awaitable[None]]) -> None:
    await fn()
