"""What a Toxiproxy fault is: one toxic, validated and frozen, as a scenario embeds it.

A toxic is described by a frozen, validated :class:`Toxic` (what a scenario embeds;
``toxic_from_dict`` raises ``FaultSpecError`` naming the field and the allowed values).
Attribute names and units are Toxiproxy's own (README, "Toxics")::

    latency     latency (ms, required), jitter (ms, 0)     delay every chunk
    bandwidth   rate (KB/s, required)                      cap throughput
    slow_close  delay (ms, required)                       delay the close
    timeout     timeout (ms, 0 = never close)              drop all data, close after timeout
    reset_peer  timeout (ms, 0 = at once)                  RST after timeout
    limit_data  bytes (bytes, required)                    close after this many bytes
    slicer      average_size (bytes, required),            slice data into small writes
                size_variation (bytes, 0), delay (us, 0)
    down        duration (ms, 0 = stays down)              not a Toxiproxy toxic: the proxy
                                                           is disabled (every connection
                                                           drops: a stale pool), enabled
                                                           again after duration

``stream`` is ``downstream`` (server -> client, default) or ``upstream``; ``toxicity``
is the probability (0..1) a connection gets the toxic; ``at`` says when it is added
(``start`` or a server timeline point, see :mod:`harness.faults.network.trigger`). Time
attributes (ms, us) scale with ``time_scale`` via :meth:`Toxic.scaled`, and so does a
rate (KB/s: time per byte), divided by it: a reply takes the same scenario seconds
behind a bandwidth cap at every scale, as behind a latency.

Not here: the Toxiproxy server and its proxies (``harness.netem.toxiproxy``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.faults import FaultSpecError
from harness.faults.network.trigger import Trigger, parse_trigger

__all__ = ["SILENT_TOXICS", "STOPPING_TOXICS", "STREAMS", "TOXIC_TYPES", "Toxic", "toxic_from_dict"]

#: type -> {attribute: (unit, default or None when required)}
TOXIC_TYPES: dict[str, dict[str, tuple[str, int | None]]] = {
    "latency": {"latency": ("ms", None), "jitter": ("ms", 0)},
    "bandwidth": {"rate": ("KB/s", None)},
    "slow_close": {"delay": ("ms", None)},
    "timeout": {"timeout": ("ms", 0)},
    "reset_peer": {"timeout": ("ms", 0)},
    "limit_data": {"bytes": ("bytes", None)},
    "slicer": {"average_size": ("bytes", None), "size_variation": ("bytes", 0), "delay": ("us", 0)},
    "down": {"duration": ("ms", 0)},
}
#: Toxics that stop a stream's progress (its data dropped, the connection reset or closed
#: mid-body, the proxy down), whichever way they act: a scenario with one is not alive.
#: The others (latency, bandwidth, slicer, slow_close) slow the bytes and keep them whole.
STOPPING_TOXICS = frozenset({"timeout", "reset_peer", "limit_data", "down"})
#: Of those, the ones that leave the client's connection open and silent (no FIN, no
#: RST, no bytes): a dead peer the client's transport must notice by itself.
SILENT_TOXICS = frozenset({"timeout"})
STREAMS = ("downstream", "upstream")
_TIME_UNITS = ("ms", "us")
_RATE_UNITS = ("KB/s",)


@dataclass(frozen=True)
class Toxic:
    """One toxic, validated eagerly. ``attributes`` is a sorted tuple of (name, value)
    pairs with every default filled in; read it as a dict with :attr:`attrs`."""

    type: str
    name: str = ""
    stream: str = "downstream"
    toxicity: float = 1.0
    attributes: tuple[tuple[str, int], ...] = ()
    at: Trigger = Trigger()

    def __post_init__(self) -> None:
        if self.type not in TOXIC_TYPES:
            raise FaultSpecError("type", self.type, ", ".join(TOXIC_TYPES))
        if self.stream not in STREAMS:
            raise FaultSpecError("stream", self.stream, ", ".join(STREAMS))
        t = self.toxicity
        if not (
            isinstance(t, int | float)
            and not isinstance(t, bool)
            and math.isfinite(t)
            and 0 <= t <= 1
        ):
            raise FaultSpecError("toxicity", t, "a number from 0 to 1 (probability per connection)")
        if not isinstance(self.at, Trigger):
            object.__setattr__(self, "at", parse_trigger(self.at))
        spec = TOXIC_TYPES[self.type]
        given = dict(self.attributes)
        for key, value in given.items():
            if key not in spec:
                allowed = ", ".join(f"{k} ({u})" for k, (u, _) in spec.items()) or "none"
                raise FaultSpecError(key, value, f"attributes of {self.type}: {allowed}")
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise FaultSpecError(key, value, f"a whole number >= 0 ({spec[key][0]})")
        full = {}
        for key, (unit, default) in spec.items():
            if key not in given and default is None:
                raise FaultSpecError(
                    key, None, f"required for {self.type}: a whole number >= 0 ({unit})"
                )
            full[key] = given.get(key, default)
        if self.type == "slicer" and full["size_variation"] >= full["average_size"] > 0:
            raise FaultSpecError(
                "size_variation",
                full["size_variation"],
                f"less than average_size ({full['average_size']})",
            )
        object.__setattr__(self, "attributes", tuple(sorted(full.items())))
        if not self.name:
            object.__setattr__(self, "name", f"{self.type}_{self.stream}")

    @property
    def stops_progress(self) -> bool:
        """True when this toxic ends the stream's progress (:data:`STOPPING_TOXICS`)."""
        return self.type in STOPPING_TOXICS

    def paced_s(self, units: int, body_bytes: int, *, close_ends_body: bool = False) -> float:
        """Seconds (scenario, as its attributes) this toxic alone adds to a reply of
        ``units`` writes and ``body_bytes`` bytes: a latency per write (Toxiproxy delays
        each chunk it relays), a bandwidth cap over every byte, a slicer's delay per
        slice, a delayed close where the close is what ends the body
        (``close_ends_body``: ``framing = "close"``); 0 for the others."""
        a = self.attrs
        if self.type == "slow_close":
            return a["delay"] / 1000 if close_ends_body else 0.0
        if self.type == "latency":
            return units * (a["latency"] + a["jitter"]) / 1000
        if self.type == "bandwidth":
            return math.inf if a["rate"] == 0 else body_bytes / (a["rate"] * 1000)
        if self.type == "slicer":
            return body_bytes / max(1, a["average_size"]) * a["delay"] / 1e6
        return 0.0

    @property
    def attrs(self) -> dict[str, int]:
        return dict(self.attributes)

    def scaled(self, k: float) -> Toxic:
        """A copy with every time attribute (ms, us) multiplied by ``k`` and every rate
        divided by it (0, no bytes at all, stays 0)."""
        spec = TOXIC_TYPES[self.type]

        def scale(unit: str, v: int) -> int:
            if unit in _TIME_UNITS:
                return round(v * k)
            if unit in _RATE_UNITS and v > 0 and k > 0:
                return max(1, round(v / k))
            return v

        attrs = {n: scale(spec[n][0], v) for n, v in self.attributes}
        return dataclasses.replace(self, attributes=tuple(attrs.items()))

    def to_dict(self) -> dict[str, Any]:
        """The scenario form (round-trips through :func:`toxic_from_dict`)."""
        return {
            "type": self.type,
            "name": self.name,
            "stream": self.stream,
            "toxicity": self.toxicity,
            "at": str(self.at),
            **self.attrs,
        }

    def __str__(self) -> str:
        units = TOXIC_TYPES[self.type]
        extra = ", ".join(
            f"{n}={v}{units[n][0] if units[n][0] != 'bytes' else 'B'}" for n, v in self.attributes
        )
        where = "" if self.at.immediate else f"@{self.at}"
        return f"{self.type}[{self.stream}]{where}" + (f"({extra})" if extra else "")


def toxic_from_dict(data: Mapping[str, Any], *, where: str = "toxic") -> Toxic:
    """Build a :class:`Toxic` from a scenario table: ``{type = "latency", latency = 200,
    stream = "downstream", toxicity = 1.0, at = "start", name = "..."}``. Attributes may
    also be nested under ``attributes = {...}``. Errors name ``where.field``."""
    if not isinstance(data, Mapping):
        raise FaultSpecError(where, data, "a table with type and its attributes")
    data = dict(data)
    toxic_type = data.pop("type", None)
    if toxic_type not in TOXIC_TYPES:
        raise FaultSpecError(f"{where}.type", toxic_type, ", ".join(TOXIC_TYPES))
    fields = {k: data.pop(k) for k in ("name", "stream", "toxicity", "at") if k in data}
    nested = data.pop("attributes", {})
    if not isinstance(nested, Mapping):
        raise FaultSpecError(f"{where}.attributes", nested, "a table of attribute = value")
    attrs = {**dict(nested), **data}
    try:
        if "at" in fields:
            fields["at"] = parse_trigger(fields["at"])
        if "name" in fields and not (isinstance(fields["name"], str) and fields["name"].strip()):
            raise FaultSpecError("name", fields["name"], "a non-empty string")
        return Toxic(type=toxic_type, attributes=tuple(attrs.items()), **fields)
    except FaultSpecError as exc:
        raise FaultSpecError(f"{where}.{exc.field}", exc.value, exc.allowed) from None
