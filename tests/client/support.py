"""Helpers shared by the client tests: fast settings, a /proc leak probe."""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass

from harness.client import ClientSettings

#: Tenths of seconds: every deadline fires fast, retries wait almost nothing. First byte
#: gets 0.5 s: a loaded machine (xdist, six helpers on two cores) can be slow to answer.
FAST = ClientSettings(
    first_byte_s=0.5,
    stream_idle_s=0.3,
    stale_call_s=0.6,
    hard_ceiling_s=4.0,
    connect_timeout_s=2.0,
    read_timeout_s=10.0,
    backoff_initial_s=0.01,
    backoff_max_s=0.02,
    retry_after_max_s=0.2,
)

USER = [{"role": "user", "content": "hi"}]


@dataclass(frozen=True)
class Probe:
    fds: int
    threads: frozenset[str]


def probe() -> Probe:
    return Probe(len(os.listdir("/proc/self/fd")), frozenset(t.name for t in threading.enumerate()))


def client_sockets(server_port: int) -> list[object]:
    """This process's TCP sockets whose remote end is the fault server (the client legs)."""
    if sys.platform != "linux":
        return []
    from harness import tcpstate

    return tcpstate.select(tcpstate.sockets_of_pid(os.getpid()), remote_port=server_port)
