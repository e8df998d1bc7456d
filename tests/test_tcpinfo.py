"""harness.tcpinfo: the kernel's stamp of the last data a socket received, as monotonic time."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from harness.tcpinfo import TICK_S, layout, received_at

pytestmark = pytest.mark.timeout(20)


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        accepted, _ = listener.accept()
        with client, accepted:
            yield client, accepted


@pytest.mark.parametrize(
    ("platform", "known"),
    [("linux", True), ("darwin", False), ("win32", False), ("freebsd14", False)],
)
def test_only_a_platform_with_a_known_tcp_info_layout_reads_the_kernel(
    platform: str, known: bool
) -> None:
    assert (layout(platform) is not None) is known


def test_the_arrival_stays_when_the_data_was_sent_however_late_it_is_asked(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    client, accepted = pair
    before = time.monotonic()
    client.sendall(b"POST / HTTP/1.1\r\n\r\n")
    sent = time.monotonic()
    # the gap a busy server's loop leaves between arrival and reading (not a wait on
    # anything: it is the delay being measured)
    threading.Event().wait(0.2)
    asked = time.monotonic()
    arrived = received_at(accepted, now=asked)
    assert before - TICK_S <= arrived <= sent + TICK_S < asked


def test_without_the_kernels_stamp_the_answer_is_now(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    client, accepted = pair
    client.sendall(b"x")
    assert received_at(accepted, now=123.0, platform="darwin") == 123.0
    assert received_at(None, now=5.0) == 5.0
    accepted.close()  # a socket gone under the reader
    assert received_at(accepted, now=7.0) == 7.0
