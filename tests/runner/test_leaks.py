"""Leak snapshots read from /proc: descriptors, threads and sockets in CLOSE-WAIT."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from harness.leaks import Leaks, ProcessSnapshot, leaks_between, snapshot

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs Linux /proc")


def test_socket_closed_by_the_peer_shows_as_close_wait_and_one_more_descriptor():
    before = snapshot(os.getpid())
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    server_side, _ = listener.accept()
    server_side.close()  # FIN to the client: its socket goes to CLOSE-WAIT until it closes
    listener.close()
    try:
        deadline = time.monotonic() + 5
        after = snapshot(os.getpid())
        while after.count("CLOSE_WAIT") == 0 and time.monotonic() < deadline:
            after = snapshot(os.getpid())  # the FIN is processed by the kernel asynchronously
        leaks = leaks_between(before, after)
        assert leaks.close_wait == 1
        assert leaks.fds >= 1
        assert leaks.total >= 2
    finally:
        client.close()


def test_extra_thread_is_counted_until_it_ends():
    release = threading.Event()
    before = snapshot(os.getpid())
    worker = threading.Thread(target=release.wait, args=(10,))
    worker.start()
    try:
        assert leaks_between(before, snapshot(os.getpid())).threads == 1
    finally:
        release.set()
        worker.join()
    # join() returns when Python is done with the thread; the kernel task may linger a
    # moment longer, which is why the runner re-reads before calling something a leak.
    deadline = time.monotonic() + 5
    while leaks_between(before, snapshot(os.getpid())).threads and time.monotonic() < deadline:
        time.sleep(0.001)
    assert leaks_between(before, snapshot(os.getpid())).threads == 0


def test_unknown_or_gone_process_gives_none():
    assert snapshot(2**22 + 12345) is None
    assert leaks_between(None, ProcessSnapshot(1, 1, ())) is None


def test_leaks_render_zero_or_the_nonzero_parts():
    assert str(Leaks(0, 0, 0, 0)) == "0"
    assert str(Leaks(fds=1, threads=0, close_wait=1, established=0)) == "fds=1 close_wait=1"
