"""Nothing of a guarded request outlives it: its watchdog (thread or loop timer) and its
socket are gone by the response's close, the client's close, or the request's own hard
ceiling, however the caller abandons the stream -- the real openai and anthropic SDKs
against the fault server, sync and async.

Each case waits (bounded) on the request's ``done`` event, then checks the facts: no
``harness-watchdog`` thread started by the case is alive, the async timer is cancelled,
and the client's socket is closed (its ``fileno()`` is -1). Cases "by the ceiling" turn
the cycle collector off and keep a weak reference to the stream: it is still alive when
the request is released, so the release came from the guard, not from garbage collection.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from harness import guard
from harness.client import ClientSettings
from harness.faults import script_from_dict
from harness.guard.request import EXTENSION

#: only the hard ceiling: an abandoned stream is released by it and nothing earlier
CEILING = ClientSettings(
    first_byte_s=None, stream_idle_s=None, stale_call_s=None, hard_ceiling_s=1.0
)
USER = [{"role": "user", "content": "hi"}]
WAIT_S = 30.0  # a bound on waiting, never an expectation of how long it takes
#: the APIs and the SDK each is called through
APIS = ("chat", "responses", "messages")


@pytest.fixture
def no_gc() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _watchdogs() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "harness-watchdog"}


def _client(api: str, face: str, base_url: str) -> Any:
    if api == "messages":
        make = guard.async_http_client if face == "async" else guard.http_client
        cls = anthropic.AsyncAnthropic if face == "async" else anthropic.Anthropic
        http = make(anthropic, settings=CEILING)
        return cls(base_url=base_url.removesuffix("/v1"), api_key="k", http_client=http)
    make = guard.async_http_client if face == "async" else guard.http_client
    cls = openai.AsyncOpenAI if face == "async" else openai.OpenAI
    return cls(base_url=base_url, api_key="k", http_client=make(openai, settings=CEILING))


def _create(client: Any, api: str) -> Any:
    if api == "chat":
        return client.chat.completions.create(model="m", messages=USER, stream=True)
    if api == "responses":
        return client.responses.create(model="m", input=USER, stream=True)
    return client.messages.create(model="m", messages=USER, max_tokens=64, stream=True)


def _facts(stream: Any) -> tuple[Any, Any]:
    """The request's guard record and the client's socket (read before abandoning)."""
    held = stream.response.extensions[EXTENSION]
    sock = stream.response.extensions["network_stream"].get_extra_info("socket")
    return held, sock


def _opened(fault_server: Any, api: str) -> tuple[set[threading.Thread], Any, Any, Any]:
    """A sync guarded client's stream on ``fault_server``: the watchdogs alive before it,
    the client, the stream and its :func:`_facts` (a tuple: the garbage cases ``del`` the
    stream, so nothing else may hold it)."""
    before = _watchdogs()
    client = _client(api, "sync", fault_server.base_url)
    stream = _create(client, api)
    return before, client, stream, _facts(stream)


def _assert_released(held: Any, sock: Any, before: set[threading.Thread]) -> None:
    assert held.done.wait(WAIT_S), "the request was never released"
    for thread in _watchdogs() - before:
        thread.join(WAIT_S)  # its last steps after ``done``; bounded
    assert not (_watchdogs() - before), "a watchdog thread outlived its request"
    assert sock.fileno() == -1, "the client's socket is still open"
    armed = getattr(held.watchdog, "_timer", None)
    assert armed is None, "the async watchdog's timer is still scheduled"


def _by_ceiling(held: Any) -> bool:
    by = held.token.retired_by
    return by is not None and by.name == "hard_ceiling_s"


def _hang_after(fault_server: Any, n: int = 3) -> None:
    """The stream sends ``n`` events, then nothing (only the ceiling ends it)."""
    fault_server.load(
        script_from_dict({"rules": [{"fault": {"phase": f"event:{n}", "action": "hang"}}]})
    )


# ------------------------------------------------------------------ sync


@pytest.mark.timeout(90)
@pytest.mark.parametrize("api", APIS)
def test_a_stream_dropped_as_garbage_is_released_by_the_ceiling(fault_server, no_gc, api):
    _hang_after(fault_server)
    before, client, stream, (held, sock) = _opened(fault_server, api)
    next(iter(stream))
    alive = weakref.ref(stream)
    del stream
    _assert_released(held, sock, before)
    # openai's stream and its generator are a cycle (alive until the ceiling reaps it);
    # anthropic's is freed by reference counting (its generator's close released it)
    assert _by_ceiling(held) if alive() is not None else held.token.retired_by is None
    client.close()


@pytest.mark.timeout(90)
@pytest.mark.parametrize("api", APIS)
def test_an_exception_mid_iteration_is_released_by_the_ceiling(fault_server, no_gc, api):
    _hang_after(fault_server)
    before, client, stream, (held, sock) = _opened(fault_server, api)
    with pytest.raises(RuntimeError):
        for _event in stream:
            raise RuntimeError("the caller's own error, mid-stream")
    _assert_released(held, sock, before)
    assert _by_ceiling(held)
    client.close()


@pytest.mark.timeout(90)
@pytest.mark.parametrize("api", APIS)
def test_an_early_break_without_with_is_released_by_the_ceiling(fault_server, no_gc, api):
    _hang_after(fault_server)
    before, client, stream, (held, sock) = _opened(fault_server, api)
    for _event in stream:
        break
    _assert_released(held, sock, before)
    assert _by_ceiling(held)
    client.close()


@pytest.mark.timeout(90)
@pytest.mark.parametrize("api", APIS)
def test_an_early_break_inside_with_is_released_at_once(fault_server, api):
    _hang_after(fault_server)
    before = _watchdogs()
    client = _client(api, "sync", fault_server.base_url)
    with _create(client, api) as stream:
        held, sock = _facts(stream)
        for _event in stream:
            break
    assert held.done.is_set()  # by the response's close, not later
    _assert_released(held, sock, before)
    assert held.token.retired_by is None
    client.close()


@pytest.mark.timeout(90)
@pytest.mark.parametrize("api", APIS)
def test_the_clients_close_releases_an_abandoned_stream(fault_server, no_gc, api):
    _hang_after(fault_server)
    before, client, stream, (held, sock) = _opened(fault_server, api)
    next(iter(stream))
    client.close()
    assert held.done.is_set()  # by the client's close, not later
    _assert_released(held, sock, before)
    assert held.token.retired_by is None
    del stream


@pytest.mark.timeout(90)
@pytest.mark.parametrize("closes", ["ceiling", "client"])
def test_a_responses_stream_abandoned_on_its_inband_error_is_released(fault_server, no_gc, closes):
    """The agent-shaped case of issue 27: iterated without ``with``, the caller raises on
    ``response.failed`` and walks away; the body has ended on the wire but the SDK's
    generator never reads its end."""
    rule = {"fault": {"phase": "event:3", "action": "inband_error"}}
    fault_server.load(script_from_dict({"rules": [rule]}))
    before, client, stream, (held, sock) = _opened(fault_server, "responses")
    with pytest.raises(RuntimeError):
        for event in stream:
            if event.type == "response.failed":
                raise RuntimeError("the agent gives up on this turn")
    if closes == "client":
        client.close()
        assert held.done.is_set()
    _assert_released(held, sock, before)
    client.close()


# ------------------------------------------------------------------ async


async def _adone(held: Any) -> bool:
    return await asyncio.get_running_loop().run_in_executor(None, held.done.wait, WAIT_S)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("way", ["garbage", "exception", "break", "with-break", "client-close"])
def test_async_streams_are_released_however_abandoned(fault_server, no_gc, api, way):
    _hang_after(fault_server)

    async def run() -> tuple[Any, Any]:
        client = _client(api, "async", fault_server.base_url)
        stream = await _create(client, api)
        held, sock = _facts(stream)
        if way == "with-break":
            async with stream:
                async for _event in stream:
                    break
            assert held.done.is_set()
        elif way == "exception":
            with pytest.raises(RuntimeError):
                async for _event in stream:
                    raise RuntimeError("the caller's own error, mid-stream")
        else:
            async for _event in stream:
                break
        if way == "garbage":
            alive = weakref.ref(stream)
            del stream
        if way == "client-close":
            await client.close()
            assert held.done.is_set()
        assert await _adone(held)
        if way in ("exception", "break") or (way == "garbage" and alive() is not None):
            assert _by_ceiling(held)
        await client.close()
        return held, sock

    held, sock = asyncio.run(run())
    _assert_released(held, sock, set())


@pytest.mark.timeout(90)
def test_async_responses_stream_abandoned_on_its_inband_error_is_released(fault_server, no_gc):
    rule = {"fault": {"phase": "event:3", "action": "inband_error"}}
    fault_server.load(script_from_dict({"rules": [rule]}))

    async def run() -> tuple[Any, Any]:
        client = _client("responses", "async", fault_server.base_url)
        stream = await _create(client, "responses")
        held, sock = _facts(stream)
        with pytest.raises(RuntimeError):
            async for event in stream:
                if event.type == "response.failed":
                    raise RuntimeError("the agent gives up on this turn")
        assert await _adone(held)
        await client.close()
        return held, sock

    held, sock = asyncio.run(run())
    _assert_released(held, sock, set())
