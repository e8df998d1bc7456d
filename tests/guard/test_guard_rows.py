"""The guard under the real SDKs (openai on httpx or httpx2, anthropic on httpx2), sync
and async, against the fault server over real sockets: each fault row ends as the
SDK's own error class with the reference stack's typed error as its cause, within the
deadline; a healthy call returns the full reply; one table, both faces."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import openai
import pytest

from harness import guard
from harness.client import ClientSettings, errors
from harness.faults import script_from_dict
from tests.fault_rows import GUARD_ROWS

# The hard ceiling spans the SDK's own retries (x-stainless-retry-count): 3 attempts of a
# 0.5 s first-byte deadline plus openai's 0.375-0.5 s and 0.75-1 s backoffs are 2.6-3.0 s,
# so a 3 s ceiling raced the third attempt's first-byte deadline (HardCeiling seen in CI).
FAST = ClientSettings(first_byte_s=0.5, stream_idle_s=0.3, stale_call_s=0.8, hard_ceiling_s=8.0)
USER = [{"role": "user", "content": "hi"}]
FACES = ("sync", "async")


def _sdk(api: str, face: str, base_url: str, settings: ClientSettings) -> Any:
    if api == "messages":
        make = guard.async_http_client if face == "async" else guard.http_client
        cls = anthropic.AsyncAnthropic if face == "async" else anthropic.Anthropic
        root = base_url.removesuffix("/v1")  # the Anthropic SDK adds /v1/messages itself
        return cls(base_url=root, api_key="k", http_client=make(anthropic, settings=settings))
    make = guard.async_http_client if face == "async" else guard.http_client
    cls = openai.AsyncOpenAI if face == "async" else openai.OpenAI
    return cls(base_url=base_url, api_key="k", http_client=make(openai, settings=settings))


async def _acall(client: Any, api: str) -> str:
    if api == "chat":
        stream = await client.chat.completions.create(model="m", messages=USER, stream=True)
        return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    if api == "responses":
        stream = await client.responses.create(model="m", input=USER, stream=True)
        return "".join([e.delta async for e in stream if e.type == "response.output_text.delta"])
    stream = await client.messages.create(model="m", messages=USER, max_tokens=64, stream=True)
    return "".join(
        [e.delta.text async for e in stream if e.type == "content_block_delta"]  # text only here
    )


def _call(client: Any, api: str, face: str) -> str:
    """One streamed call, consumed to its end the way a naive agent loop does."""
    if face == "async":

        async def run() -> str:
            try:
                return await _acall(client, api)
            finally:
                await client.close()

        return asyncio.run(run())
    try:
        if api == "chat":
            stream = client.chat.completions.create(model="m", messages=USER, stream=True)
            return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        if api == "responses":
            stream = client.responses.create(model="m", input=USER, stream=True)
            return "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        stream = client.messages.create(model="m", messages=USER, max_tokens=64, stream=True)
        return "".join(e.delta.text for e in stream if e.type == "content_block_delta")
    finally:
        client.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("row", GUARD_ROWS, ids=[r.name for r in GUARD_ROWS])
def test_fault_ends_as_the_sdks_own_error_with_the_typed_cause(fault_server, row, face) -> None:
    fault_server.load(script_from_dict({**row.script, "rules": [{"fault": row.fault}]}))
    with pytest.raises(Exception) as info:
        _call(_sdk(row.api, face, fault_server.base_url, FAST), row.api, face)
    err = info.value
    typed = guard.typed_cause(err)
    assert isinstance(typed, row.expected), repr(err)
    sdk_errors = (openai.APIError, anthropic.APIError)
    http_errors = (
        guard.library_of(openai).TransportError,
        guard.library_of(anthropic).TransportError,
    )
    # the SDK's own class, or the library's transport class (a bare error from a stream)
    assert isinstance(err, sdk_errors + http_errors), type(err).__mro__
    assert typed.elapsed_s is not None and typed.elapsed_s < FAST.hard_ceiling_s


@pytest.mark.timeout(60)
@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_a_healthy_stream_returns_the_full_reply(fault_server, api, face) -> None:
    relaxed = FAST.replace(
        first_byte_s=10.0, stream_idle_s=10.0, stale_call_s=10.0, hard_ceiling_s=20.0
    )
    text = _call(_sdk(api, face, fault_server.base_url, relaxed), api, face)
    assert text == fault_server.requests()[-1].expected_text


@pytest.mark.timeout(60)
@pytest.mark.parametrize("face", FACES)
def test_a_first_byte_stall_is_retried_by_the_sdk_and_then_succeeds(fault_server, face) -> None:
    """The guard raises a transport error the SDK retries on its own (its max_retries)."""
    rule = {"match": {"attempts": [1]}, "fault": {"phase": "request", "action": "hang"}}
    fault_server.load(script_from_dict({"rules": [rule]}))
    text = _call(_sdk("chat", face, fault_server.base_url, FAST), "chat", face)
    assert text == fault_server.requests()[-1].expected_text
    assert len(fault_server.requests()) == 2


@pytest.mark.timeout(60)
def test_a_retry_after_beyond_the_ceiling_is_raised_at_once_not_slept(fault_server) -> None:
    rule = {"fault": {"phase": "request", "action": "status", "code": 429, "retry_after_s": 30}}
    fault_server.load(script_from_dict({"rules": [rule]}))
    with pytest.raises(openai.RateLimitError):
        _call(_sdk("chat", "sync", fault_server.base_url, FAST), "chat", "sync")
    assert len(fault_server.requests()) == 1  # the SDK's own retry was switched off


#: (rule, hard ceiling): a fast 500 the SDK retries after its backoff (>= 0.375 s) past a
#: 0.2 s ceiling, and a stall the ceiling itself ends (then two backoffs)
CEILING_CASES = {
    "fast-500": ({"fault": {"phase": "request", "action": "status", "code": 500}}, 0.2),
    "stall": ({"fault": {"phase": "request", "action": "hang"}}, 0.6),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("case", CEILING_CASES)
def test_the_hard_ceiling_spans_the_sdks_retries_and_none_is_sent_past_it(
    fault_server, face, case
) -> None:
    """The call ends at its one ceiling (plus the SDK's own backoff), not one per attempt;
    the SDK's retries begin after the call has given up, so the guard refuses them before
    a byte goes out (on the pooled connection they would reach the server), and the error
    names the one attempt that was made."""
    rule, ceiling_s = CEILING_CASES[case]
    fault_server.load(script_from_dict({"rules": [rule]}))
    settings = FAST.replace(first_byte_s=None, stale_call_s=None, hard_ceiling_s=ceiling_s)
    with pytest.raises(openai.APITimeoutError) as info:
        _call(_sdk("chat", face, fault_server.base_url, settings), "chat", face)
    assert len(fault_server.requests()) == 1
    typed = guard.typed_cause(info.value)
    assert isinstance(typed, errors.HardCeiling) and typed.attempt == 1
    # measured from the first attempt's start, so past the SDK's two backoff waits
    # (>= 0.375 + 0.75 s; a per-request clock would have restarted at each attempt)
    assert typed.elapsed_s is not None and typed.elapsed_s >= max(ceiling_s, 1.1)
