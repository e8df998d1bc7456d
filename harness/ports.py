"""A loopback port for another program to bind by number.

A program the harness starts on a port it names (the LiteLLM proxy, the Toxiproxy server)
binds that port only after its own start-up: the proxy imports for seconds. A port taken
with a port-0 bind comes from the kernel's ephemeral range, which every other port-0 bind
and every outgoing connection on the machine draws from too, so under a busy test run a
client socket took the proxy's port first and the proxy exited ("address already in
use"). A port outside that range is handed out by nobody but a picker like this one; it
is chosen at random, so two pickers rarely meet, and checked free by a bind.

Not here: picking a port for a socket of our own (bind port 0 and keep the socket).
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

__all__ = ["DEFAULT_EPHEMERAL", "LOWEST", "ephemeral_range", "named_port", "named_ports"]

#: Linux's default ``ip_local_port_range``, for a kernel that does not say.
DEFAULT_EPHEMERAL = (32768, 60999)
#: The lowest port handed out: below it live the well-known and registered services a
#: developer's machine may run (Toxiproxy's API is 8474).
LOWEST = 10000
#: Tries at a port that is free; each is a random pick, so a busy range rarely needs two.
_TRIES = 64
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ephemeral_range(text: str | None = None) -> tuple[int, int]:
    """The kernel's ephemeral range, from ``ip_local_port_range``'s text (read from
    /proc when not given); the Linux default where there is none or it is malformed."""
    if text is None:
        try:
            text = _RANGE_FILE.read_text()
        except OSError:
            return DEFAULT_EPHEMERAL
    parts = text.split()
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return DEFAULT_EPHEMERAL
    low, high = int(parts[0]), int(parts[1])
    return (low, high) if 0 < low <= high <= 65535 else DEFAULT_EPHEMERAL


def named_ports(ephemeral: tuple[int, int]) -> list[range]:
    """The ports outside ``ephemeral`` from :data:`LOWEST` up: where a port for another
    program is picked."""
    low, high = ephemeral
    spans = [range(LOWEST, min(low, 65536)), range(max(high + 1, LOWEST), 65536)]
    return [span for span in spans if len(span) > 0]


def named_port(host: str = "127.0.0.1", *, rng: random.Random | None = None) -> int:
    """A port outside the kernel's ephemeral range, free on ``host`` a moment ago."""
    spans = named_ports(ephemeral_range())
    pick = rng or random.SystemRandom()
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    if not spans:  # a kernel whose ephemeral range is everything: take one of its ports
        with socket.socket(family) as s:
            s.bind((host, 0))
            return int(s.getsockname()[1])
    sizes = [len(span) for span in spans]
    for _ in range(_TRIES):
        span = pick.choices(spans, weights=sizes)[0]
        port = pick.choice(span)
        with socket.socket(family) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
        return port
    raise OSError(f"no free port on {host} outside the ephemeral range after {_TRIES} tries")
