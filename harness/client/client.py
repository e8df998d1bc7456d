"""The reference client: one call = attempts under deadlines, retried by policy.

:class:`ReferenceClient` (sync, what agents such as hermes use) and
:class:`AsyncReferenceClient` are two thin drivers of one sans-IO attempt machine
(:class:`~harness.client.attempt.AttemptRun`); they differ only in how they read a
chunk and wait. One call:

1. build (or reuse) an :class:`~harness.client.transport.OwnedClient`: a real
   ``openai`` SDK client with its own keepalive-configured httpx client;
2. run an attempt as a scope, ``with watchdog.attempt(owned.abort) as token:`` (first
   byte, stream idle, stale call, hard ceiling; a fired deadline retires the token
   and shuts the sockets down);
3. send the request through the SDK's raw-response path (``sdk_calls.py``) and read
   the raw body, decoding SSE with :mod:`harness.sse` so comments are visible;
4. report each chunk's activity to the watchdog, stop reading once retired, and let
   the machine decide: the reply (after the truncation guard) or the typed error, and
   whether the SDK client is discarded;
5. let the retry policy decide; a wait between attempts never crosses the hard ceiling.

Calls on one client run one at a time (each driver serialises them with its own lock:
a thread lock, an asyncio lock); both take the same injectable clock, and ``close``
cuts short a call's wait between attempts (the call then gives up at once).
Not here: deadline arithmetic, socket options, error classes, backoff arithmetic.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, TypedDict, TypeVar, Unpack

from harness.apis import api_for, names
from harness.client.attempt import AttemptRun, Call, Reply, check_ceiling
from harness.client.clock import Clock, MonotonicClock
from harness.client.components import Components
from harness.client.deadlines import DeadlineState
from harness.client.errors import HarnessError, RetriesExhausted
from harness.client.retry import RetryPolicy
from harness.client.sdk_calls import request_options, sdk_request
from harness.client.settings import ClientSettings, SettingsError
from harness.client.transport import OwnedClient, copy_sdk_kwargs
from harness.client.watchdog import AsyncWatchdog, Watchdog

__all__ = ["AsyncReferenceClient", "CallOptions", "Components", "ReferenceClient", "Reply"]

_W = TypeVar("_W")  # the flavour of watchdog a driver's factory makes


class CallOptions(TypedDict, total=False):
    """``complete``'s options, for both drivers (defaults: ``_Base._new_call``)."""

    model: str
    api: str
    stream: bool
    max_tokens: int | None
    on_delta: Callable[[str], None] | None
    tools: Sequence[Mapping[str, Any]] | None
    tool_choice: Any


class _Base:
    """What both drivers share: settings, clock, the call's shape, the retry decision."""

    def __init__(
        self,
        base_url: str,
        api_key: str = "harness-test-key",
        *,
        settings: ClientSettings | None = None,
        retry_policy: RetryPolicy | None = None,
        clock: Clock | None = None,
        components: Components | None = None,
        **sdk_kwargs: Any,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise SettingsError("base_url", base_url, "an http:// or https:// URL")
        self.base_url = base_url
        self._api_key = api_key
        self.settings = settings or ClientSettings()
        self.retry_policy = retry_policy or RetryPolicy.from_settings(self.settings)
        self.components = components or Components()
        self._factory = self.components.transport()
        self._sdk_kwargs = copy_sdk_kwargs(sdk_kwargs)
        self._owned: OwnedClient | None = None
        #: how many OwnedClients this client has built (tests and reports read it).
        self.builds = 0
        self.clock = clock or MonotonicClock()
        #: the running call's watchdog (``close`` cancels its wait between attempts)
        self._active: Watchdog | AsyncWatchdog | None = None

    def _cancel_active(self) -> None:
        """Cut the running call's wait between attempts short (it gives up at once)."""
        active = self._active
        if active is not None:
            active.cancel()

    def _new_call(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        model: str = "test-model",
        api: str = "chat",
        stream: bool = True,
        max_tokens: int | None = None,
        on_delta: Callable[[str], None] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
    ) -> Call:
        """The call ``complete`` was asked for (its options' defaults are these)."""
        if api not in names():
            raise SettingsError("api", api, ", ".join(names()))
        if not isinstance(messages, Sequence) or isinstance(messages, str | bytes) or not messages:
            raise SettingsError(
                "messages", messages, "a non-empty list of {role, content} messages"
            )
        call = Call(api, bool(stream), model, list(messages), max_tokens, on_delta)
        call.tools, call.tool_choice = (None if tools is None else list(tools)), tool_choice
        return call

    def _watchdog(self, call: Call, factory: Callable[..., _W]) -> _W:
        """The call's watchdog from ``factory``: first byte is off for very large prompts."""
        chars = sum(
            len(str(m.get("content", ""))) if isinstance(m, Mapping) else len(str(m))
            for m in call.messages
        )
        state = DeadlineState(self.settings.for_prompt(chars), call_started_at=self.clock.now())
        return factory(state, clock=self.clock, describe=self.components.describe_deadlines)

    def _give_up(
        self, call: Call, err: HarnessError, elapsed_s: float, why: str
    ) -> RetriesExhausted:
        return RetriesExhausted(
            f"gave up after {len(call.errors)} attempt(s): {why}; last error: {err.message}",
            attempts=call.errors,
            attempt=err.attempt,
            elapsed_s=elapsed_s,
            deadline=err.deadline,
        )

    def _after_failure(self, call: Call, err: HarnessError, wd: Watchdog | AsyncWatchdog) -> float:
        """Record ``err``; raise if the call is over, else return the delay before the next attempt."""
        now, hard_at = wd.now(), wd.hard_deadline_at()
        call.errors.append(err)
        n = err.attempt or len(call.errors)
        if not err.is_retryable() or self.retry_policy.max_attempts == 1:
            raise err  # nothing was retried: the error itself is the answer
        if not self.retry_policy.should_retry(err, n):
            used = f"{n} of {self.retry_policy.max_attempts} attempts used"
            raise self._give_up(call, err, err.elapsed_s or 0.0, used) from err
        delay = self.retry_policy.delay_s(err, n)
        if hard_at is not None and now + delay >= hard_at:
            why = f"a {delay:.3f} s wait would cross the hard ceiling"
            raise self._give_up(call, err, err.elapsed_s or 0.0, why) from err
        return delay

    def _cut_short(
        self, call: Call, err: HarnessError, wd: Watchdog | AsyncWatchdog
    ) -> RetriesExhausted:
        return self._give_up(call, err, wd.elapsed_s(), "the wait was cut short")

    def _exhausted(self, call: Call, wd: Watchdog | AsyncWatchdog) -> RetriesExhausted:
        return self._give_up(call, call.errors[-1], wd.elapsed_s(), "no attempts left")

    def _begin(self, wd: Watchdog | AsyncWatchdog, call: Call) -> AttemptRun:
        """A fresh attempt machine, unless the hard ceiling passed meanwhile."""
        check_ceiling(wd.expired(), attempt=wd.state.attempt + 1, elapsed_s=wd.elapsed_s())
        return AttemptRun(call, self.components)

    def _request(self, owned: OwnedClient, call: Call, connect_s: float | None) -> Any:
        """The SDK's request object: a context manager, or the raw response itself when
        the API's call shape says so (``sdk_returns_response``: awaitable in the async
        client)."""
        extra = request_options(self.settings, connect_s)
        return sdk_request(owned.sdk, call, self._api_key, extra)

    def _build(self, is_async: bool) -> OwnedClient:
        owned = self._factory.build(
            base_url=self.base_url,
            api_key=self._api_key,
            sdk_kwargs=self._sdk_kwargs,
            settings=self.settings,
            is_async=is_async,
        )
        self.builds += 1
        return owned

    def _detach(self, owned: OwnedClient | None) -> OwnedClient | None:
        """The client to close (``owned`` or the current one), no longer current."""
        target = owned or self._owned
        if target is not None and target is self._owned:
            self._owned = None
        return target


class ReferenceClient(_Base):
    """Synchronous reference client. See the module docstring for what one call does."""

    def __init__(self, base_url: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(base_url, *args, **kwargs)
        self._lock = threading.Lock()

    def complete(
        self, messages: Sequence[Mapping[str, Any]], **options: Unpack[CallOptions]
    ) -> Reply:
        """One call: attempts under deadlines, retried per policy. Returns a complete
        :class:`Reply` or raises a :class:`~harness.client.errors.HarnessError`."""
        call = self._new_call(messages, **options)
        with self._lock:
            with self._watchdog(call, self.components.watchdog_factory) as wd:
                self._active = wd
                try:
                    for _ in range(self.retry_policy.max_attempts):
                        try:
                            return self._attempt(call, wd)
                        except HarnessError as err:
                            if not wd.wait(self._after_failure(call, err, wd)):
                                raise self._cut_short(call, err, wd) from err
                    raise self._exhausted(call, wd)
                finally:
                    self._active = None

    def rebuild(self) -> None:
        """Drop the current SDK client (closing it); the next call builds a fresh one."""
        with self._lock:
            self._discard()

    def close(self) -> None:
        """Release the SDK client and its connections; a call waiting between attempts
        gives up at once. The client stays usable: a later call builds a fresh SDK
        client (close and rebuild are safe in any order)."""
        self._cancel_active()
        self.rebuild()

    @property
    def sdk(self) -> Any:
        """The current ``openai.OpenAI`` (built if needed)."""
        with self._lock:
            return self._current().sdk

    def __enter__(self) -> ReferenceClient:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _attempt(self, call: Call, wd: Watchdog) -> Reply:
        owned = self._current()
        run = self._begin(wd, call)
        with wd.attempt(owned.abort) as token:
            connect_s = run.start(token, wd.next_deadline(), wd.now(), self.settings)
            with _failures(run, wd), contextlib.ExitStack() as stack:
                request = self._request(owned, call, connect_s)
                if api_for(call.api).sdk_returns_response:
                    response = request
                    stack.callback(response.close)
                else:
                    response = stack.enter_context(request).http_response
                for chunk in response.iter_bytes():
                    if not _fed(run, wd, chunk):
                        break
                wd.report(run.finish())
        verdict = run.verdict(wd.elapsed_s(), aborted=owned.aborted)
        if verdict.discard:
            self._discard(owned)
        return verdict.unwrap()

    def _current(self) -> OwnedClient:
        if self._owned is None or not self._owned.usable:
            self._discard()
            self._owned = self._build(is_async=False)
        return self._owned

    def _discard(self, owned: OwnedClient | None = None) -> None:
        target = self._detach(owned)
        if target is not None:
            target.close()


class AsyncReferenceClient(_Base):
    """The asyncio twin of :class:`ReferenceClient`: the same attempt machine, the same
    scope (its watchdog is a loop timer on the same injectable clock), errors and retry
    policy. One call at a time per client (an asyncio lock). Constructed like
    :class:`ReferenceClient`."""

    def __init__(self, base_url: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(base_url, *args, **kwargs)
        self._lock = asyncio.Lock()

    async def complete(
        self, messages: Sequence[Mapping[str, Any]], **options: Unpack[CallOptions]
    ) -> Reply:
        call = self._new_call(messages, **options)
        async with self._lock:
            wd = self._watchdog(call, self.components.async_watchdog_factory)
            self._active = wd
            try:
                for _ in range(self.retry_policy.max_attempts):
                    try:
                        return await self._attempt(call, wd)
                    except HarnessError as err:
                        if not await wd.wait(self._after_failure(call, err, wd)):
                            raise self._cut_short(call, err, wd) from err
                raise self._exhausted(call, wd)
            finally:
                self._active = None

    async def rebuild(self) -> None:
        """Drop the current SDK client (closing it); the next call builds a fresh one."""
        async with self._lock:
            await self._discard()

    async def close(self) -> None:
        """As :meth:`ReferenceClient.close`."""
        self._cancel_active()
        await self.rebuild()

    async def __aenter__(self) -> AsyncReferenceClient:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def _attempt(self, call: Call, wd: AsyncWatchdog) -> Reply:
        owned = await self._current()
        run = self._begin(wd, call)
        with wd.attempt(owned.abort) as token:
            connect_s = run.start(token, wd.next_deadline(), wd.now(), self.settings)
            with _failures(run, wd):
                async with contextlib.AsyncExitStack() as stack:
                    request = self._request(owned, call, connect_s)
                    if api_for(call.api).sdk_returns_response:
                        response = await request
                        stack.push_async_callback(response.aclose)
                    else:
                        response = (await stack.enter_async_context(request)).http_response
                    async for chunk in response.aiter_bytes():
                        if not _fed(run, wd, chunk):
                            break
                    wd.report(run.finish())
        verdict = run.verdict(wd.elapsed_s(), aborted=owned.aborted)
        if verdict.discard:
            await self._discard(owned)
        return verdict.unwrap()

    async def _current(self) -> OwnedClient:
        if self._owned is None or not self._owned.usable:
            await self._discard()
            self._owned = self._build(is_async=True)
        return self._owned

    async def _discard(self, owned: OwnedClient | None = None) -> None:
        target = self._detach(owned)
        if target is not None:
            await target.aclose()


@contextlib.contextmanager
def _failures(run: AttemptRun, wd: Watchdog | AsyncWatchdog) -> Iterator[None]:
    """Whatever sending or reading raises is the machine's to classify (the verdict)."""
    try:
        yield
    except Exception as exc:
        run.failed(exc, wd.expired())


def _fed(run: AttemptRun, wd: Watchdog | AsyncWatchdog, chunk: bytes) -> bool:
    """One chunk to the machine, its activity to the watchdog; False once the attempt is
    retired (whatever is still buffered is dropped)."""
    if not run.alive:
        return False
    wd.report(run.receive(chunk))
    return True
