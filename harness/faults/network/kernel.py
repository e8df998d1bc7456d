"""The kernel dead peer: two network namespaces, a veth pair, a link taken down.

What it is for: the one failure a userspace server cannot fake. A server that stops
writing is still alive to the kernel (it ACKs, it answers keepalive probes). Here the
path itself dies: packets are dropped with no FIN and no RST, so only TCP keepalive
(SO_KEEPALIVE + KEEPIDLE/KEEPINTVL/KEEPCNT), TCP_USER_TIMEOUT or an application
deadline can notice.

This module is the scenario's side: :class:`KernelSettings` (when the link goes down,
the shape, the probe client's keepalive and TCP_USER_TIMEOUT) parsed from a
``[network.kernel]`` table. The machinery is in three modules, one job each:

- :mod:`harness.netem.netns` -- namespace lifecycle: :class:`~harness.netem.netns.NetnsPair`
  (create, run a server in A and a client in B, cut, heal, remove even on failure),
  :func:`~harness.netem.netns.cleanup_stale`;
- :mod:`harness.netem.tcpwatch` -- :class:`~harness.netem.tcpwatch.TcpWatcher`, the
  client socket's TCP state sampled from /proc for the timeline;
- :mod:`harness.netem.deadpeer` -- :func:`~harness.netem.deadpeer.run_dead_peer`, the
  measurement the tests and ``harness bench netem`` share.

What it is not: a traffic shaper (``tc netem`` is not available on every kernel; the
link is taken down instead), nor a way to reach anything outside the namespaces.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.faults import FaultSpecError
from harness.faults.network.trigger import Trigger, parse_trigger

__all__ = [
    "SHAPES",
    "KeepaliveSettings",
    "KernelSettings",
    "kernel_settings_from_dict",
]

SHAPES = ("waiting", "in_flight")


@dataclass(frozen=True)
class KeepaliveSettings:
    """Client TCP keepalive: first probe after ``idle_s`` idle, then every ``interval_s``,
    dead after ``count`` unanswered probes. Whole seconds (the kernel's unit)."""

    idle_s: int = 1
    interval_s: int = 1
    count: int = 2

    def __post_init__(self) -> None:
        for name in ("idle_s", "interval_s", "count"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise FaultSpecError(f"keepalive.{name}", v, "a whole number >= 1")

    @property
    def formula_s(self) -> float:
        """When keepalive declares the peer dead, counted from the last packet received."""
        return float(self.idle_s + self.interval_s * self.count)

    def as_tuple(self) -> tuple[int, int, int]:
        return (self.idle_s, self.interval_s, self.count)


@dataclass(frozen=True)
class KernelSettings:
    """A kernel dead-peer scenario. ``cut_at``: when the link goes down (a server
    timeline point, :mod:`harness.faults.network.trigger`); ``shape``: ``waiting`` (the client
    only reads when the path dies) or ``in_flight`` (the path dies, then the client
    writes a request on its pooled connection); ``keepalive`` / ``user_timeout_s``:
    the probe client's socket options (None: off)."""

    cut_at: Trigger = Trigger("event", 3)
    shape: str = "waiting"
    keepalive: KeepaliveSettings | None = KeepaliveSettings()
    user_timeout_s: float | None = None
    events: int = 3

    def __post_init__(self) -> None:
        if not isinstance(self.cut_at, Trigger):
            object.__setattr__(self, "cut_at", parse_trigger(self.cut_at, where="kernel.cut_at"))
        if self.shape not in SHAPES:
            raise FaultSpecError("kernel.shape", self.shape, ", ".join(SHAPES))
        u = self.user_timeout_s
        if u is not None and not (
            isinstance(u, int | float) and not isinstance(u, bool) and 0 < u < 3600
        ):
            raise FaultSpecError("kernel.user_timeout_s", u, "seconds > 0 (and < 3600), or omitted")
        if not isinstance(self.events, int) or isinstance(self.events, bool) or self.events < 1:
            raise FaultSpecError("kernel.events", self.events, "a whole number >= 1")

    @property
    def expected_detection_s(self) -> float | None:
        """What the kernel alone should give: keepalive formula while only waiting,
        TCP_USER_TIMEOUT once data is in flight; None when nothing bounds it."""
        if self.shape == "in_flight":
            return self.user_timeout_s
        if self.keepalive is None:
            return self.user_timeout_s
        if self.user_timeout_s is not None:
            # TCP_USER_TIMEOUT also caps keepalive (probes unanswered that long).
            return min(self.keepalive.formula_s, max(self.user_timeout_s, self.keepalive.idle_s))
        return self.keepalive.formula_s


def kernel_settings_from_dict(
    data: Mapping[str, Any] | None, *, where: str = "kernel"
) -> KernelSettings:
    """``{cut_at = "event:3", shape = "waiting", keepalive = {idle_s = 1, interval_s = 1,
    count = 2}, user_timeout_s = 3}``; ``keepalive = false`` turns it off."""
    if data is None:
        return KernelSettings()
    if not isinstance(data, Mapping):
        raise FaultSpecError(
            where, data, "a table: cut_at, shape, keepalive, user_timeout_s, events"
        )
    data = dict(data)
    allowed = [f.name for f in dataclasses.fields(KernelSettings)]
    for key in data:
        if key not in allowed:
            raise FaultSpecError(f"{where}.{key}", data[key], ", ".join(allowed))
    try:
        ka = data.get("keepalive", {})
        if ka is False:
            data["keepalive"] = None
        elif isinstance(ka, Mapping):
            unknown = set(ka) - {"idle_s", "interval_s", "count"}
            if unknown:
                raise FaultSpecError(
                    "keepalive." + sorted(unknown)[0],
                    ka[sorted(unknown)[0]],
                    "idle_s, interval_s, count",
                )
            data["keepalive"] = KeepaliveSettings(**ka)
        else:
            raise FaultSpecError("keepalive", ka, "a table {idle_s, interval_s, count} or false")
        if "cut_at" in data:
            data["cut_at"] = parse_trigger(data["cut_at"], where="cut_at")
        return KernelSettings(**data)
    except FaultSpecError as exc:
        field_name = exc.field.removeprefix("kernel.")
        raise FaultSpecError(f"{where}.{field_name}", exc.value, exc.allowed) from None
