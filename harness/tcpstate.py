"""Kernel TCP socket states, read from ``/proc/net/tcp`` and ``/proc/net/tcp6``.

What this is for: leak checks (sockets a process still holds in ESTABLISHED or
CLOSE_WAIT after a call returned) and timelines that show the kernel's view of one
connection over time: its state, the pending timer (keepalive or retransmit) with the
time left on it, the retransmission count and the keepalive/zero-window probes sent.

What it is not: a socket monitor. Nothing here polls; callers take a
:func:`snapshot` when something happened (or on their own bounded schedule).

Reading another network namespace needs no ``nsenter``: ``/proc/<pid>/net/tcp``
shows the table of the namespace that ``pid`` lives in, so pass ``netns_pid`` (any
process inside that namespace, e.g. a child started with ``ip netns exec``).

The columns of one line of ``/proc/net/tcp`` (``tcp4_seq_show`` in the kernel)::

    sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...

- ``st``: state code (``STATES`` maps it to a name);
- ``tr``: which timer is pending (``TIMERS``: off, retransmit, keepalive, time_wait,
  probe); ``tm->when``: clock ticks until it fires (``clk_tck`` per second);
- ``retrnsmt``: consecutive unanswered retransmissions (``icsk_retransmits``);
- ``timeout``: probes sent without answer (``icsk_probes_out``: keepalive or
  zero-window probes);
- ``inode``: the socket inode, matched against ``/proc/<pid>/fd`` links
  ``socket:[inode]`` to attribute sockets to a process (0 for TIME_WAIT).

Addresses are printed as native-endian 32-bit words, so they are decoded with the
host's byte order.

Public API::

    snapshot(*, netns_pid=None, ports=None, inodes=None) -> list[TcpSocket]  TCP sockets of a namespace
    sockets_of_pid(pid, *, netns_pid=None) -> list[TcpSocket]  those a process holds open
    socket_inodes(pid) -> frozenset[int]
    select(sockets, *, local_port=None, remote_port=None, state=None) -> list[TcpSocket]
    count_states(sockets) -> dict[str, int]
    parse_proc_net_tcp(text, *, clk_tck=..., ports=None, inodes=None) -> list[TcpSocket]   pure parser
"""

from __future__ import annotations

import ipaddress
import os
import struct
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass

__all__ = [
    "STATES",
    "TIMERS",
    "TcpSocket",
    "TcpStateError",
    "count_states",
    "parse_proc_net_tcp",
    "select",
    "snapshot",
    "socket_inodes",
    "sockets_of_pid",
]

#: State codes of ``include/net/tcp_states.h``.
STATES: dict[int, str] = {
    0x01: "ESTABLISHED",
    0x02: "SYN_SENT",
    0x03: "SYN_RECV",
    0x04: "FIN_WAIT1",
    0x05: "FIN_WAIT2",
    0x06: "TIME_WAIT",
    0x07: "CLOSE",
    0x08: "CLOSE_WAIT",
    0x09: "LAST_ACK",
    0x0A: "LISTEN",
    0x0B: "CLOSING",
    0x0C: "NEW_SYN_RECV",
}

#: The ``tr`` column: which timer is pending.
TIMERS: dict[int, str] = {
    0: "off",
    1: "retransmit",  # also RTO, tail loss probe, reorder timeout
    2: "keepalive",  # sk_timer: keepalive (or SYN-ACK/FIN_WAIT2 timers)
    3: "time_wait",
    4: "probe",  # zero-window probe
}


class TcpStateError(RuntimeError):
    """A /proc table could not be read or parsed; says which file and why."""


@dataclass(frozen=True)
class TcpSocket:
    """One kernel TCP socket as ``/proc/net/tcp*`` shows it."""

    family: int  # 4 or 6
    local_host: str
    local_port: int
    remote_host: str
    remote_port: int
    state: str
    tx_queue: int  # bytes not yet acked by the peer (ESTABLISHED) / backlog (LISTEN)
    rx_queue: int  # bytes received, not read by the application
    timer: str  # one of TIMERS' values
    timer_s: float  # seconds until the pending timer fires (0 when off or overdue)
    retransmits: int
    probes: int  # keepalive / zero-window probes sent without answer
    uid: int
    inode: int

    @property
    def local(self) -> tuple[str, int]:
        return (self.local_host, self.local_port)

    @property
    def remote(self) -> tuple[str, int]:
        return (self.remote_host, self.remote_port)

    def describe(self) -> str:
        """One line for a timeline: ``ESTABLISHED 127.0.0.1:5000->127.0.0.1:41000 keepalive 0.98s``."""
        text = f"{self.state} {self.local_host}:{self.local_port}->{self.remote_host}:{self.remote_port}"
        if self.timer != "off":
            text += f" {self.timer} {self.timer_s:.2f}s"
        if self.retransmits:
            text += f" retrans={self.retransmits}"
        if self.probes:
            text += f" probes={self.probes}"
        if self.tx_queue or self.rx_queue:
            text += f" txq={self.tx_queue} rxq={self.rx_queue}"
        return text

    def to_dict(self) -> dict[str, object]:
        return {
            "family": self.family,
            "local": f"{self.local_host}:{self.local_port}",
            "remote": f"{self.remote_host}:{self.remote_port}",
            "state": self.state,
            "tx_queue": self.tx_queue,
            "rx_queue": self.rx_queue,
            "timer": self.timer,
            "timer_s": round(self.timer_s, 3),
            "retransmits": self.retransmits,
            "probes": self.probes,
            "inode": self.inode,
        }


def snapshot(
    *,
    netns_pid: int | None = None,
    ports: Collection[int] | None = None,
    inodes: Collection[int] | None = None,
    proc: str = "/proc",
) -> list[TcpSocket]:
    """Every TCP socket (IPv4 and IPv6) of the network namespace of ``netns_pid``
    (default: this process's namespace); with ``ports``, only sockets whose local or
    remote port is one of them, with ``inodes`` only those sockets (both much cheaper
    on a busy host: the rest is not parsed).

    Reading the table costs the kernel ~10 ms per thousand sockets: call it from a
    worker thread, not from an event loop that must stay responsive."""
    base = f"{proc}/{netns_pid if netns_pid is not None else 'self'}/net"
    out: list[TcpSocket] = []
    for name in ("tcp", "tcp6"):
        path = f"{base}/{name}"
        try:
            with open(path, encoding="ascii") as fh:
                text = fh.read()
        except FileNotFoundError:
            if name == "tcp6":  # IPv6 disabled in this kernel/namespace
                continue
            raise TcpStateError(f"{path}: not found (is this Linux with procfs?)") from None
        except OSError as exc:
            raise TcpStateError(f"{path}: {exc.strerror}") from exc
        out.extend(parse_proc_net_tcp(text, path=path, ports=ports, inodes=inodes))
    return out


def socket_inodes(pid: int, *, proc: str = "/proc") -> frozenset[int]:
    """Inodes of the sockets process ``pid`` holds open (from ``/proc/<pid>/fd``)."""
    fd_dir = f"{proc}/{pid}/fd"
    try:
        names = os.listdir(fd_dir)
    except OSError as exc:
        raise TcpStateError(f"{fd_dir}: {exc.strerror}") from exc
    inodes = set()
    for name in names:
        try:
            target = os.readlink(f"{fd_dir}/{name}")
        except OSError:  # the fd was closed between listdir and readlink
            continue
        if target.startswith("socket:[") and target.endswith("]"):
            inodes.add(int(target[8:-1]))
    return frozenset(inodes)


def sockets_of_pid(
    pid: int, *, netns_pid: int | None = None, proc: str = "/proc"
) -> list[TcpSocket]:
    """The TCP sockets process ``pid`` holds open. The table is read from ``pid``'s own
    namespace unless ``netns_pid`` names another process to read it from."""
    inodes = socket_inodes(pid, proc=proc)
    table = snapshot(netns_pid=pid if netns_pid is None else netns_pid, inodes=inodes, proc=proc)
    return [s for s in table if s.inode and s.inode in inodes]


def select(
    sockets: Iterable[TcpSocket],
    *,
    local_port: int | None = None,
    remote_port: int | None = None,
    state: str | Iterable[str] | None = None,
) -> list[TcpSocket]:
    """Sockets matching every given criterion (a state name or a set of names)."""
    states = None if state is None else ({state} if isinstance(state, str) else set(state))
    if states is not None:
        unknown = states - set(STATES.values())
        if unknown:
            raise ValueError(
                f"state: {sorted(unknown)} not valid; allowed: {', '.join(STATES.values())}"
            )
    return [
        s
        for s in sockets
        if (local_port is None or s.local_port == local_port)
        and (remote_port is None or s.remote_port == remote_port)
        and (states is None or s.state in states)
    ]


def count_states(sockets: Iterable[TcpSocket]) -> dict[str, int]:
    """``{"ESTABLISHED": 2, "CLOSE_WAIT": 1}``: only states that occur."""
    return dict(Counter(s.state for s in sockets))


def parse_proc_net_tcp(
    text: str,
    *,
    clk_tck: int | None = None,
    path: str = "/proc/net/tcp",
    ports: Collection[int] | None = None,
    inodes: Collection[int] | None = None,
) -> list[TcpSocket]:
    """Parse the text of ``/proc/net/tcp`` or ``/proc/net/tcp6`` (family from the
    address width). Pure: ``clk_tck`` defaults to this host's ``SC_CLK_TCK``. With
    ``ports``, lines whose local and remote ports are both outside it are skipped; with
    ``inodes``, lines whose inode is not one of them."""
    tck = clk_tck if clk_tck is not None else _CLK_TCK
    wanted = None if ports is None else {f"{p:04X}" for p in ports}
    wanted_inodes = None if inodes is None else {str(i) for i in inodes}
    out = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields or fields[0] == "sl":
            continue
        if wanted is not None and len(fields) > 2:
            if fields[1][-4:].upper() not in wanted and fields[2][-4:].upper() not in wanted:
                continue
        if wanted_inodes is not None and (len(fields) <= 9 or fields[9] not in wanted_inodes):
            continue
        try:
            out.append(_parse_line(fields, tck))
        except (ValueError, IndexError, KeyError, struct.error) as exc:
            raise TcpStateError(f"{path}:{lineno}: cannot parse {line.strip()!r}") from exc
    return out


# --------------------------------------------------------------------------- helpers

_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _parse_line(f: list[str], tck: int) -> TcpSocket:
    family, lhost, lport = _address(f[1])
    _, rhost, rport = _address(f[2])
    tx, rx = (int(x, 16) for x in f[4].split(":"))
    tr, when = f[5].split(":")
    return TcpSocket(
        family=family,
        local_host=lhost,
        local_port=lport,
        remote_host=rhost,
        remote_port=rport,
        state=STATES[int(f[3], 16)],
        tx_queue=tx,
        rx_queue=rx,
        timer=TIMERS.get(int(tr, 16), f"timer{int(tr, 16)}"),
        timer_s=_ticks(int(when, 16)) / tck,
        retransmits=int(f[6], 16),
        probes=int(f[8]),
        uid=int(f[7]),
        inode=int(f[9]),
    )


def _address(text: str) -> tuple[int, str, int]:
    host_hex, port_hex = text.split(":")
    if len(host_hex) == 8:
        raw = struct.pack("=I", int(host_hex, 16))
        return 4, str(ipaddress.IPv4Address(raw)), int(port_hex, 16)
    if len(host_hex) == 32:
        raw = b"".join(struct.pack("=I", int(host_hex[i : i + 8], 16)) for i in range(0, 32, 8))
        addr = ipaddress.IPv6Address(raw)
        mapped = addr.ipv4_mapped
        return 6, str(mapped if mapped is not None else addr), int(port_hex, 16)
    raise ValueError(f"address {text!r}")


def _ticks(value: int) -> int:
    # Older kernels print an overdue timer as a negative delta in unsigned hex.
    return 0 if value >= 0x80000000 else value
