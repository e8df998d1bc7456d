"""Socket posture as data: what one client socket's options and kernel state were, and
what they imply for noticing a dead peer. Pure: nothing here reads a socket.

A fact the reader could not read is :data:`UNKNOWN` (the string ``"unknown"``), never
``False`` or ``None``: ``None`` means "off" (no TCP_USER_TIMEOUT), ``"unknown"`` means
nobody could tell. ``source`` says where the options came from:

- ``getsockopt``: read from the socket itself (``pidfd_getfd`` + ``getsockopt``);
- ``proc``: only the kernel's table (``/proc/net/tcp``): state, timer, queues, and
  SO_KEEPALIVE where the timer shows it (an idle ESTABLISHED socket has its keepalive
  timer armed exactly when SO_KEEPALIVE is on); the rest unknown;
- ``unknown``: nothing could be read (``reason`` says why).

How long a posture takes to notice a dead peer (Linux semantics, ``tcp_keepalive_timer``
and ``tcp_write_timeout``), by what the client is doing when the peer dies:

- **waiting** (its request was acknowledged; it waits for bytes): only keepalive probes
  run. Without TCP_USER_TIMEOUT the kernel gives up after ``idle + interval x count``;
  with it, at the first probe time ``idle + k x interval`` (k >= 1) past the user
  timeout. TCP_USER_TIMEOUT alone does nothing here (no unacknowledged data), and no
  keepalive means never.
- **in flight** (it wrote data the peer never acknowledges): keepalive is suspended;
  TCP_USER_TIMEOUT ends it, else the kernel's retransmissions (``tcp_retries2``, about
  15 minutes at the default of 15, which the bounds assume unless told otherwise).

A read timeout (an application deadline), where it is known, bounds both.

Not here: reading (``harness.posture.reader``), sampling during a case
(``harness.posture.sampler``), the contract check (``harness.contract.dead_peer``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "DEFAULT_TCP_RETRIES2",
    "MODES",
    "SOURCES",
    "UNKNOWN",
    "Bound",
    "Keepalive",
    "SocketPosture",
    "Unknown",
    "describe",
    "notice_bound",
    "retransmission_give_up_s",
    "worst_bound",
]

UNKNOWN: Literal["unknown"] = "unknown"
Unknown = Literal["unknown"]
SOURCES = ("getsockopt", "proc", "unknown")
MODES = ("waiting", "in_flight")
#: Linux's default ``net.ipv4.tcp_retries2`` (``/proc/sys/net/ipv4/tcp_retries2``).
DEFAULT_TCP_RETRIES2 = 15
#: ``TCP_RTO_MIN`` and ``TCP_RTO_MAX`` (include/net/tcp.h), seconds.
_RTO_MIN_S = 0.2
_RTO_MAX_S = 120.0


@dataclass(frozen=True)
class Keepalive:
    """SO_KEEPALIVE and its timing as the socket has them (each may be unknown)."""

    enabled: bool | Unknown
    idle_s: float | Unknown | None = UNKNOWN
    interval_s: float | Unknown | None = UNKNOWN
    count: int | Unknown | None = UNKNOWN

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # every field, as it is


@dataclass(frozen=True, kw_only=True)
class SocketPosture:
    """One client socket, as read at one moment (the newest sample of its connection)."""

    conn: int
    pid: int
    local: str
    remote: str
    source: str
    keepalive: Keepalive
    user_timeout_s: float | None | Unknown = UNKNOWN
    nodelay: bool | Unknown = UNKNOWN
    state: str = UNKNOWN
    timer: str = UNKNOWN
    timer_s: float | Unknown = UNKNOWN
    retransmits: int | Unknown = UNKNOWN
    probes: int | Unknown = UNKNOWN
    tx_queue: int | Unknown = UNKNOWN
    rx_queue: int | Unknown = UNKNOWN
    #: Why a fact is unknown (empty when every option was read).
    reason: str = ""
    #: What prompted each sample of this connection ("request_read", "fault", "end").
    sampled_at: tuple[str, ...] = ()
    #: What the connection carried, from the server's records (``harness.posture.carried``):
    #: "model_call", "probe", "nothing", or "unknown" (not tied to a server connection).
    carried: str = UNKNOWN
    #: The server's number of the connection it was tied to (None: not tied).
    server_conn: int | None = None
    #: The server's index and path of each request it carried, in order.
    requests: tuple[tuple[int, str], ...] = ()
    #: When the read its options come from began (``time.monotonic()``; None: unknown):
    #: a read before the connection's first request may precede the client's setsockopt.
    read_t: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "conn": self.conn,
            "pid": self.pid,
            "local": self.local,
            "remote": self.remote,
            "keepalive": self.keepalive.to_dict(),
            "user_timeout_s": self.user_timeout_s,
            "nodelay": self.nodelay,
            "state": self.state,
            "timer": self.timer,
            "timer_s": self.timer_s,
            "retransmits": self.retransmits,
            "probes": self.probes,
            "tx_queue": self.tx_queue,
            "rx_queue": self.rx_queue,
            "source": self.source,
            "sampled_at": list(self.sampled_at),
            "carried": self.carried,
            "server_conn": self.server_conn,
            "requests": [{"index": i, "path": path} for i, path in self.requests],
            "read_t": self.read_t,
        }
        if self.reason:
            out["reason"] = self.reason
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SocketPosture:
        ka = data.get("keepalive") or {}
        return cls(
            conn=int(data.get("conn", 0)),
            pid=int(data.get("pid", 0)),
            local=str(data.get("local", "")),
            remote=str(data.get("remote", "")),
            source=str(data.get("source", UNKNOWN)),
            keepalive=Keepalive(
                enabled=ka.get("enabled", UNKNOWN),
                idle_s=ka.get("idle_s", UNKNOWN),
                interval_s=ka.get("interval_s", UNKNOWN),
                count=ka.get("count", UNKNOWN),
            ),
            user_timeout_s=data.get("user_timeout_s", UNKNOWN),
            nodelay=data.get("nodelay", UNKNOWN),
            state=str(data.get("state", UNKNOWN)),
            timer=str(data.get("timer", UNKNOWN)),
            timer_s=data.get("timer_s", UNKNOWN),
            retransmits=data.get("retransmits", UNKNOWN),
            probes=data.get("probes", UNKNOWN),
            tx_queue=data.get("tx_queue", UNKNOWN),
            rx_queue=data.get("rx_queue", UNKNOWN),
            reason=str(data.get("reason", "")),
            sampled_at=tuple(data.get("sampled_at") or ()),
            # a file written before connections were tied: every one "unknown"
            carried=str(data.get("carried") or UNKNOWN),
            server_conn=data.get("server_conn"),
            requests=tuple(
                (int(r.get("index", 0)), str(r.get("path", "")))
                for r in data.get("requests") or ()
                if isinstance(r, Mapping)
            ),
            read_t=data.get("read_t"),
        )


@dataclass(frozen=True)
class Bound:
    """How long a posture takes to notice a dead peer. ``seconds`` None with
    ``known``: never; ``known`` False: cannot tell (``why`` says why)."""

    seconds: float | None
    known: bool
    #: What ends it: "keepalive", "user_timeout", "retransmission", "read_timeout",
    #: "never" or "unknown".
    by: str
    why: str = ""

    @property
    def never(self) -> bool:
        return self.known and self.seconds is None

    def text(self) -> str:
        if not self.known:
            return UNKNOWN
        return "never" if self.seconds is None else f"{_num(self.seconds)}s ({self.by})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds,
            "known": self.known,
            "by": self.by,
            **({"why": self.why} if self.why else {}),
        }


def notice_bound(
    posture: SocketPosture,
    *,
    mode: str = "waiting",
    read_timeout_s: float | None = None,
    tcp_retries2: int = DEFAULT_TCP_RETRIES2,
) -> Bound:
    """How long ``posture`` takes to notice a peer that died while the client was in
    ``mode`` ("waiting" or "in_flight"); ``read_timeout_s`` an application deadline
    known from elsewhere (None: none known)."""
    if mode not in MODES:
        raise ValueError(f"mode: {mode!r} is not valid; allowed: {', '.join(MODES)}")
    kernel = _waiting(posture) if mode == "waiting" else _in_flight(posture, tcp_retries2)
    if read_timeout_s is not None and (kernel.seconds is None or read_timeout_s < kernel.seconds):
        return Bound(read_timeout_s, True, "read_timeout")
    return kernel


def worst_bound(bounds: Iterable[Bound]) -> Bound:
    """The slowest of several connections' bounds: never beats any time, and an unknown
    one makes the whole unknown unless another is already never."""
    bounds = list(bounds)
    if not bounds:
        return Bound(None, False, UNKNOWN, "no connection was sampled")
    if any(b.never for b in bounds):
        return next(b for b in bounds if b.never)
    unknown = [b for b in bounds if not b.known]
    if unknown:
        return unknown[0]
    return max(bounds, key=lambda b: b.seconds or 0.0)


def retransmission_give_up_s(tcp_retries2: int = DEFAULT_TCP_RETRIES2) -> float:
    """When the kernel gives up retransmitting unacknowledged data (``tcp_retries2``
    backed-off RTOs from TCP_RTO_MIN, each capped at TCP_RTO_MAX): 924.6 s at 15."""
    return round(sum(min(_RTO_MIN_S * 2**i, _RTO_MAX_S) for i in range(tcp_retries2 + 1)), 1)


def describe(posture: SocketPosture) -> str:
    """One compact line: ``ESTABLISHED keepalive 30/10x3 user-timeout off nodelay``."""
    ka = posture.keepalive
    if ka.enabled == UNKNOWN:
        keep = "keepalive unknown"
    elif not ka.enabled:
        keep = "keepalive off"
    elif UNKNOWN in (ka.idle_s, ka.interval_s, ka.count):
        keep = "keepalive on"
    else:
        keep = f"keepalive {_num(ka.idle_s)}/{_num(ka.interval_s)}x{ka.count}"
    ut = posture.user_timeout_s
    user = "user-timeout " + (UNKNOWN if ut == UNKNOWN else "off" if ut is None else f"{_num(ut)}s")
    nd = posture.nodelay
    nodelay = "nodelay unknown" if nd == UNKNOWN else ("nodelay" if nd else "no-nodelay")
    parts = [posture.state, keep, user, nodelay]
    if posture.timer not in ("off", UNKNOWN):
        parts.append(f"timer {posture.timer} {_num(posture.timer_s)}s")
    return " ".join(str(p) for p in parts)


# --------------------------------------------------------------------------- helpers


def _waiting(p: SocketPosture) -> Bound:
    ka = p.keepalive
    if ka.enabled == UNKNOWN:
        return Bound(None, False, UNKNOWN, p.reason or "SO_KEEPALIVE unknown")
    if not ka.enabled:
        return Bound(None, True, "never")
    idle, intvl, cnt = ka.idle_s, ka.interval_s, ka.count
    if UNKNOWN in (idle, intvl, cnt) or p.user_timeout_s == UNKNOWN:
        return Bound(None, False, UNKNOWN, p.reason or "keepalive timing unknown")
    assert isinstance(idle, int | float) and isinstance(intvl, int | float)
    assert isinstance(cnt, int)
    ut = p.user_timeout_s
    if isinstance(ut, int | float) and ut > 0:
        # Given up at the first probe (k >= 1 sent) once the user timeout has passed.
        k = max(1, math.ceil((ut - idle) / intvl)) if intvl > 0 else 1
        return Bound(float(idle + k * intvl), True, "keepalive+user_timeout")
    return Bound(float(idle + intvl * cnt), True, "keepalive")


def _in_flight(p: SocketPosture, tcp_retries2: int) -> Bound:
    ut = p.user_timeout_s
    if ut == UNKNOWN:
        return Bound(None, False, UNKNOWN, p.reason or "TCP_USER_TIMEOUT unknown")
    if isinstance(ut, int | float) and ut > 0:
        return Bound(float(ut), True, "user_timeout")
    return Bound(retransmission_give_up_s(tcp_retries2), True, "retransmission")


def _num(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return f"{value:.3g}" if isinstance(value, float) else str(value)
