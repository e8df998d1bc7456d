"""A proxied call's four legs: their kernel TCP states over one job, and the middlebox shape.

The gateway (:mod:`harness.gateway.litellm_main`) samples the client leg's two ends
every ``DEFAULT_SAMPLE_INTERVAL_S``; the relay in front of the fault server reports the
upstream leg's on each of its events. :class:`JobLegs` holds both for one job and
merges them into one timeline; :func:`summarize` measures how long the proxy's upstream
socket sat in CLOSE_WAIT while the client's leg stayed ESTABLISHED.

Not here: the gateway process and its pool (``harness.gateway.litellm_proxy``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "CLIENT_LEGS",
    "DEFAULT_SAMPLE_INTERVAL_S",
    "LEGS",
    "MAX_SAMPLES",
    "JobLegs",
    "summarize",
]

#: The four sockets of a proxied call: the client leg's two ends (sampled by the gateway)
#: and the upstream leg's (the relay's "client" and "upstream" legs).
LEGS = ("client", "proxy_in", "proxy_out", "provider")
CLIENT_LEGS = LEGS[:2]
_RELAY_LEG_NAMES = {"client": "proxy_out", "upstream": "provider"}
DEFAULT_SAMPLE_INTERVAL_S = 0.05
#: Samples per job at most (``DEFAULT_SAMPLE_INTERVAL_S`` apart: 100 s of a job).
MAX_SAMPLES = 2000


@dataclass(frozen=True)
class JobLegs:
    """One job's legs: the gateway's client-leg samples (``{"t", "states"}``, changes
    only) and the relay's events (:meth:`harness.relay.RelayEvent.to_dict`)."""

    samples: list[dict[str, Any]]
    relay: list[dict[str, Any]]

    def timeline(self) -> list[tuple[float, str, str]]:
        """Client events: ``tcp`` lines with every leg's state at each change, and the
        relay's own events (``upstream_fin``, ``closed`` ...) as ``relay:<kind>``."""
        out = []
        for t, states in self.states():
            out.append((t, "tcp", " | ".join(f"{leg}={states[leg]}" for leg in LEGS)))
        for e in self.relay:
            if e["kind"] not in ("tcp", "bytes_down", "bytes_up"):
                out.append((float(e["t"]), f"relay:{e['kind']}", str(e.get("detail", ""))))
        return sorted(out)

    def states(self) -> list[tuple[float, dict[str, str]]]:
        """Every leg's state after each change, in time order (``-``: no socket)."""
        changes: list[tuple[float, str, str]] = []
        for sample in self.samples:
            for leg in CLIENT_LEGS:
                changes.append((float(sample["t"]), leg, sample["states"].get(leg, "-")))
        upstream: dict[str, dict[int, str]] = {"proxy_out": {}, "provider": {}}
        for e in self.relay:
            for relay_leg, leg in _RELAY_LEG_NAMES.items():
                text = (e.get("states") or {}).get(relay_leg)
                if text is None:
                    continue
                state = text.split(" ", 1)[0]
                per_conn = upstream[leg]
                if state == "gone":
                    per_conn.pop(int(e["conn"]), None)
                else:
                    per_conn[int(e["conn"])] = state
                changes.append((float(e["t"]), leg, ",".join(per_conn.values()) or "-"))
        current = dict.fromkeys(LEGS, "-")
        out: list[tuple[float, dict[str, str]]] = []
        for t, leg, state in sorted(changes, key=lambda c: c[0]):
            if current[leg] != state:
                current[leg] = state
                out.append((t, dict(current)))
        return out


def summarize(legs: JobLegs) -> dict[str, Any]:
    """The middlebox measurement over one job.

    ``proxy_close_wait_s``: how long the proxy's upstream socket was in CLOSE_WAIT while
    the client's leg was ESTABLISHED (the proxy kept the client waiting on a provider
    that had already closed); ``<leg>_states``: every state each leg was seen in, in
    order of first sight."""
    timeline = legs.states()
    held = 0.0
    # Empty when no leg was ever seen: a call over between two samples (a warm proxy
    # answers in less than DEFAULT_SAMPLE_INTERVAL_S) leaves every leg "-" throughout.
    for i, (t, states) in enumerate(timeline):
        if "CLOSE_WAIT" in states["proxy_out"] and "ESTABLISHED" in states["client"]:
            held += (timeline[i + 1][0] if i + 1 < len(timeline) else t) - t

    def seen(leg: str) -> list[str]:
        order: list[str] = []
        for _, states in timeline:
            for state in states[leg].split(","):
                if state not in order:
                    order.append(state)
        return order

    return {"proxy_close_wait_s": round(held, 3), **{f"{leg}_states": seen(leg) for leg in LEGS}}
