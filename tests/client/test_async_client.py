"""AsyncReferenceClient: the same rows, enforced by cancel scopes instead of a thread."""

from __future__ import annotations

import asyncio

import pytest

from harness.client import AsyncReferenceClient, errors
from harness.faults import script_from_dict

from .support import FAST, USER, client_sockets

SETTINGS = FAST.replace(max_attempts=2)

ROWS = [
    ({"phase": "request", "action": "hang"}, errors.FirstByteTimeout, "chat", {}),
    ({"phase": "event:3", "action": "hang"}, errors.StreamIdleTimeout, "chat", {}),
    ({"phase": "event:3", "action": "drip", "interval_s": 0.05}, errors.StaleCall, "chat", {}),
    ({"phase": "event:3", "action": "rst"}, errors.PeerReset, "chat", {}),
    ({"phase": "event:3", "action": "fin"}, errors.PeerClosed, "chat", {}),
    (
        {"phase": "event:3", "action": "truncate"},
        errors.TruncatedStream,
        "chat",
        {"framing": "close"},
    ),
    (
        {"phase": "request", "action": "status", "code": 503, "retry_after_s": 0.05},
        errors.ProviderError,
        "chat",
        {},
    ),
    ({"phase": "event:5", "action": "hang"}, errors.StreamIdleTimeout, "responses", {}),
    ({"phase": "event:4", "action": "drip", "interval_s": 0.05}, errors.StaleCall, "messages", {}),
]


@pytest.mark.timeout(40)
@pytest.mark.parametrize(
    ("fault", "expected", "api", "script"),
    ROWS,
    ids=[f"{r[2]}-{r[0]['action']}@{r[0].get('phase')}" for r in ROWS],
)
def test_async_fault_raises_the_typed_error_then_recovers(
    fault_server, fault, expected, api, script
) -> None:
    port = int(fault_server.url.rsplit(":", 1)[1])

    async def main() -> None:
        client = AsyncReferenceClient(fault_server.base_url, settings=SETTINGS)
        fault_server.load(script_from_dict({**script, "rules": [{"fault": fault}]}))
        with pytest.raises(errors.HarnessError) as info:
            await client.complete(USER, api=api)
        err = info.value
        final = err.attempts[-1] if isinstance(err, errors.RetriesExhausted) else err
        assert isinstance(final, expected), repr(err)
        fault_server.load(script_from_dict(script or None))
        reply = await client.complete(USER, api=api)
        assert reply.text == fault_server.requests()[-1].expected_text
        assert "CLOSE_WAIT" not in [s.state for s in client_sockets(port)]
        await client.close()

    asyncio.run(main())
    assert client_sockets(port) == []


@pytest.mark.timeout(30)
def test_async_first_attempt_fault_is_retried_transparently_for_every_api(fault_server) -> None:
    async def main() -> None:
        async with AsyncReferenceClient(fault_server.base_url, settings=FAST) as client:
            for api in ("chat", "responses", "messages"):
                for stream in (True, False):
                    fault_server.load(
                        script_from_dict(
                            {
                                "rules": [
                                    {
                                        "match": {"attempts": [1]},
                                        # a stall on streams, a reset on plain calls
                                        "fault": {
                                            "phase": "request",
                                            "action": "hang" if stream else "rst",
                                        },
                                    }
                                ]
                            }
                        )
                    )
                    reply = await client.complete(USER, api=api, stream=stream)
                    assert reply.attempts == 2
                    assert reply.text == fault_server.requests()[-1].expected_text

    asyncio.run(main())


@pytest.mark.timeout(30)
def test_async_sequential_chats_with_rebuild_and_close_all_succeed(fault_server) -> None:
    async def main() -> None:
        client = AsyncReferenceClient(fault_server.base_url, settings=FAST)
        for step in ("chat", "rebuild", "chat", "close", "close", "chat", "rebuild", "chat"):
            if step == "chat":
                reply = await client.complete(USER)
                assert reply.text == fault_server.requests()[-1].expected_text
            else:
                await getattr(client, step)()
        await client.close()
        assert client.builds == 4

    asyncio.run(main())
