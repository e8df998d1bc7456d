"""When the kernel last received data on a TCP socket (``TCP_INFO``'s ``last_data_recv``).

What this is for: the time a request *arrived*, not the time a busy event loop got round
to parsing it. The judge compares request start times with the moment a client's call
returned (``late_requests``); on a loaded machine the server's loop can read a request
a few hundred milliseconds after the client sent it, and a request sent before the call
gave up would count as sent after it. The kernel stamps every data segment it receives
(``icsk_ack.lrcvtime``, in jiffies) and reports the age of the last one in
milliseconds; :func:`received_at` turns that into a ``time.monotonic()`` reading (the
kernel's jiffies and ``CLOCK_MONOTONIC`` advance together).

Precision: one kernel tick (1-10 ms, ``CONFIG_HZ``), either way: :data:`TICK_S` bounds
it. Off Linux (no known ``tcp_info`` layout) or on a socket that is gone, the answer is
``now``: what a reader without the kernel's stamp would have used.

Platform code is a pure function of constants (:func:`layout`), so every branch is
tested on Linux.
"""

from __future__ import annotations

import socket
import struct
import sys
import time

__all__ = ["LAYOUTS", "TICK_S", "layout", "received_at"]

#: Platform prefix -> (level, option, byte offset of the u32 ``tcpi_last_data_recv``).
#: Linux's ``struct tcp_info``: 8 bytes of u8 fields, then u32 rto, ato, snd_mss,
#: rcv_mss, unacked, sacked, lost, retrans, fackets, last_data_sent, last_ack_sent,
#: last_data_recv (include/uapi/linux/tcp.h; unchanged since 2.6).
LAYOUTS: dict[str, tuple[int, int, int]] = {"linux": (6, 11, 52)}
#: The widest kernel tick (CONFIG_HZ=100): how far a reading may be off either way.
TICK_S = 0.010
_U32 = struct.Struct("=I")


def layout(platform: str | None = None) -> tuple[int, int, int] | None:
    """(level, option, offset) of ``last_data_recv`` on ``platform``; None: unknown."""
    name = platform or sys.platform
    for prefix, where in LAYOUTS.items():
        if name.startswith(prefix):
            return where
    return None


def received_at(
    sock: socket.socket | None, *, now: float | None = None, platform: str | None = None
) -> float:
    """The ``time.monotonic()`` at which ``sock`` last received data (``now`` when the
    kernel cannot say)."""
    now = time.monotonic() if now is None else now
    where = layout(platform)
    if sock is None or where is None:
        return now
    level, option, offset = where
    try:
        raw = sock.getsockopt(level, option, offset + _U32.size)
    except OSError:  # closed under us, or not a TCP socket
        return now
    if len(raw) < offset + _U32.size:
        return now
    (age_ms,) = _U32.unpack_from(raw, offset)
    return now - age_ms / 1000.0
