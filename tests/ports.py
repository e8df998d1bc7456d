"""A loopback port that refuses connections for as long as a test needs it to.

A port freed by closing a server is not dead: another test worker's next server can be
given the same number at once (CI, 2026-12-02: a "dead" upstream answered 200 with a
stream). A socket bound without ``SO_REUSEADDR`` and never listening holds the number,
so nothing else can bind it, and the kernel answers every connection to it with a reset
(``ECONNREFUSED``).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["refused_port"]


@contextmanager
def refused_port(host: str = "127.0.0.1") -> Iterator[int]:
    """A port on ``host`` whose connections are refused until the block ends."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as holder:
        holder.bind((host, 0))
        yield int(holder.getsockname()[1])
