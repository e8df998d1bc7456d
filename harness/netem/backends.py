"""Runner-facing network backends: set one up around one call, fire it at the scripted point.

What it is for: the ``[network]`` table of a scenario. The scenario loader parses it once
(``harness.network_spec.network_from_dict``, into a
:class:`~harness.faults.network.spec.NetworkSpec`) and the runner wraps each call in
:func:`network_backend`, which yields a :class:`NetworkHandle`:

    handle.server          the fault server the target talks to (for ``kernel`` a new one,
                           made by ``server_factory`` inside the server namespace)
    handle.base_url        what the target must use as its base URL
    handle.command_prefix  argv prefix for the target's child process ([] or
                           ``ip netns exec <client ns>``)
    handle.arm(timeout=)   after ``server.load(...)``: fire each deferred fault when its
                           point (``at`` / ``cut_at``) shows on the server's timeline
    handle.fire()          fire the deferred faults now (tests, manual runs)
    handle.watch(pid)      sample the target's TCP sockets from /proc (kernel backend)
    handle.events()        the backend's own timeline rows, dicts with ``t`` (monotonic),
                           ``source`` ("relay" | "toxiproxy" | "netem" | "kernel"), ``kind``,
                           ``detail``; the relay's ``tcp`` rows carry ``states``

Scenario forms (TOML)::

    [network]
    backend = "relay"
    relay = { mode = "swallow_close" }              # RelaySettings fields
    at = "start"                                    # switch to relay.mode at this point
                                                    # (before it: pass)

    [network]
    backend = "toxiproxy"
    toxics = [ { type = "latency", latency = 300 },
               { type = "timeout", timeout = 0, at = "event:3" },
               { type = "down", at = "request:2" } ]

    [network]
    backend = "kernel"
    kernel = { cut_at = "event:3" }                 # KernelSettings (the probe's keepalive
                                                    # fields are ignored: a target's own
                                                    # socket options are under test)

What it is not: a scheduler or a classifier; it neither runs the target nor judges it.
It never imports the fault server (same layer): the runner passes it in.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

from harness.faults.network.spec import NetworkSpec
from harness.faults.network.toxics import Toxic
from harness.faults.network.trigger import Trigger, wait_for_trigger
from harness.netem.netns import NetnsPair
from harness.netem.tcpwatch import TcpWatcher
from harness.relay import Relay

__all__ = [
    "NetworkHandle",
    "network_backend",
]


def _hold_point(trigger: Trigger) -> int | None:
    """Where the first reply body waits for a fault fired at ``trigger``: after N events
    for ``event:N``; after its head, before any event, for the first accept, request or
    head (a later one's body is not the first to get there, so it is not held)."""
    if trigger.kind == "event":
        return trigger.n
    if trigger.kind in ("accept", "request", "headers") and trigger.n == 1:
        return 0
    return None


class NetworkHandle:
    """What :func:`network_backend` yields; see the module docstring."""

    def __init__(self, *, server: Any, base_url: str, command_prefix: Sequence[str] = ()) -> None:
        self.server = server
        self.base_url = base_url
        self.command_prefix = list(command_prefix)
        self._deferred: list[tuple[Trigger, str, Callable[[], None]]] = []
        self._events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._fired: set[int] = set()
        self._watchers: list[TcpWatcher] = []
        self._sources: list[Callable[[], list[dict[str, Any]]]] = []

    def arm(self, *, timeout: float) -> None:
        """Fire each deferred fault when its point shows on ``self.server``'s timeline
        (waits in one daemon thread per fault, on the server's condition: no polling)."""
        for i, (trigger, label, fire) in enumerate(self._deferred):
            if trigger.immediate:
                self._fire_one(i, label, fire)
                continue
            # The body waits at the point until the fault is in place: fired by this
            # thread some milliseconds after the point, it would land events later (or,
            # at a request's point, after the whole reply on a loaded machine).
            hold = getattr(self.server, "hold", None)
            point = _hold_point(trigger)
            release = hold(point) if point is not None and callable(hold) else None
            threading.Thread(
                target=self._wait_and_fire,
                args=(i, trigger, label, fire, timeout, release),
                daemon=True,
                name=f"netem-arm-{label}",
            ).start()

    def fire(self) -> None:
        """Fire every deferred fault that has not fired yet, now."""
        for i, (_, label, fire) in enumerate(self._deferred):
            self._fire_one(i, label, fire)

    def watch(self, pid: int) -> None:
        """Kernel backend: sample ``pid``'s TCP sockets to the server until the backend closes."""
        port = urlsplit(self.base_url).port
        watcher = TcpWatcher(pid, remote_port=port)
        watcher.__enter__()
        self._watchers.append(watcher)

    def events(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = list(self._events)
        for source in self._sources:
            rows.extend(source())
        for w in self._watchers:
            rows.extend(
                {"t": s.t, "source": "kernel", "kind": "tcp", "detail": s.describe()}
                for s in w.samples()
            )
        return sorted(rows, key=lambda r: r["t"])

    # ------------------------------------------------------------------ internals

    def _defer(self, trigger: Trigger, label: str, fire: Callable[[], None]) -> None:
        self._deferred.append((trigger, label, fire))

    def _note(self, source: str, kind: str, detail: str = "") -> None:
        import time

        with self._lock:
            self._events.append(
                {"t": time.monotonic(), "source": source, "kind": kind, "detail": detail}
            )

    def _wait_and_fire(
        self,
        i: int,
        trigger: Trigger,
        label: str,
        fire: Callable[[], None],
        timeout: float,
        release: Callable[[], None] | None = None,
    ) -> None:
        try:
            wait_for_trigger(trigger, self.server, timeout=timeout)
            self._fire_one(i, label, fire)
        except TimeoutError:
            self._note(
                "netem", "trigger_missed", f"{label}: {trigger} did not happen within {timeout:g} s"
            )
        except (RuntimeError, OSError) as exc:  # ToxiproxyError, RelayError, KernelNetemError
            # a fault fired from this thread as the case ends finds its backend going
            # down: recorded on the timeline (never a fault reached), not a stray traceback
            when = "after the case ended" if self._closed.is_set() else "during the case"
            self._note("netem", "fire_failed", f"{label} {when}: {type(exc).__name__}: {exc}")
        finally:
            if release is not None:
                release()  # after the fault is in place (or will never be): the body goes on

    def _fire_one(self, i: int, label: str, fire: Callable[[], None]) -> None:
        with self._lock:
            if i in self._fired or self._closed.is_set():
                return
            self._fired.add(i)
        fire()

    def _close(self) -> None:
        self._closed.set()
        for w in self._watchers:
            w.stop()


@contextlib.contextmanager
def network_backend(
    spec: NetworkSpec,
    *,
    server: Any = None,
    server_factory: Callable[[str], Any] | None = None,
    time_scale: float = 1.0,
) -> Iterator[NetworkHandle]:
    """Set up ``spec``'s backend around one call. ``server`` is the running fault server
    (relay, toxiproxy, server backends); ``server_factory(host)`` makes a fault-server
    context manager bound to ``host`` (kernel backend: entered inside the server
    namespace; it must allow a non-loopback bind). Durations scale by ``time_scale``."""
    spec = spec.scaled(time_scale)
    if spec.backend == "server":
        handle = NetworkHandle(server=server, base_url=server.base_url)
        yield handle
        handle._close()
        return
    if spec.backend == "kernel":
        if server_factory is None:
            raise ValueError(
                "kernel backend needs server_factory(host) -> a fault server context manager"
            )
        with NetnsPair() as pair, pair.enter("server", server_factory(pair.server_ip)) as srv:
            handle = NetworkHandle(
                server=srv, base_url=srv.base_url, command_prefix=pair.command_prefix("client")
            )
            assert spec.kernel is not None

            def cut() -> None:
                pair.cut()
                handle._note("netem", "cut", f"link down in {pair.server_ns} (no FIN, no RST)")
                for w in handle._watchers:
                    w.sample()

            handle._defer(spec.kernel.cut_at, "cut", cut)
            try:
                yield handle
            finally:
                handle._close()
        return
    upstream = _host_port(server.url)
    if spec.backend == "relay":
        assert spec.relay is not None
        first = (
            spec.relay if spec.relay_at.immediate else dataclasses.replace(spec.relay, mode="pass")
        )
        with Relay(upstream=upstream, settings=first) as relay:
            handle = NetworkHandle(server=server, base_url=relay.base_url)
            handle._sources.append(
                lambda: [{"source": "relay", **e.to_dict()} for e in relay.timeline()]
            )
            if not spec.relay_at.immediate:
                mode = spec.relay.mode
                handle._defer(
                    spec.relay_at,
                    f"relay:{mode}",
                    lambda: relay.set_mode(mode, idle_cut_s=spec.relay.idle_cut_s),
                )
            try:
                yield handle
            finally:
                handle._close()
        return
    # toxiproxy
    from harness.netem.toxiproxy import ToxiproxyServer

    with ToxiproxyServer() as tp:
        proxy = tp.proxy(upstream=upstream)
        handle = NetworkHandle(server=server, base_url=proxy.base_url)
        for toxic in spec.toxics:

            def add(t: Toxic = toxic) -> None:
                proxy.add(t)
                handle._note("toxiproxy", "toxic_added", str(t))

            if toxic.at.immediate:
                add()
            else:
                handle._defer(toxic.at, f"toxic:{toxic.name}", add)
        try:
            yield handle
        finally:
            handle._close()


def _host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if parts.hostname is None or parts.port is None:
        raise ValueError(f"server url {url!r} has no host:port")
    return parts.hostname, parts.port
