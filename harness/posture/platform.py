"""What the posture reader needs from the platform: syscall numbers and option numbers.

``pidfd_open`` / ``pidfd_getfd`` are Linux system calls (5.3 / 5.6). Python has
``os.pidfd_open`` (3.9+, Linux) but no ``pidfd_getfd``, so the reader calls it through
``ctypes`` by number; the numbers live here, per machine, so a platform without them
says "unknown" instead of calling a wrong syscall. (Both come from the generic syscall
table, so they are the same on every architecture Linux has added since 5.6.)

Socket option numbers come from :mod:`socket` where it has them, else Linux's values
(``include/uapi/linux/tcp.h``): an old Python may lack ``TCP_USER_TIMEOUT``.

Not here: reading anything (``harness.posture.reader``).
"""

from __future__ import annotations

import platform as _platform
import socket
import sys

__all__ = [
    "LINUX_OPTIONS",
    "SYSCALLS",
    "is_linux",
    "option_numbers",
    "syscall_number",
]

#: ``machine`` (``platform.machine()``) -> syscall name -> number.
SYSCALLS: dict[str, dict[str, int]] = {
    "x86_64": {"pidfd_open": 434, "pidfd_getfd": 438},
    "aarch64": {"pidfd_open": 434, "pidfd_getfd": 438},
    "arm64": {"pidfd_open": 434, "pidfd_getfd": 438},
}

#: Linux's option numbers (``SOL_SOCKET`` level for SO_*, ``IPPROTO_TCP`` for TCP_*).
LINUX_OPTIONS: dict[str, int] = {
    "SOL_SOCKET": 1,
    "IPPROTO_TCP": 6,
    "SO_KEEPALIVE": 9,
    "TCP_NODELAY": 1,
    "TCP_KEEPIDLE": 4,
    "TCP_KEEPINTVL": 5,
    "TCP_KEEPCNT": 6,
    "TCP_USER_TIMEOUT": 18,
}


def is_linux(platform: str | None = None) -> bool:
    return (platform or sys.platform).startswith("linux")


def syscall_number(name: str, machine: str | None = None) -> int | None:
    """The number of syscall ``name`` on ``machine`` (default: this one); None: unknown."""
    return SYSCALLS.get(machine or _platform.machine(), {}).get(name)


def option_numbers(module: object = socket) -> dict[str, int]:
    """The option numbers the reader uses: ``module``'s, else Linux's."""
    return {name: int(getattr(module, name, value)) for name, value in LINUX_OPTIONS.items()}
