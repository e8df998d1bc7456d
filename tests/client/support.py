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


class Driver:
    """One face of the reference client behind a sync interface, so one fault-row table
    runs against both drivers: ``sync`` is :class:`ReferenceClient`, ``async`` an
    :class:`AsyncReferenceClient` on its own event loop (``asyncio.Runner``)."""

    def __init__(self, kind: str, base_url: str, settings: ClientSettings) -> None:
        import asyncio

        from harness.client import AsyncReferenceClient, ReferenceClient

        self.kind = kind
        self._runner = asyncio.Runner() if kind == "async" else None
        cls = AsyncReferenceClient if kind == "async" else ReferenceClient
        self.client = cls(base_url, settings=settings)

    def _run(self, value: object) -> object:
        return self._runner.run(value) if self._runner is not None else value  # type: ignore[arg-type]

    def complete(self, messages: object, **kwargs: object) -> object:
        return self._run(self.client.complete(messages, **kwargs))

    def close(self) -> None:
        self._run(self.client.close())
        if self._runner is not None:
            self._runner.close()

    @property
    def builds(self) -> int:
        return self.client.builds


DRIVERS = ("sync", "async")
