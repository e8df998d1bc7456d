"""A request's start is when it reached the kernel, not when a busy loop read it.

The judge counts a request that started after the client's call returned as a late one
(``no_late_requests``). On a loaded machine the server's loop can read a request long
after the client sent it: the client's deadline may fire in between, and a request sent
before the call gave up must not count as sent after it. Here the loop is held (a
callback blocks it) while the client sends; the record still carries the send time.
"""

from __future__ import annotations

import threading
import time

import pytest

from harness.server import FaultServer
from harness.tcpinfo import TICK_S
from tests.server.rawhttp import read_until, send

pytestmark = pytest.mark.timeout(30)


def test_a_request_read_late_by_a_held_loop_starts_when_it_was_sent(server: FaultServer) -> None:
    holding, release = threading.Event(), threading.Event()

    def hold_the_loop() -> None:
        holding.set()
        release.wait(10)

    loop = server._loop_thread.loop  # the server's own loop: held like a busy one
    assert loop is not None
    loop.call_soon_threadsafe(hold_the_loop)
    assert holding.wait(10)
    before = time.monotonic()
    sock = send(server.port)
    sent = time.monotonic()
    # the client's call gives up while the loop has not read the request yet (the gap
    # is the delay under test, not a wait on anything)
    threading.Event().wait(0.2)
    returned = time.monotonic()
    release.set()
    with sock:
        reply = read_until(sock, 10, complete=True)
    assert reply.status == 200
    (record,) = server.requests()
    assert before - TICK_S <= record.t_start <= sent + TICK_S < returned
    # the loop did read it late: the head's timeline event is after the return
    head = next(e for e in server.timeline() if e.kind == "request_head")
    assert head.t > returned
