"""Connection write coalescing: a burst written in one step reaches the peer as the same
bytes in one transport write; a write after a wait goes to the transport at once."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

import pytest

from harness.server.connection import COALESCE_BYTES, Connection

pytestmark = pytest.mark.timeout(20)


async def _connected() -> tuple[Any, Connection, socket.socket, list[int]]:
    """A server-side Connection and its client socket; counts the transport's writes."""
    loop = asyncio.get_running_loop()
    made: asyncio.Future[Connection] = loop.create_future()
    server = await loop.create_server(
        lambda: Connection(made.set_result, lambda kind, **_: None), "127.0.0.1", 0
    )
    client = socket.create_connection(server.sockets[0].getsockname()[:2])
    client.settimeout(10)
    conn = await asyncio.wait_for(made, 10)
    writes: list[int] = []
    real: Callable[[bytes], None] = conn.transport.write  # type: ignore[union-attr]

    def counting(data: bytes) -> None:
        writes.append(len(data))
        real(data)

    conn.transport.write = counting  # type: ignore[method-assign,union-attr]
    return server, conn, client, writes


def _read_exactly(client: socket.socket, n: int) -> bytes:
    got = b""
    while len(got) < n:
        chunk = client.recv(65536)
        if not chunk:
            break
        got += chunk
    return got


def test_a_burst_in_one_step_is_one_transport_write_after_the_first_with_the_same_bytes() -> None:
    units = [b"data: {%d}\n\n" % i for i in range(50)]

    async def scenario() -> tuple[list[int], list[int], bytes]:
        server, conn, client, writes = await _connected()
        for unit in units:
            conn.write(unit)
        during = list(writes)  # still inside the step: only the first went out
        await conn.drain()
        data = await asyncio.to_thread(_read_exactly, client, sum(map(len, units)))
        client.close()
        conn.close()
        server.close()
        await server.wait_closed()
        return during, writes, data

    during, writes, data = asyncio.run(scenario())
    assert during == [len(units[0])]
    assert writes == [len(units[0]), sum(map(len, units[1:]))]
    assert data == b"".join(units)


def test_a_write_after_a_wait_goes_out_at_once_and_pending_bytes_never_fall_behind() -> None:
    async def scenario() -> tuple[list[int], list[int], bytes]:
        server, conn, client, writes = await _connected()
        conn.write(b"a")  # fresh: at once
        conn.write(b"b")  # coalesced
        loop = asyncio.get_running_loop()
        assert await conn.sleep_until(loop.time() + 0.01)  # pushes "b" before waiting
        after_wait = list(writes)
        conn.write(b"c")  # the writer resumed: at once again
        at_once = list(writes)
        data = await asyncio.to_thread(_read_exactly, client, 3)
        client.close()
        conn.close()
        server.close()
        await server.wait_closed()
        return after_wait, at_once, data

    after_wait, at_once, data = asyncio.run(scenario())
    assert after_wait == [1, 1] and at_once == [1, 1, 1]
    assert data == b"abc"


def test_a_long_burst_is_handed_over_every_coalesce_bytes_so_back_pressure_applies() -> None:
    unit = b"x" * 1000
    count = 3 * COALESCE_BYTES // len(unit)

    async def scenario() -> list[int]:
        server, conn, client, writes = await _connected()
        for _ in range(count):
            conn.write(unit)
        during = list(writes)
        reader = asyncio.create_task(asyncio.to_thread(_read_exactly, client, count * len(unit)))
        await conn.drain()
        assert await reader == unit * count
        client.close()
        conn.close()
        server.close()
        await server.wait_closed()
        return during

    during = asyncio.run(scenario())
    assert len(during) >= 3 and all(n <= COALESCE_BYTES + len(unit) for n in during)
