"""The reference client: one call = attempts under deadlines, retried by policy.

:class:`ReferenceClient` (sync, what agents such as hermes use) and
:class:`AsyncReferenceClient` run the same steps:

1. build (or reuse) an :class:`~harness.client.transport.OwnedClient`: a real
   ``openai`` SDK client with its own keepalive-configured httpx client;
2. start an attempt under the watchdog (first byte, stream idle, stale call, hard
   ceiling) with a fresh :class:`~harness.client.watchdog.AttemptToken`;
3. send the request through the SDK's raw-response path (``with_streaming_response``
   for chat and responses, ``client.post("/messages")`` for Anthropic messages) and read
   the raw body, decoding SSE with :mod:`harness.sse` so comments are visible;
4. report each item to the watchdog (content or comment), drop it if the attempt was
   retired, and at the end apply the truncation guard;
5. on failure map the exception at one boundary (``errors.map_exception``), discard a
   client whose attempt was aborted or whose connection failed, and let the retry
   policy decide; a wait between attempts never crosses the hard ceiling.

Calls on one client run one at a time (the sync client serialises them with a lock).
Not here: deadline arithmetic, socket options, error classes, backoff arithmetic.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from harness.client.clock import Clock, MonotonicClock
from harness.client.compat import httpx
from harness.client.deadlines import DeadlineState, describe_deadlines
from harness.client.errors import (
    HarnessError,
    RetriesExhausted,
    TransportError,
    map_exception,
)
from harness.client.keepalive import keepalive_options
from harness.client.retry import RetryPolicy, parse_retry_after
from harness.client.settings import ClientSettings, SettingsError
from harness.client.streams import APIS, StreamReader, parse_body, require_terminal
from harness.client.transport import (
    KeepaliveBuilder,
    OwnedClient,
    TransportFactory,
    copy_sdk_kwargs,
)
from harness.client.watchdog import (
    AsyncWatchdog,
    AttemptToken,
    Watchdog,
    error_for_deadline,
    owns_attempt,
)
from harness.sse import SSEDecoder

__all__ = ["AsyncReferenceClient", "Components", "ReferenceClient", "Reply"]

_RAW_HEADER = "X-Stainless-Raw-Response"  # the SDK's own switch for an unread raw response
_ANTHROPIC_VERSION = "2023-06-01"


@dataclass(frozen=True)
class Reply:
    """A completed answer (never a partial one)."""

    text: str
    finish_reason: str | None
    api: str
    stream: bool
    attempts: int
    elapsed_s: float


@dataclass(frozen=True)
class Components:
    """The replaceable pieces of the stack, one seam each (issue 7 builds mutants by
    replacing exactly one). Defaults are the correct implementations."""

    #: (platform, socket constants, settings) -> socket options.
    keepalive_options: KeepaliveBuilder = keepalive_options
    #: builds OwnedClient objects from a defensive copy of the caller's kwargs; None:
    #: ``TransportFactory(keepalive_builder=keepalive_options)``.
    transport_factory: TransportFactory | None = None
    #: (state, clock, describe) -> sync deadline enforcer (a context manager).
    watchdog_factory: Callable[..., Watchdog] = Watchdog
    #: (state, describe) -> async deadline enforcer.
    async_watchdog_factory: Callable[..., AsyncWatchdog] = AsyncWatchdog
    #: may this attempt still deliver deltas and a result?
    retirement_check: Callable[[AttemptToken], bool] = owns_attempt
    #: raises TruncatedStream unless the stream's terminal marker arrived.
    truncation_guard: Callable[[StreamReader], None] = require_terminal
    #: Retry-After header value -> seconds (or None).
    parse_retry_after: Callable[[str | None], float | None] = parse_retry_after
    #: (state, now) -> text naming the armed deadlines (disabled ones never shown).
    describe_deadlines: Callable[[DeadlineState, float], str] = describe_deadlines

    def transport(self) -> TransportFactory:
        return self.transport_factory or TransportFactory(keepalive_builder=self.keepalive_options)


@dataclass
class _Call:
    """One call's request, shared by every attempt."""

    api: str
    stream: bool
    model: str
    messages: list[Any]
    max_tokens: int | None
    on_delta: Callable[[str], None] | None = None
    errors: list[HarnessError] = field(default_factory=list)


class _Received:
    """What one attempt has read: decoded SSE items (stream) or the raw body. The same
    steps serve the sync and the async client; only the reading of chunks differs."""

    def __init__(self, call: _Call, check: Callable[[AttemptToken], bool]) -> None:
        self.call = call
        self.check = check
        self.reader = StreamReader(call.api)
        self.body = bytearray()
        self.decoder = SSEDecoder() if call.stream else None

    def feed(self, chunk: bytes, wd: Watchdog | AsyncWatchdog, token: AttemptToken) -> None:
        if self.decoder is None:
            self.body += chunk
            wd.content() if chunk.strip() else wd.comment()
            return
        for item in self.decoder.feed(chunk):
            self._deliver(self.reader.feed(item), wd, token)

    def flush(self, wd: Watchdog | AsyncWatchdog, token: AttemptToken) -> None:
        if self.decoder is not None:
            for item in self.decoder.flush():
                self._deliver(self.reader.feed(item), wd, token)

    def result(self, truncation_guard: Callable[[StreamReader], None]) -> tuple[str, str | None]:
        """(text, finish_reason); raises a HarnessError for a truncated or bad body."""
        if self.call.stream:
            truncation_guard(self.reader)
            return self.reader.text, self.reader.finish_reason
        return parse_body(self.call.api, bytes(self.body))

    def _deliver(self, step: Any, wd: Watchdog | AsyncWatchdog, token: AttemptToken) -> None:
        if step.kind == "comment":
            wd.comment()
            return
        wd.content()
        # a retired attempt's late delta is dropped, never shown to the caller
        if step.text and self.call.on_delta is not None and self.check(token):
            self.call.on_delta(step.text)


class _Base:
    def __init__(
        self,
        base_url: str,
        api_key: str = "harness-test-key",
        *,
        settings: ClientSettings | None = None,
        retry_policy: RetryPolicy | None = None,
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

    def _new_call(self, messages, model, api, stream, max_tokens, on_delta) -> _Call:
        if api not in APIS:
            raise SettingsError("api", api, ", ".join(APIS))
        if not isinstance(messages, Sequence) or isinstance(messages, str | bytes) or not messages:
            raise SettingsError(
                "messages", messages, "a non-empty list of {role, content} messages"
            )
        return _Call(api, bool(stream), model, list(messages), max_tokens, on_delta)

    def _settings_for(self, call: _Call) -> ClientSettings:
        """The call's settings: first byte is off for very large prompts."""
        chars = sum(
            len(str(m.get("content", ""))) if isinstance(m, Mapping) else len(str(m))
            for m in call.messages
        )
        return self.settings.for_prompt(chars)

    def _give_up(
        self, call: _Call, err: HarnessError, elapsed_s: float, why: str
    ) -> RetriesExhausted:
        return RetriesExhausted(
            f"gave up after {len(call.errors)} attempt(s): {why}; last error: {err.message}",
            attempts=call.errors,
            attempt=err.attempt,
            elapsed_s=elapsed_s,
            deadline=err.deadline,
        )

    def _after_failure(
        self, call: _Call, err: HarnessError, now: float, hard_at: float | None
    ) -> float:
        """Record ``err``; raise if the call is over, else return the delay before the next attempt."""
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

    def _request_kwargs(self, call: _Call, connect_s: float | None) -> dict[str, Any]:
        s = self.settings
        timeout = httpx.Timeout(
            connect=connect_s, read=s.read_timeout_s, write=s.read_timeout_s, pool=connect_s
        )
        return {"timeout": timeout}

    def _messages_body(self, call: _Call) -> dict[str, Any]:
        return {
            "model": call.model,
            "messages": call.messages,
            "max_tokens": call.max_tokens or 1024,
            "stream": call.stream,
        }

    def _typed_create(self, sdk: Any, call: _Call, extra: dict[str, Any]) -> Any:
        """The SDK's raw-response context manager for chat / responses."""
        if call.api == "chat":
            opts: dict[str, Any] = {"max_tokens": call.max_tokens} if call.max_tokens else {}
            return sdk.chat.completions.with_streaming_response.create(
                model=call.model, messages=call.messages, stream=call.stream, **opts, **extra
            )
        opts = {"max_output_tokens": call.max_tokens} if call.max_tokens else {}
        return sdk.responses.with_streaming_response.create(
            model=call.model, input=call.messages, stream=call.stream, **opts, **extra
        )

    def _post_messages(self, sdk: Any, call: _Call, extra: dict[str, Any]) -> Any:
        headers = {
            _RAW_HEADER: "stream",
            "anthropic-version": _ANTHROPIC_VERSION,
            "x-api-key": self._api_key,
        }
        return sdk.post(
            "/messages",
            cast_to=httpx.Response,
            body=self._messages_body(call),
            options={"headers": headers, **extra},
        )

    @staticmethod
    def _check_ceiling(state: DeadlineState, now: float) -> None:
        """Between attempts only the hard ceiling is armed; if it passed while the next
        attempt was being prepared (building an SDK client), do not start it."""
        due = state.expired(now)
        if due is not None:
            raise error_for_deadline(
                due, attempt=state.attempt + 1, elapsed_s=now - state.call_started_at
            )

    @staticmethod
    def _fill(err: HarnessError, attempt: int, elapsed_s: float) -> HarnessError:
        if err.attempt is None:
            err.attempt = attempt
        if err.elapsed_s is None:
            err.elapsed_s = elapsed_s
        return err

    def _reply(
        self, call: _Call, received: _Received, token: AttemptToken, elapsed_s: Callable[[], float]
    ) -> Reply:
        """The finished attempt's answer, after the truncation guard."""
        try:
            text, finish = received.result(self.components.truncation_guard)
        except HarnessError as err:
            raise self._fill(err, token.number, elapsed_s()) from None
        return Reply(text, finish, call.api, call.stream, token.number, elapsed_s())

    @staticmethod
    def _retired(token: AttemptToken, elapsed_s: float) -> HarnessError:
        assert token.retired_by is not None
        return error_for_deadline(token.retired_by, attempt=token.number, elapsed_s=elapsed_s)


class ReferenceClient(_Base):
    """Synchronous reference client. See the module docstring for what one call does."""

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
        super().__init__(
            base_url,
            api_key,
            settings=settings,
            retry_policy=retry_policy,
            components=components,
            **sdk_kwargs,
        )
        self.clock = clock or MonotonicClock()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ public

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        model: str = "test-model",
        api: str = "chat",
        stream: bool = True,
        max_tokens: int | None = None,
        on_delta: Callable[[str], None] | None = None,
    ) -> Reply:
        """One call: attempts under deadlines, retried per policy. Returns a complete
        :class:`Reply` or raises a :class:`~harness.client.errors.HarnessError`."""
        call = self._new_call(messages, model, api, stream, max_tokens, on_delta)
        with self._lock:
            state = DeadlineState(self._settings_for(call), call_started_at=self.clock.now())
            factory = self.components.watchdog_factory
            with factory(
                state, clock=self.clock, describe=self.components.describe_deadlines
            ) as wd:
                for _ in range(self.retry_policy.max_attempts):
                    try:
                        return self._attempt(call, wd)
                    except HarnessError as err:
                        delay = self._after_failure(call, err, wd.now(), wd.hard_deadline_at())
                        if not wd.wait(delay):
                            raise self._give_up(
                                call, err, wd.elapsed_s(), "the wait was cut short"
                            ) from err
                raise self._give_up(call, call.errors[-1], wd.elapsed_s(), "no attempts left")

    def rebuild(self) -> None:
        """Drop the current SDK client (closing it); the next call builds a fresh one."""
        with self._lock:
            self._discard()

    def close(self) -> None:
        """Release the SDK client and its connections. The client stays usable: a later
        call builds a fresh SDK client (close and rebuild are safe in any order)."""
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

    # ------------------------------------------------------------------ one attempt

    def _attempt(self, call: _Call, wd: Watchdog) -> Reply:
        owned = self._current()
        self._check_ceiling(wd.state, wd.now())
        token = wd.start_attempt(owned.abort)
        check = self.components.retirement_check
        received = _Received(call, check)
        try:
            with contextlib.ExitStack() as stack:
                response = self._open(owned, call, wd, stack)
                for chunk in response.iter_bytes():
                    if not check(token):
                        break  # retired: drop whatever is still buffered
                    received.feed(chunk, wd, token)
                if check(token):
                    received.flush(wd, token)
        except Exception as exc:
            wd.end_attempt(token)
            err = self._failure(exc, owned, token, wd)
            if err is exc:
                raise
            raise err from exc
        wd.end_attempt(token)
        if not check(token):
            self._discard(owned)
            raise self._retired(token, wd.elapsed_s())
        return self._reply(call, received, token, wd.elapsed_s)

    def _open(
        self, owned: OwnedClient, call: _Call, wd: Watchdog, stack: contextlib.ExitStack
    ) -> Any:
        nxt = wd.state.next_deadline()
        connect_s = self.settings.connect_timeout_s
        if nxt is not None:
            remaining = max(0.001, nxt.at - wd.now())
            connect_s = remaining if connect_s is None else min(connect_s, remaining)
        extra = self._request_kwargs(call, connect_s)
        if call.api == "messages":
            response = self._post_messages(owned.sdk, call, extra)
            stack.callback(response.close)
            return response
        return stack.enter_context(self._typed_create(owned.sdk, call, extra)).http_response

    def _failure(
        self, exc: Exception, owned: OwnedClient, token: AttemptToken, wd: Watchdog
    ) -> HarnessError:
        if not self.components.retirement_check(token):
            self._discard(owned)
            return self._retired(token, wd.elapsed_s())
        err = map_exception(
            exc,
            attempt=token.number,
            elapsed_s=wd.elapsed_s(),
            parse_retry_after=self.components.parse_retry_after,
        )
        if isinstance(err, TransportError) or owned.aborted:
            self._discard(owned)
        return self._fill(err, token.number, wd.elapsed_s())

    # ------------------------------------------------------------------ ownership

    def _current(self) -> OwnedClient:
        if self._owned is None or not self._owned.usable:
            self._discard()
            self._owned = self._factory.build(
                base_url=self.base_url,
                api_key=self._api_key,
                sdk_kwargs=self._sdk_kwargs,
                settings=self.settings,
            )
            self.builds += 1
        return self._owned

    def _discard(self, owned: OwnedClient | None = None) -> None:
        target = owned or self._owned
        if target is None:
            return
        if target is self._owned:
            self._owned = None
        target.close()


class AsyncReferenceClient(_Base):
    """The asyncio twin of :class:`ReferenceClient`: same deadlines (enforced by a cancel
    scope per attempt), same errors, same retry policy. One call at a time per client.
    Constructed like :class:`ReferenceClient`, without ``clock`` (the loop's clock is used)."""

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        model: str = "test-model",
        api: str = "chat",
        stream: bool = True,
        max_tokens: int | None = None,
        on_delta: Callable[[str], None] | None = None,
    ) -> Reply:
        import asyncio

        call = self._new_call(messages, model, api, stream, max_tokens, on_delta)
        loop = asyncio.get_running_loop()
        state = DeadlineState(self._settings_for(call), call_started_at=loop.time())
        wd = self.components.async_watchdog_factory(
            state, describe=self.components.describe_deadlines
        )
        for _ in range(self.retry_policy.max_attempts):
            try:
                return await self._attempt(call, wd)
            except HarnessError as err:
                delay = self._after_failure(call, err, wd.now(), wd.hard_deadline_at())
                await asyncio.sleep(
                    delay
                )  # a scheduled wait (cancellable), bounded by the ceiling check
        raise self._give_up(call, call.errors[-1], wd.elapsed_s(), "no attempts left")

    async def rebuild(self) -> None:
        await self._discard()

    async def close(self) -> None:
        await self._discard()

    async def __aenter__(self) -> AsyncReferenceClient:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def _attempt(self, call: _Call, wd: AsyncWatchdog) -> Reply:
        owned = await self._current()
        self._check_ceiling(wd.state, wd.now())
        check = self.components.retirement_check
        received = _Received(call, check)
        token: AttemptToken | None = None
        try:
            async with wd.attempt() as token:
                async with contextlib.AsyncExitStack() as stack:
                    response = await self._open(owned, call, wd, stack)
                    async for chunk in response.aiter_bytes():
                        if not check(token):
                            break
                        received.feed(chunk, wd, token)
                    received.flush(wd, token)
        except HarnessError as err:
            if token is None or not check(token) or err.deadline is not None:
                await self._discard(owned)  # an aborted attempt's client is never reused
            self._fill(err, token.number if token else 0, wd.elapsed_s())
            raise
        except Exception as exc:
            n = token.number if token else 0
            err = map_exception(
                exc,
                attempt=n,
                elapsed_s=wd.elapsed_s(),
                parse_retry_after=self.components.parse_retry_after,
            )
            if isinstance(err, TransportError):
                await self._discard(owned)
            raise self._fill(err, n, wd.elapsed_s()) from exc
        assert token is not None
        if not check(token):
            await self._discard(owned)
            raise self._retired(token, wd.elapsed_s())
        return self._reply(call, received, token, wd.elapsed_s)

    async def _open(
        self, owned: OwnedClient, call: _Call, wd: AsyncWatchdog, stack: contextlib.AsyncExitStack
    ) -> Any:
        extra = self._request_kwargs(call, self.settings.connect_timeout_s)
        if call.api == "messages":
            response = await self._post_messages(owned.sdk, call, extra)
            stack.push_async_callback(response.aclose)
            return response
        api_response = await stack.enter_async_context(self._typed_create(owned.sdk, call, extra))
        return api_response.http_response

    async def _current(self) -> OwnedClient:
        if self._owned is None or not self._owned.usable:
            await self._discard()
            self._owned = self._factory.build_async(
                base_url=self.base_url,
                api_key=self._api_key,
                sdk_kwargs=self._sdk_kwargs,
                settings=self.settings,
            )
            self.builds += 1
        return self._owned

    async def _discard(self, owned: OwnedClient | None = None) -> None:
        target = owned or self._owned
        if target is None:
            return
        if target is self._owned:
            self._owned = None
        await target.aclose()
