"""Connection: a peer that is gone stops the server's writes at once, quietly."""

from __future__ import annotations

import asyncio
import logging
import socket
import struct

import pytest

from harness.server.connection import Connection, PeerGone

pytestmark = pytest.mark.timeout(20)


def test_writes_after_a_reset_peer_stop_with_peer_gone_and_no_asyncio_warnings(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="asyncio")

    async def scenario() -> tuple[list[str], list[str]]:
        loop = asyncio.get_running_loop()
        made: asyncio.Future[Connection] = loop.create_future()
        kinds: list[str] = []
        server = await loop.create_server(
            lambda: Connection(made.set_result, lambda kind, **_: kinds.append(kind)),
            "127.0.0.1",
            0,
        )
        client = socket.create_connection(server.sockets[0].getsockname()[:2])
        try:
            conn = await asyncio.wait_for(made, 10)
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        finally:
            client.close()  # RST: the server's next send fails
        # a drip catching up writes many units in one turn of the loop
        outcomes = []
        for _ in range(20):
            try:
                conn.write(b": keepalive\n\n")
            except PeerGone:
                outcomes.append("gone")
            else:
                outcomes.append("written")
        server.close()
        await server.wait_closed()
        return outcomes, kinds

    outcomes, kinds = asyncio.run(scenario())
    assert outcomes.count("written") <= 1  # only the send that found out
    assert outcomes[-1] == "gone"
    assert kinds.count("write_stopped") == 1
    assert not [r for r in caplog.records if "socket.send() raised" in r.getMessage()]


def test_write_on_a_closing_transport_is_refused_and_recorded_once() -> None:
    class ClosingTransport(asyncio.Transport):
        def __init__(self) -> None:
            super().__init__()
            self.written: list[bytes] = []

        def is_closing(self) -> bool:
            return True

        def write(self, data: bytes) -> None:  # type: ignore[override]
            self.written.append(bytes(data))

        def get_extra_info(self, name: str, default: object = None) -> object:
            return default

    async def scenario() -> tuple[list[bytes], list[str]]:
        kinds: list[str] = []
        conn = Connection(lambda c: None, lambda kind, **_: kinds.append(kind))
        transport = ClosingTransport()
        conn.connection_made(transport)
        for _ in range(3):
            with pytest.raises(PeerGone, match="closing"):
                conn.write(b"data")
        return transport.written, kinds

    written, kinds = asyncio.run(scenario())
    assert written == [] and kinds == ["write_stopped"]
