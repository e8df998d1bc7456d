"""AsyncReferenceClient beyond the shared fault-row table (test_fault_rows.py runs every
row against both drivers): every API retried, rebuild and close in any order."""

from __future__ import annotations

import asyncio

import pytest

from harness.client import AsyncReferenceClient
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
