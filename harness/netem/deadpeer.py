"""The dead-peer measurement the tests and ``harness bench netem`` share.

:func:`run_dead_peer`: one client (``harness.netem.probe``, in namespace B) against the
netem SSE stub (in namespace A, in this process), the path cut at a scripted point, the
outcome (detected / hung / returned / early) with the detection time after the cut and
the client socket's TCP states on one timeline.

Not here: the namespaces (``harness.netem.netns``), the settings
(``harness.faults.network.kernel``), the probe client itself (``harness.netem.probe``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.faults.network.kernel import KernelSettings
from harness.faults.network.trigger import Trigger
from harness.netem.netns import DEFAULT_SERVER_IP, KernelNetemError, NetnsPair
from harness.netem.tcpwatch import DEFAULT_SAMPLE_INTERVAL_S, TcpSample, TcpWatcher

__all__ = ["DEFAULT_CEILING_S", "DeadPeerResult", "run_dead_peer"]

DEFAULT_CEILING_S = 10.0
#: How long a client's socket may stay listed after the client reported the kernel's
#: error (``TcpWatcher.wait_gone``): microseconds normally; a bound, not a sleep.
GONE_WAIT_S = 2.0


@dataclass(frozen=True)
class DeadPeerResult:
    """One dead-peer run. ``outcome``: ``detected`` (the client raised after the cut),
    ``hung`` (still waiting at the ceiling; killed), ``returned`` (it returned: wrong),
    ``early`` (it raised before the cut). ``detect_s`` is the client's error time minus
    the cut time."""

    settings: KernelSettings
    outcome: str
    cut_t: float | None
    detect_s: float | None
    ceiling_s: float
    error: str | None = None
    errno: int | None = None
    strerror: str | None = None
    samples: tuple[TcpSample, ...] = ()
    server_events: tuple[Mapping[str, Any], ...] = field(default=(), compare=False)
    client_events: tuple[Mapping[str, Any], ...] = field(default=(), compare=False)

    @property
    def expected_s(self) -> float | None:
        return self.settings.expected_detection_s

    def timeline(self) -> list[tuple[float, str, str]]:
        """``(t, source, text)`` rows on one time axis: server, client, kernel (the client
        socket's TCP state), cut."""
        rows = [(e["t"], "server", _fmt(e, "kind")) for e in self.server_events]
        rows += [
            (e["t"], "client", _fmt(e, "event"))
            for e in self.client_events
            if e.get("event") != "sse" or e.get("n") == 1
        ]
        rows += [(s.t, "kernel", s.describe()) for s in self.samples]
        if self.cut_t is not None:
            rows.append((self.cut_t, "netem", "link down (no FIN, no RST)"))
        return sorted(rows)


def run_dead_peer(
    settings: KernelSettings | None = None,
    *,
    ceiling_s: float = DEFAULT_CEILING_S,
    read_timeout_s: float | None = None,
    python: str = sys.executable,
    sample_interval_s: float = DEFAULT_SAMPLE_INTERVAL_S,
) -> DeadPeerResult:
    """Start a namespace pair, the netem SSE stub in A (in this process), the probe client
    in B; cut the link at ``settings.cut_at`` (shape ``waiting``) or once request 1 is
    done (shape ``in_flight``, then the client sends request 2); wait up to
    ``ceiling_s`` after the cut for the client's result."""
    from harness.netem.sse_stub import StubServer, StubSettings

    s = settings or KernelSettings()
    first_done = 1 if s.shape == "in_flight" else 0
    stub = StubServer(
        StubSettings(events=s.events, after="hang", first_done=first_done), host=DEFAULT_SERVER_IP
    )
    argv = [python, "-m", "harness.netem.probe", "--shape", s.shape]
    if s.keepalive is not None:
        argv += ["--keepalive", ",".join(str(v) for v in s.keepalive.as_tuple())]
    if s.user_timeout_s is not None:
        argv += ["--user-timeout-s", str(s.user_timeout_s)]
    if read_timeout_s is not None:
        argv += ["--read-timeout-s", str(read_timeout_s)]
    with NetnsPair() as pair, pair.enter("server", stub) as server:
        argv += ["--url", f"http://{pair.server_ip}:{server.port}"]
        proc = pair.popen(
            "client", argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        lines = _JsonLines(proc)
        try:
            ready = lines.wait_for(lambda e: e.get("event") == "ready", timeout=30)
            if ready is None:
                raise KernelNetemError(f"probe client did not start: {lines.stderr_tail()}")
            with TcpWatcher(
                proc.pid, remote_port=server.port, interval_s=sample_interval_s
            ) as watcher:
                if s.shape == "in_flight":
                    if (
                        lines.wait_for(
                            lambda e: e.get("event") in ("waiting_for_go", "result"), timeout=30
                        )
                        is None
                    ):
                        raise KernelNetemError(
                            f"probe client never finished request 1: {lines.stderr_tail()}"
                        )
                    cut_t = pair.cut()
                    watcher.sample()
                    assert proc.stdin is not None
                    proc.stdin.write(b"go\n")
                    proc.stdin.flush()
                else:
                    _wait_trigger(s.cut_at, server, lines)
                    cut_t = pair.cut()
                    watcher.sample()
                result = lines.wait_for(lambda e: e.get("event") == "result", timeout=ceiling_s)
                watcher.sample()
                if result is not None and result.get("status") == "raised":
                    watcher.wait_gone(GONE_WAIT_S)  # the socket leaves the table just after
        finally:
            proc.kill()
            proc.wait()
            lines.close()
        events = tuple(server.timeline())
    return _result(s, cut_t, result, ceiling_s, watcher.samples(), events, tuple(lines.events()))


def _wait_trigger(trigger: Trigger, server: Any, lines: _JsonLines) -> None:
    from harness.faults.network.trigger import wait_for_trigger

    try:
        wait_for_trigger(trigger, server, timeout=30)
    except TimeoutError as exc:
        raise KernelNetemError(
            f"cut point {trigger} never came: {exc}; client: {lines.stderr_tail()}"
        ) from exc


def _result(s, cut_t, result, ceiling_s, samples, server_events, client_events) -> DeadPeerResult:
    common = dict(
        settings=s,
        cut_t=cut_t,
        ceiling_s=ceiling_s,
        samples=tuple(samples),
        server_events=server_events,
        client_events=client_events,
    )
    if result is None:
        return DeadPeerResult(outcome="hung", detect_s=None, **common)
    if result.get("status") == "returned":
        return DeadPeerResult(outcome="returned", detect_s=result["t"] - cut_t, **common)
    outcome = "detected" if result["t"] >= cut_t else "early"
    return DeadPeerResult(
        outcome=outcome,
        detect_s=result["t"] - cut_t,
        error=result.get("error"),
        errno=result.get("errno"),
        strerror=result.get("strerror"),
        **common,
    )


def _fmt(e: Mapping[str, Any], key: str) -> str:
    rest = ", ".join(f"{k}={v}" for k, v in e.items() if k not in ("t", key, "text", "mro", "pid"))
    return f"{e.get(key)}" + (f" ({rest})" if rest else "")


class _JsonLines:
    """Reads a child's JSON-lines stdout in a thread; waits on a condition, no polling."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self._proc = proc
        self._events: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._eof = False
        self._stderr: list[str] = []
        self._threads = [
            threading.Thread(target=self._read, daemon=True, name="probe-stdout"),
            threading.Thread(target=self._read_err, daemon=True, name="probe-stderr"),
        ]
        for t in self._threads:
            t.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for raw in self._proc.stdout:
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            with self._cond:
                self._events.append(event)
                self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def _read_err(self) -> None:
        assert self._proc.stderr is not None
        for raw in self._proc.stderr:
            self._stderr.append(raw.decode("utf-8", "replace"))
            del self._stderr[:-40]

    def wait_for(
        self, pred: Callable[[dict[str, Any]], bool], *, timeout: float
    ) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for e in self._events:
                    if pred(e):
                        return e
                remaining = deadline - time.monotonic()
                if self._eof or remaining <= 0:
                    return None
                self._cond.wait(remaining)

    def events(self) -> list[dict[str, Any]]:
        with self._cond:
            return list(self._events)

    def stderr_tail(self) -> str:
        return "".join(self._stderr)[-1500:] or "(no stderr)"

    def close(self) -> None:
        for t in self._threads:
            t.join()
