"""The ``dead_peer_bound`` check: would this client's transport notice a dead peer in time?

A scenario whose fault is a silent or dead peer -- a server ``hang``, a relay that holds
or swallows the close, Toxiproxy's ``timeout`` toxic, a kernel black hole -- asks it.
The question is about the transport's own posture, read from the client's live sockets
(``harness.posture``): if the peer were really gone (no FIN, no RST, nothing), how long
until the kernel tells the client? (keepalive, TCP_USER_TIMEOUT; ``notice_bound``.) That
bound must be within the scenario's stated one. The application's own deadlines are the
``bounded`` check's business; this one catches the client that survives a loopback hang
by a read timeout yet would wait out a real dead peer for as long as a reasoning model
may think -- in seconds, on the loopback server, without waiting for a kernel timer.

Which wait: ``waiting`` (the request was acknowledged: the client waits for bytes) for
every silent-peer fault; ``in_flight`` (the request went into the hole: only
TCP_USER_TIMEOUT or the kernel's ~15 min of retransmissions end it) for a kernel cut of
shape ``in_flight``, judged only where the scenario states a bound (``[contract]
dead_peer_bound_s``), since the usual remedy there is an application deadline.

The bound: ``[contract] dead_peer_bound_s``, else :data:`DEFAULT_DEAD_PEER_BOUND_S`, in
real seconds (kernel timers never scale with ``time_scale``).

Statuses: ``pass``, ``fail``, ``not_applicable`` (the posture could not be read, no
connection was sampled, a fact is unknown: the reason is given, never a false "off").

Not here: reading posture (``harness.posture``) or the other checks (``verdict``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.faults.network.toxics import SILENT_TOXICS
from harness.posture.carried import carried_counts, judged
from harness.posture.facts import (
    DEFAULT_TCP_RETRIES2,
    SocketPosture,
    notice_bound,
    worst_bound,
)
from harness.relay.modes import MODE_TYPES

if TYPE_CHECKING:
    from harness.scenario import Scenario

__all__ = [
    "CHECK",
    "DEFAULT_DEAD_PEER_BOUND_S",
    "STATUSES",
    "DeadPeerCheck",
    "check_dead_peer",
    "dead_peer_terms",
    "judge_dead_peer",
]

CHECK = "dead_peer_bound"
STATUSES = ("pass", "fail", "not_applicable")
#: A dead peer noticed within two minutes while the client waits: longer than any
#: keepalive fix seen in the wild (hermes-agent #11277: 30 + 3 x 10 s), far shorter than
#: the SDKs' 600 s read timeout or "never".
DEFAULT_DEAD_PEER_BOUND_S = 120.0


@dataclass(frozen=True)
class DeadPeerCheck:
    """The check's result with its evidence (the bound, the limit, the posture behind it)."""

    status: str
    mode: str
    limit_s: float
    bound_s: float | None = None
    by: str = ""
    reason: str = ""
    connections: int = 0
    evidence: Mapping[str, Any] = field(default_factory=dict)
    #: The sampled connections not judged, by what they carried ("2 probe, 1 nothing").
    apart: str = ""

    @property
    def failed(self) -> bool:
        return self.status == "fail"

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": CHECK,
            "status": self.status,
            "mode": self.mode,
            "limit_s": self.limit_s,
            "bound_s": self.bound_s,
            "by": self.by,
            "reason": self.reason,
            "connections": self.connections,
            **({"apart": self.apart} if self.apart else {}),
        }


def dead_peer_terms(scenario: Scenario, stated_s: float | None) -> dict[str, Any]:
    """The contract's ``dead_peer`` (mode, None: no such fault) and ``dead_peer_bound_s``."""
    mode = _mode(scenario)
    if mode == "in_flight" and stated_s is None:
        mode = None
    return {
        "dead_peer": mode,
        "dead_peer_bound_s": (stated_s or DEFAULT_DEAD_PEER_BOUND_S) if mode else None,
    }


def check_dead_peer(
    mode: str,
    limit_s: float,
    posture: Sequence[SocketPosture | Mapping[str, Any]] | None,
    *,
    unreadable: str = "",
    tcp_retries2: int = DEFAULT_TCP_RETRIES2,
) -> DeadPeerCheck:
    """Judge the worst bound of the connections that carried the model call (where
    none is tied to the server's records: of every untied one) against ``limit_s``
    (pure); probe and idle connections are counted apart, never judged."""
    if posture is None or unreadable:
        return DeadPeerCheck(
            "not_applicable", mode, limit_s, reason=unreadable or "posture was not read"
        )
    sampled = [p if isinstance(p, SocketPosture) else SocketPosture.from_dict(p) for p in posture]
    conns, others = judged(sampled)
    apart = carried_counts(others)
    if not conns:
        why = "no client socket to the server was sampled"
        if apart:
            why = f"no client socket that carried a model call was sampled (only {apart})"
        return DeadPeerCheck("not_applicable", mode, limit_s, reason=why, apart=apart)
    bound = worst_bound(notice_bound(c, mode=mode, tcp_retries2=tcp_retries2) for c in conns)
    if not bound.known:
        return DeadPeerCheck(
            "not_applicable",
            mode,
            limit_s,
            by=bound.by,
            reason=bound.why,
            connections=len(conns),
            apart=apart,
        )
    ok = bound.seconds is not None and bound.seconds <= limit_s
    while_ = mode.replace("_", " ")
    which = _which(conns)
    if bound.seconds is None:
        reason = (
            # true of the socket whatever the client's timeouts: a read timeout ends a
            # silent wait, but cannot tell a dead peer from a slow one (audit, 2026-12-06)
            f"the kernel never notices a dead peer while {while_} (no keepalive on {which}; "
            f"only the client's own deadlines end such a wait); bound {limit_s:g} s"
        )
    else:
        reason = (
            f"a dead peer while {while_} is noticed after {bound.seconds:g} s ({bound.by}, "
            f"{which}); bound {limit_s:g} s"
        )
    if apart:
        reason += f"; not judged: {apart}"
    return DeadPeerCheck(
        "pass" if ok else "fail",
        mode,
        limit_s,
        bound_s=bound.seconds,
        by=bound.by,
        reason=reason,
        connections=len(conns),
        apart=apart,
    )


def judge_dead_peer(contract: Any, posture: Any) -> DeadPeerCheck | None:
    """The check for one case: ``contract`` a ``Contract``, ``posture`` the case's
    ``harness.posture.Posture`` (None: not read). None when the contract does not ask."""
    if contract.dead_peer is None:
        return None
    if posture is None:
        return check_dead_peer(contract.dead_peer, contract.dead_peer_bound_s, None)
    return check_dead_peer(
        contract.dead_peer,
        contract.dead_peer_bound_s,
        posture.connections,
        unreadable="" if posture.readable else posture.reason,
    )


def _which(conns: Sequence[SocketPosture]) -> str:
    """Which sockets the bound is of: the model-call ones, or every untied one."""
    n = len(conns)
    what = "model-call socket" if all(c.carried == "model_call" for c in conns) else "untied socket"
    return f"the {what}" if n == 1 else f"the {n} {what}s"


def _mode(scenario: Scenario) -> str | None:
    """Which dead-peer wait the scenario's fault asks about (None: it is no silent peer).
    The network in between decides first: a kernel cut, a silent toxic or relay mode
    (their traits), a relay that turns silence into a cut (``idle_cut``); else a server
    rule that goes silent, seen through a relay or Toxiproxy that passes it on."""
    network = scenario.network
    backend = scenario.backend
    if backend == "kernel":
        shape = getattr(getattr(network, "kernel", None), "shape", "waiting")
        return "in_flight" if shape == "in_flight" else "waiting"
    if backend == "toxiproxy" and any(t.type in SILENT_TOXICS for t in network.toxics):
        return "waiting"
    if backend == "relay":
        mode = MODE_TYPES[network.relay.mode]
        if mode.silences:
            return "waiting"
        if mode.cuts_idle:
            return None  # a silent upstream becomes a cut client leg: no silent peer
    silent = any(r.fault.action.silent_peer() for r in scenario.script.rules)
    return "waiting" if silent else None
