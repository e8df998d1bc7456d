"""The sampler: one connection per socket in the order first seen, options kept from the
read that had them, asks coalesced and bounded, the final sample always taken."""

from __future__ import annotations

import threading

from harness.posture.facts import UNKNOWN, Keepalive, SocketPosture
from harness.posture.reader import Found, Reading
from harness.posture.sampler import PostureSampler, dial_port


def sock(source: str, state: str = "ESTABLISHED", enabled=True) -> SocketPosture:
    return SocketPosture(
        conn=0,
        pid=5,
        local="127.0.0.1:1",
        remote="127.0.0.1:2",
        source=source,
        keepalive=Keepalive(enabled=enabled, idle_s=9.0 if source == "getsockopt" else UNKNOWN),
        state=state,
    )


class Script:
    """A reader double that returns prepared readings in turn (the real reader is
    tested on real processes in test_reader.py)."""

    def __init__(self, *readings: Reading) -> None:
        self.readings = list(readings)
        self.calls = 0
        self.done = threading.Event()

    def __call__(self, pid: int, *, remote_ports) -> Reading:
        self.calls += 1
        reading = self.readings.pop(0) if self.readings else Reading()
        if not self.readings:
            self.done.set()
        return reading


def test_connections_are_numbered_in_order_and_keep_their_read_options():
    reader = Script(
        Reading(sockets=(Found(11, sock("getsockopt")),)),
        Reading(
            sockets=(Found(11, sock("proc", state="CLOSE_WAIT")), Found(12, sock("getsockopt")))
        ),
    )
    sampler = PostureSampler(5, dial_ports=[2], reader=reader)
    sampler.sample("request_read")
    sampler.sample("end")
    conns = sampler.result().connections
    assert [c.conn for c in conns] == [1, 2]
    first = conns[0]
    # the later read could only see the kernel's table: the options stay, the state moves on
    assert first.source == "getsockopt" and first.keepalive.idle_s == 9.0
    assert first.state == "CLOSE_WAIT" and first.sampled_at == ("request_read", "end")


def test_asks_from_another_thread_are_read_on_the_samplers_thread_and_bounded():
    reader = Script(*[Reading(sockets=(Found(i, sock("getsockopt")),)) for i in range(5)])
    sampler = PostureSampler(5, dial_ports=[2], reader=reader, max_samples=2).start()
    for _ in range(5):
        sampler.notify(1, "fault")
    posture = sampler.close()
    assert 1 <= reader.calls <= 2 and len(posture.connections) == reader.calls
    sampler.sample("end")  # the final sample is never cut by the bound
    assert reader.calls <= 3 and len(sampler.result().connections) == reader.calls


def test_unreadable_posture_keeps_the_reason():
    sampler = PostureSampler(5, dial_ports=[2], reader=Script(Reading(readable=False, reason="no")))
    sampler.sample("end")
    assert not sampler.result().readable and sampler.result().reason == "no"


def test_dial_port_of_a_base_url():
    assert dial_port("http://127.0.0.1:4321/v1") == 4321
    assert dial_port("https://example.invalid/v1") == 443
