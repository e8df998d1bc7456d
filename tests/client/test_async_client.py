"""AsyncReferenceClient beyond the shared fault-row table (test_fault_rows.py runs every
row against both drivers): every API retried, rebuild and close in any order."""

from __future__ import annotations

import asyncio

import pytest

from harness.client import AsyncReferenceClient
from harness.client.errors import RetriesExhausted
from harness.faults import script_from_dict

from .support import FAST, USER


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


@pytest.mark.timeout(30)
def test_async_calls_on_one_client_run_one_at_a_time(fault_server) -> None:
    fault_server.load(script_from_dict({"events": 4, "event_interval_s": 0.02}))

    async def main() -> None:
        async with AsyncReferenceClient(fault_server.base_url, settings=FAST) as client:
            replies = await asyncio.gather(*(client.complete(USER) for _ in range(3)))
        assert [r.attempts for r in replies] == [1, 1, 1]

    asyncio.run(main())
    # the server records a response as done after its last write, which the client may
    # read first: wait for the third record rather than reading the timeline at once
    fault_server.wait_for("response_done", timeout=10, count=3)
    timeline = fault_server.timeline()
    read = sorted(e.t for e in timeline if e.kind == "request_read")
    done = sorted(e.t for e in timeline if e.kind == "response_done")
    assert len(read) == len(done) == 3
    # each request is read only after the one before it was answered: never two at once
    assert all(done[i] <= read[i + 1] for i in range(2)), (read, done)


@pytest.mark.timeout(30)
def test_close_cuts_a_calls_wait_between_attempts_short(fault_server) -> None:
    fault_server.load(
        script_from_dict(
            {"rules": [{"fault": {"phase": "request", "action": "status", "code": 503}}]}
        )
    )
    # 10..20 s between attempts (jitter): far longer than the call may take once closed
    waits = FAST.replace(backoff_initial_s=20.0, backoff_max_s=20.0, hard_ceiling_s=60.0)

    async def main() -> None:
        client = AsyncReferenceClient(fault_server.base_url, settings=waits)
        call = asyncio.create_task(client.complete(USER))
        await asyncio.to_thread(fault_server.wait_for, "request_read", timeout=10.0)
        await client.close()  # the call is in its first attempt or already waiting
        with pytest.raises(RetriesExhausted, match="the wait was cut short"):
            await asyncio.wait_for(call, 5.0)
        assert len(fault_server.requests()) == 1

    asyncio.run(main())
