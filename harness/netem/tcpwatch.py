"""The client socket's TCP state, sampled from /proc for the dead-peer timeline.

:class:`TcpWatcher` samples a process's sockets from ``/proc/<pid>/net/tcp`` (the table
of the namespace it runs in) on a bounded schedule: state, keepalive/retransmit timer,
retransmissions, probes; a sample is kept only when one of them changed.

Not here: parsing /proc (``harness.tcpstate``) or the namespaces (``harness.netem.netns``).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from harness import tcpstate

__all__ = ["DEFAULT_SAMPLE_INTERVAL_S", "TcpSample", "TcpWatcher"]

DEFAULT_SAMPLE_INTERVAL_S = 0.1


@dataclass(frozen=True)
class TcpSample:
    """The client's TCP sockets to the server at ``t`` (empty: gone)."""

    t: float
    sockets: tuple[tcpstate.TcpSocket, ...]

    def describe(self) -> str:
        return "; ".join(s.describe() for s in self.sockets) or "gone"


class TcpWatcher:
    """Samples the TCP sockets of the network namespace of process ``pid`` that talk to
    ``remote_port`` (and, with ``local_port``, from that port: one connection in a
    namespace other processes share), every ``interval_s`` for at most ``max_samples``
    turns; records a sample only when state, timer kind, retransmissions or probes
    changed."""

    def __init__(
        self,
        pid: int,
        *,
        remote_port: int | None = None,
        local_port: int | None = None,
        interval_s: float = DEFAULT_SAMPLE_INTERVAL_S,
        max_samples: int = 600,
    ) -> None:
        self.pid = pid
        self.remote_port = remote_port
        self.local_port = local_port
        self.interval_s = interval_s
        self.max_samples = max_samples
        self._samples: list[TcpSample] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="tcp-watcher", daemon=True)
        self._last: tuple | None = None
        self._gone = threading.Event()  # the latest sample found no socket

    def __enter__(self) -> TcpWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def sample(self) -> TcpSample | None:
        """Sample now (also called on events); returns the sample if it was recorded."""
        try:
            ports = {p for p in (self.remote_port, self.local_port) if p} or None
            table = tcpstate.snapshot(netns_pid=self.pid, ports=ports)
        except tcpstate.TcpStateError:
            return None  # the process is gone
        socks = tuple(
            tcpstate.select(
                table, remote_port=self.remote_port or None, local_port=self.local_port or None
            )
        )
        key = tuple((s.local_port, s.state, s.timer, s.retransmits, s.probes) for s in socks)
        sample = None
        with self._lock:
            if key != self._last:
                self._last = key
                sample = TcpSample(time.monotonic(), socks)
                self._samples.append(sample)
        # After the append: a wait_gone() waiter then reads the "gone" sample among the
        # samples (set before it, the waiter could read the list first: CI, 2026-12-02).
        if socks:
            self._gone.clear()
        else:
            self._gone.set()
        return sample

    def wait_gone(self, timeout_s: float) -> bool:
        """Wait (sampling on the watcher's schedule) until a sample finds no socket; False
        if ``timeout_s`` passed first. A socket the kernel gave up on is reported to its
        reader (``sk_error_report``) before it leaves the table (``tcp_done``), so the
        first sample after the client's error can still list it."""
        return self._gone.wait(timeout_s)

    def samples(self) -> list[TcpSample]:
        with self._lock:
            return list(self._samples)

    def _run(self) -> None:
        for _ in range(self.max_samples):
            self.sample()
            if self._stop.wait(self.interval_s):  # the sampling schedule; stop() ends it
                return
