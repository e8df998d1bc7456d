"""Every failure row of DESIGN.md's table against the fault server over real sockets:
the expected typed error (or a transparent retry), never a hang, never partial text as
success; then the next call on the same client succeeds and nothing leaks."""

from __future__ import annotations

import asyncio
import email.utils
import sys
import threading
import time
from typing import Any

import pytest

from harness.client import ClientSettings, ReferenceClient, errors
from harness.client.clock import FakeClock
from harness.faults import script_from_dict
from harness.relay import Relay
from harness.tcpinfo import TICK_S
from tests.fault_rows import ROWS, Row

from .support import DRIVERS, FAST, USER, Driver, client_sockets, probe

ROW_SETTINGS = FAST.replace(max_attempts=2)


def _settings(row: Row) -> ClientSettings:
    return ROW_SETTINGS.replace(**row.settings)


def _script(row: Row, *, attempts: list[int] | None = None) -> Any:
    match = {"attempts": attempts} if attempts else {}
    return script_from_dict({**row.script, "rules": [{"match": match, "fault": row.fault}]})


def _final(err: errors.HarnessError) -> errors.HarnessError:
    return err.attempts[-1] if isinstance(err, errors.RetriesExhausted) else err


def _assert_clean(client: ReferenceClient | Driver, port: int) -> None:
    states = [s.state for s in client_sockets(port)]
    assert "CLOSE_WAIT" not in states
    client.close()
    assert client_sockets(port) == []  # every client leg closed: no fd left behind
    assert not [t for t in threading.enumerate() if t.name == "harness-watchdog"]


def _signature(err: errors.HarnessError) -> tuple[Any, ...]:
    """What must not differ between the two drivers for one fault row."""
    attempts = (
        [type(a).__name__ for a in err.attempts] if isinstance(err, errors.RetriesExhausted) else []
    )
    return type(err).__name__, type(_final(err)).__name__, attempts, _final(err).deadline


@pytest.mark.timeout(80)
@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_fault_on_every_attempt_raises_the_same_typed_error_from_both_drivers_then_they_recover(
    fault_server, row: Row
) -> None:
    """The drift test: one table, both drivers; the error, the attempts, the deadline
    and how many SDK clients were built (the discard rule) must all agree."""
    port = int(fault_server.url.rsplit(":", 1)[1])
    seen: dict[str, tuple[Any, ...]] = {}
    for kind in DRIVERS:
        client = Driver(kind, fault_server.base_url, _settings(row))
        fault_server.load(_script(row))
        with pytest.raises(errors.HarnessError) as info:
            client.complete(USER, api=row.api, stream=row.stream)
        err = info.value
        assert isinstance(_final(err), row.expected), f"{kind}: {err!r}"
        # How late a deadline ends the call is `harness bench watchdog`'s figure, not a bound here.
        assert err.elapsed_s is not None
        if isinstance(err, errors.RetriesExhausted):
            assert [a.attempt for a in err.attempts] == [1, 2]
        fault_server.load(script_from_dict(row.script or None))
        reply = client.complete(USER, api=row.api, stream=row.stream)
        assert reply.text == fault_server.requests()[-1].expected_text
        seen[kind] = (*_signature(err), client.builds)
        _assert_clean(client, port)
    assert seen["sync"] == seen["async"]


TRANSIENT = [r for r in ROWS if not r.name.startswith("comment drip, comments")]


@pytest.mark.timeout(40)
@pytest.mark.parametrize("kind", DRIVERS)
@pytest.mark.parametrize("row", TRANSIENT, ids=[r.name for r in TRANSIENT])
def test_fault_on_the_first_attempt_only_is_retried_transparently(
    fault_server, row: Row, kind: str
) -> None:
    port = int(fault_server.url.rsplit(":", 1)[1])
    client = Driver(kind, fault_server.base_url, _settings(row))
    fault_server.load(_script(row, attempts=[1]))
    reply = client.complete(USER, api=row.api, stream=row.stream)
    assert reply.attempts == 2
    assert reply.text == fault_server.requests()[-1].expected_text
    _assert_clean(client, port)


def test_html_error_page_surfaces_the_providers_visible_text(fault_server) -> None:
    fault_server.load(_script(ROWS[14]))
    with ReferenceClient(fault_server.base_url, settings=ROW_SETTINGS) as client:
        with pytest.raises(errors.RetriesExhausted) as info:
            client.complete(USER)
    last = info.value.attempts[-1]
    assert isinstance(last, errors.ProviderError) and last.status == 502
    assert last.provider_message == "Bad gateway"


def test_non_retryable_status_is_raised_at_once(fault_server) -> None:
    fault_server.load(
        script_from_dict(
            {
                "rules": [
                    {
                        "fault": {
                            "phase": "request",
                            "action": "status",
                            "code": 400,
                            "message": "bad",
                        }
                    }
                ]
            }
        )
    )
    with ReferenceClient(fault_server.base_url, settings=FAST) as client:
        with pytest.raises(errors.ProviderError) as info:
            client.complete(USER)
    assert (info.value.status, info.value.attempt, info.value.provider_message) == (400, 1, "bad")
    assert len(fault_server.requests()) == 1


@pytest.mark.timeout(30)
def test_stale_pooled_connection_is_retried_transparently(fault_server) -> None:
    with ReferenceClient(fault_server.base_url, settings=FAST) as client:
        client.complete(USER)
        fault_server.load(
            script_from_dict(
                {
                    "rules": [
                        {
                            "match": {"request_on_connection": [2]},
                            "fault": {"phase": "idle", "action": "fin"},
                        }
                    ]
                }
            )
        )
        reply = client.complete(USER)
        assert reply.text == fault_server.requests()[-1].expected_text
        assert reply.attempts in (1, 2)  # 1 when httpx noticed the close before reuse


@pytest.mark.timeout(30)
def test_retired_attempts_late_deltas_are_dropped_and_never_mixed_into_the_answer(
    fault_server,
) -> None:
    fault_server.load(
        script_from_dict(
            {
                "rules": [
                    {
                        "match": {"attempts": [1]},
                        "fault": {"phase": "event:3", "action": "slow", "delay_s": 1.0},
                    }
                ]
            }
        )
    )
    deltas: list[str] = []
    with ReferenceClient(fault_server.base_url, settings=FAST) as client:
        reply = client.complete(USER, on_delta=deltas.append)
    expected = fault_server.requests()[-1].expected_text
    assert reply.text == expected and reply.attempts == 2
    # attempt 1 delivered its first two deltas, then was retired: nothing more from it
    assert "".join(deltas[2:]) == expected
    assert expected.startswith("".join(deltas[:2]))


@pytest.mark.timeout(30)
def test_middlebox_swallowing_the_close_is_ended_by_a_deadline(fault_server) -> None:
    """The CLOSE-WAIT hang's real shape: the provider's FIN stops at a proxy, whose client
    leg stays open and silent. Keepalive cannot see it; the idle deadline does."""
    port = int(fault_server.url.rsplit(":", 1)[1])
    fault_server.load(
        script_from_dict(
            {
                "rules": [
                    {"match": {"attempts": [1]}, "fault": {"phase": "event:3", "action": "fin"}}
                ]
            }
        )
    )
    with Relay(upstream=("127.0.0.1", port), mode="swallow_close") as relay:
        client = ReferenceClient(relay.base_url, settings=FAST)
        reply = client.complete(USER)
        assert reply.attempts == 2
        assert reply.text == fault_server.requests()[-1].expected_text
        relay.wait_for("swallowed", timeout=5)
        _assert_clean(client, relay.port)


def test_a_retry_after_longer_than_the_remaining_ceiling_is_not_waited_out(fault_server) -> None:
    fault_server.load(
        script_from_dict(
            {
                "rules": [
                    {
                        "fault": {
                            "phase": "request",
                            "action": "status",
                            "code": 429,
                            "retry_after_s": 30,
                        }
                    }
                ]
            }
        )
    )
    settings = FAST.replace(hard_ceiling_s=1.0, retry_after_max_s=60.0)
    # On a clock that moves only when told, waiting out the Retry-After would never end.
    clock = FakeClock()
    with ReferenceClient(fault_server.base_url, settings=settings, clock=clock) as client:
        with pytest.raises(errors.RetriesExhausted, match="cross the hard ceiling") as info:
            client.complete(USER)
    assert info.value.elapsed_s == 0.0
    assert len(info.value.attempts) == 1 and info.value.attempts[0].retry_after_s == 30.0


@pytest.mark.timeout(60)
def test_no_descriptor_or_thread_is_left_behind_after_many_faults(fault_server) -> None:
    rows = [r for r in ROWS if not r.script and r.api == "chat" and r.stream][:10]
    # one script, so the server's timeline keeps every connection: fault on odd attempts
    rules = [{"match": {"attempts": [2 * i + 1]}, "fault": r.fault} for i, r in enumerate(rows)]
    fault_server.load(script_from_dict({"rules": rules}))
    before = probe()
    client = ReferenceClient(fault_server.base_url, settings=ROW_SETTINGS)
    for _ in rows:
        assert client.complete(USER).attempts == 2
    client.close()
    connections = {r.connection for r in fault_server.requests()}
    fault_server.wait_for("closed", timeout=10, count=len(connections))  # server legs gone too
    fault_server.settle()  # asyncio releases a closed socket's descriptor a loop turn later
    after = probe()
    # the fault server's event loop may start its default-executor threads meanwhile
    assert {t for t in after.threads if not t.startswith("asyncio_")} == {
        t for t in before.threads if not t.startswith("asyncio_")
    }
    assert after.fds == before.fds


@pytest.mark.timeout(30)
def test_large_prompt_skips_first_byte_but_the_hard_ceiling_still_reclaims_a_silent_stall(
    fault_server,
) -> None:
    """The seed's #64507: TTFB is off for a ~11k-token prompt; a request that never gets a
    byte must still end at the hard ceiling, not hang."""
    fault_server.load(
        script_from_dict({"rules": [{"fault": {"phase": "request", "action": "hang"}}]})
    )
    settings = FAST.replace(first_byte_s=0.2, stale_call_s=None, hard_ceiling_s=1.0)
    with ReferenceClient(fault_server.base_url, settings=settings) as client:
        with pytest.raises(errors.HardCeiling) as info:
            client.complete([{"role": "user", "content": "x" * 44_000}])
    assert info.value.deadline == "hard_ceiling_s" and info.value.attempt == 1


@pytest.mark.timeout(30)
def test_upload_stall_blocks_the_sender_and_a_deadline_still_ends_it(fault_server) -> None:
    """stall_upload: the server stops reading the body, so the client blocks in send, not
    recv; shutdown wakes a blocked send too."""
    fault_server.load(
        script_from_dict(
            {
                "rules": [
                    {
                        "match": {"attempts": [1]},
                        "fault": {"action": "stall_upload", "after_bytes": 1000},
                    }
                ]
            }
        )
    )
    big = [{"role": "user", "content": "y" * 6_000_000}]  # more than both socket buffers hold
    # The retry uploads and the server parses 6 MB before any content: on a loaded
    # machine that alone took over 1.5 s, so the stale deadline leaves room for it.
    settings = FAST.replace(first_byte_s=None, stale_call_s=3.0, hard_ceiling_s=12.0)
    with ReferenceClient(fault_server.base_url, settings=settings) as client:
        reply = client.complete(big)
    # What is under test: the stalled first upload is ended by a deadline and the call
    # completes. The retry uploads the same 6 MB under the same stale deadline, and on a
    # loaded machine it can be cut too (a fresh-clone CI run, 2026-12-02: 3 attempts);
    # the count of retries is not this test's claim.
    assert reply.attempts >= 2
    assert reply.text == fault_server.requests()[-1].expected_text


DEAD_PEER = FAST.replace(
    first_byte_s=None,
    stream_idle_s=None,
    stale_call_s=None,
    hard_ceiling_s=10.0,
    tcp_user_timeout_s=0.5,
    max_attempts=1,
)
STALLED_UPLOAD = {"rules": [{"fault": {"action": "stall_upload", "after_bytes": 1000}}]}


@pytest.mark.skipif(sys.platform != "linux", reason="TCP_USER_TIMEOUT is Linux's")
@pytest.mark.timeout(30)
def test_kernel_etimedout_from_tcp_user_timeout_is_dead_peer_sync(fault_server) -> None:
    """A real kernel verdict, no namespace needed: the server stops reading, the window
    closes, zero-window probes go unanswered in time, TCP_USER_TIMEOUT aborts with
    ETIMEDOUT. Sync httpx calls that a WriteTimeout; the errno makes it DeadPeer."""
    fault_server.load(script_from_dict(STALLED_UPLOAD))
    with ReferenceClient(fault_server.base_url, settings=DEAD_PEER) as client:
        with pytest.raises(errors.DeadPeer) as info:
            client.complete([{"role": "user", "content": "y" * 6_000_000}])
    assert info.value.deadline is None  # the kernel ended it, not one of our deadlines


@pytest.mark.skipif(sys.platform != "linux", reason="TCP_USER_TIMEOUT is Linux's")
@pytest.mark.timeout(30)
def test_kernel_etimedout_from_tcp_user_timeout_is_dead_peer_async(fault_server) -> None:
    from harness.client import AsyncReferenceClient

    fault_server.load(script_from_dict(STALLED_UPLOAD))

    async def main() -> None:
        async with AsyncReferenceClient(fault_server.base_url, settings=DEAD_PEER) as client:
            with pytest.raises(errors.DeadPeer):
                await client.complete([{"role": "user", "content": "y" * 6_000_000}])

    asyncio.run(main())


@pytest.mark.timeout(30)
def test_an_idle_deadline_alone_ends_a_stall_long_before_the_read_timeout(fault_server) -> None:
    """Regression: the first activity must wake the watchdog to arm the idle deadline,
    even when no other deadline is armed (it used to wait for httpx's read timeout)."""
    fault_server.load(
        script_from_dict({"rules": [{"fault": {"phase": "event:3", "action": "hang"}}]})
    )
    only_idle = FAST.replace(
        first_byte_s=None,
        stale_call_s=None,
        hard_ceiling_s=None,
        read_timeout_s=20.0,
        max_attempts=1,
    )
    with ReferenceClient(fault_server.base_url, settings=only_idle) as client:
        with pytest.raises(errors.StreamIdleTimeout) as info:
            client.complete(USER)
    assert info.value.deadline == "stream_idle_s"
    # httpx's read timeout would say deadline="read_timeout_s": the idle deadline came first.
    assert info.value.elapsed_s is not None


@pytest.mark.timeout(30)
@pytest.mark.parametrize("form", ["seconds", "http-date"])
def test_retry_after_is_honoured_between_attempts(fault_server, form: str) -> None:
    """The wait before attempt 2 is at least the provider's Retry-After (capped by
    retry_after_max_s); plain backoff here would be ~10 ms."""
    if form == "seconds":
        status = {"retry_after_s": 1}  # the server sends whole seconds; capped to 0.4 below
    else:  # an HTTP date far ahead: honoured, but capped at retry_after_max_s
        status = {"retry_after": email.utils.formatdate(time.time() + 60, usegmt=True)}
    rule = {
        "match": {"attempts": [1]},
        "fault": {"phase": "request", "action": "status", "code": 429, **status},
    }
    fault_server.load(script_from_dict({"rules": [rule]}))
    settings = FAST.replace(retry_after_max_s=0.4)
    with ReferenceClient(fault_server.base_url, settings=settings) as client:
        reply = client.complete(USER)
    first, second = fault_server.requests()
    assert reply.attempts == 2
    # each start is the kernel's arrival stamp, a tick coarse either way
    assert second.t_start - first.t_start >= 0.4 - 2 * TICK_S
