"""TCP keepalive socket options per platform, as a pure function.

``keepalive_options(platform, constants, settings)`` returns the ``(level, option, value)``
triples to hand ``httpx.HTTPTransport(socket_options=...)``. It reads nothing from the
running interpreter: the platform name and the table of socket constants are arguments,
so the Linux, macOS and Windows branches are all unit-tested on Linux with fake tables.
``socket_constants()`` builds the real table from the :mod:`socket` module.

Why both keepalive and TCP_USER_TIMEOUT: keepalive probes only run while the
connection is idle from the kernel's point of view. Once the client has written data
the peer never acknowledges (a request into a black hole), the kernel retransmits
instead, keepalive is suspended, and only TCP_USER_TIMEOUT bounds that (measured:
~15 min without it, 3.7 s with 3 s). Neither helps against a live middlebox that holds
a silent leg open: that needs an application deadline (``watchdog.py``).

Windows: nothing. Per-socket keepalive timing there needs ``WSAIoctl(SIO_KEEPALIVE_VALS)``
on the socket, which a socket-options list cannot express; SO_KEEPALIVE alone would use
the 2-hour system default, so we add nothing rather than something misleading.
"""

from __future__ import annotations

import math
import socket
from collections.abc import Mapping

from harness.client.settings import ClientSettings

__all__ = ["SocketOption", "keepalive_options", "socket_constants"]

SocketOption = tuple[int, int, int]

#: The constant names the builder may use, looked up in the ``constants`` table.
CONSTANT_NAMES = (
    "SOL_SOCKET",
    "IPPROTO_TCP",
    "SO_KEEPALIVE",
    "TCP_KEEPIDLE",
    "TCP_KEEPALIVE",
    "TCP_KEEPINTVL",
    "TCP_KEEPCNT",
    "TCP_USER_TIMEOUT",
)


def keepalive_options(
    platform: str, constants: Mapping[str, int], settings: ClientSettings
) -> list[SocketOption]:
    """The socket options for ``platform`` (``sys.platform`` style: "linux", "darwin",
    "win32", ...), using only the constants present in ``constants``."""
    if not settings.keepalive or platform.startswith(("win32", "cygwin")):
        return []
    sol, tcp = constants.get("SOL_SOCKET"), constants.get("IPPROTO_TCP")
    if sol is None or tcp is None or "SO_KEEPALIVE" not in constants:
        return []
    options: list[SocketOption] = [(sol, constants["SO_KEEPALIVE"], 1)]
    if platform.startswith("linux") and "TCP_KEEPIDLE" in constants:
        options.append((tcp, constants["TCP_KEEPIDLE"], settings.keepalive_idle_s))
    elif platform.startswith("darwin") and "TCP_KEEPALIVE" in constants:
        # macOS names the idle time TCP_KEEPALIVE (seconds).
        options.append((tcp, constants["TCP_KEEPALIVE"], settings.keepalive_idle_s))
    elif "TCP_KEEPIDLE" in constants:  # BSDs and others that follow Linux's names
        options.append((tcp, constants["TCP_KEEPIDLE"], settings.keepalive_idle_s))
    if "TCP_KEEPINTVL" in constants:
        options.append((tcp, constants["TCP_KEEPINTVL"], settings.keepalive_interval_s))
    if "TCP_KEEPCNT" in constants:
        options.append((tcp, constants["TCP_KEEPCNT"], settings.keepalive_count))
    if settings.tcp_user_timeout_s is not None and "TCP_USER_TIMEOUT" in constants:
        # milliseconds; at least 1 so a tiny setting never means "system default" (0).
        ms = max(1, math.ceil(settings.tcp_user_timeout_s * 1000))
        options.append((tcp, constants["TCP_USER_TIMEOUT"], ms))
    return options


def socket_constants(module: object = socket) -> dict[str, int]:
    """The constants of :data:`CONSTANT_NAMES` that ``module`` (default :mod:`socket`) has."""
    return {name: int(getattr(module, name)) for name in CONSTANT_NAMES if hasattr(module, name)}
