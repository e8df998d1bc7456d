"""Read the posture of a process tree's client sockets from the live sockets (Linux).

``read_tree(pid, remote_ports=..., peer_ports=...)`` walks ``pid`` and its descendants
(``/proc/<pid>/task/*/children``), maps each socket descriptor (``/proc/<pid>/fd`` ->
``socket:[inode]``) to its line in ``/proc/<pid>/net/tcp{,6}`` (the table of that
process's network namespace), keeps the sockets whose remote port is one the target
was told to dial (the fault server, relay, Toxiproxy or gateway) or whose local port
is a peer port the server saw accepted, and reads each one's options: it takes a
duplicate of the target's descriptor with ``pidfd_open`` + ``pidfd_getfd`` and asks it
``getsockopt``. Nothing in the target cooperates; the duplicate is closed at once (a
duplicate never shuts the connection down).

Permission: ``pidfd_getfd`` needs ptrace access to the target (root or CAP_SYS_PTRACE;
as the same user, Yama's ``ptrace_scope`` 1 still allows it for a descendant, which
every target child is). Without it -- or on a kernel older than 5.6, or off Linux --
the options are unknown (``source`` "proc" with the kernel's table, or "unknown"), with
the reason; nothing is guessed.

Not here: what the options imply (``harness.posture.facts``), when to read
(``harness.posture.sampler``).
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket
import sys
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from harness import tcpstate
from harness.leaks import descendants
from harness.posture import platform
from harness.posture.facts import UNKNOWN, Keepalive, SocketPosture

__all__ = ["Found", "Reading", "read_options", "read_tree"]

_STATES_WITH_TIMER_TRUTH = ("ESTABLISHED", "CLOSE_WAIT")


@dataclass(frozen=True)
class Found:
    """One client socket of the tree with its posture (``conn`` 0: not numbered yet)."""

    inode: int
    posture: SocketPosture


@dataclass(frozen=True)
class Reading:
    """What one read of a process tree found; ``reason`` says why nothing could be."""

    sockets: tuple[Found, ...] = ()
    reason: str = ""
    readable: bool = True
    pids: tuple[int, ...] = field(default=())


def read_tree(
    pid: int,
    *,
    remote_ports: Collection[int] = (),
    peer_ports: Collection[int] = (),
    proc: str = "/proc",
    sys_platform: str | None = None,
) -> Reading:
    """The client sockets of ``pid``'s tree to ``remote_ports`` (or from ``peer_ports``),
    each with its options read from the socket itself where permitted."""
    if not platform.is_linux(sys_platform):
        why = f"socket posture is read on Linux only (this is {sys_platform or sys.platform})"
        return Reading(reason=why, readable=False)
    pids = (pid, *descendants(pid, proc=_as_path(proc)))
    wanted = _Wanted(set(remote_ports), set(peer_ports))
    # inode -> (pid, options, our duplicate); the duplicates stay open until the table is
    # read, so a socket the target closes meanwhile is still there to be seen (its FIN
    # waits those few milliseconds).
    held: dict[int, tuple[int, dict[str, object], socket.socket]] = {}
    unread: dict[int, tuple[int, str]] = {}  # inode -> (pid, why the options are unknown)
    try:
        for p in pids:
            try:
                _read_process(p, proc, wanted, held, unread)
            except _Refused as exc:
                return Reading(reason=str(exc), readable=False, pids=pids)
        inodes = set(held) | set(unread)
        if not inodes:
            return Reading(pids=pids)
        try:
            table = tcpstate.snapshot(netns_pid=pid, inodes=inodes, proc=proc)
        except tcpstate.TcpStateError as exc:
            return Reading(reason=str(exc), readable=False, pids=pids)
    finally:
        for _, _, dup in held.values():
            dup.close()  # our duplicate only: the target's descriptor stays
    found = []
    for sock in table:
        if sock.inode in held:
            owner, options, _ = held[sock.inode]
            found.append(Found(sock.inode, _posture(sock, owner, options, "")))
        elif sock.inode in unread and wanted.matches(sock.remote_port, sock.local_port):
            owner, why = unread[sock.inode]
            found.append(Found(sock.inode, _posture(sock, owner, None, why)))
    return Reading(sockets=tuple(found), pids=pids)


def read_options(pid: int, fd: int) -> dict[str, object]:
    """The options of descriptor ``fd`` of process ``pid``, read from a duplicate.
    Raises ``OSError`` (EPERM without ptrace access, ENOSYS on an old kernel)."""
    pidfd = _pidfd_open(pid)
    try:
        return _options_of(_pidfd_getfd(pidfd, fd))
    finally:
        os.close(pidfd)


# --------------------------------------------------------------------------- helpers


class _Refused(Exception):
    """A process's descriptors may not be listed (another user's, no privilege)."""


@dataclass(frozen=True)
class _Wanted:
    remote_ports: set[int]
    peer_ports: set[int]

    def matches(self, remote_port: int, local_port: int) -> bool:
        return remote_port in self.remote_ports or local_port in self.peer_ports


def _read_process(
    pid: int,
    proc: str,
    wanted: _Wanted,
    held: dict[int, tuple[int, dict[str, object], socket.socket]],
    unread: dict[int, tuple[int, str]],
) -> None:
    """Read the options of every wanted TCP socket of one process. Each descriptor is
    duplicated first (``pidfd_getfd``), so a socket the target closes meanwhile is still
    the same socket while it is read; where duplicating is refused, its inodes go to
    ``unread`` with the reason (the kernel's table still says something)."""
    fds = _socket_fds(pid, proc)
    if not fds:
        return
    try:
        pidfd = _pidfd_open(pid)
    except OSError as exc:
        why = _why("pidfd_open", pid, exc)
        unread.update({inode: (pid, why) for inode in fds if inode not in held})
        return
    try:
        for inode, fd in fds.items():
            if inode in held or inode in unread:
                continue
            try:
                dup = _pidfd_getfd(pidfd, fd)
            except OSError as exc:
                if exc.errno == errno.EBADF:
                    continue  # closed since the listing: not a socket any more
                unread[inode] = (pid, _why("pidfd_getfd", pid, exc))
                continue
            if os.fstat(dup).st_ino != inode:
                # closed since the listing and its number reused by another file or
                # socket (seen: ENOTSOCK from socket() in a hermes run): not that socket
                os.close(dup)
                continue
            sock = socket.socket(fileno=dup)
            options = _options_if_wanted(sock, wanted)
            if options is None:
                sock.close()
            else:
                held[inode] = (pid, options, sock)
    finally:
        os.close(pidfd)


def _posture(
    sock: tcpstate.TcpSocket, pid: int, options: dict[str, object] | None, why: str
) -> SocketPosture:
    kernel = {
        "state": sock.state,
        "timer": sock.timer,
        "timer_s": round(sock.timer_s, 3),
        "retransmits": sock.retransmits,
        "probes": sock.probes,
        "tx_queue": sock.tx_queue,
        "rx_queue": sock.rx_queue,
    }
    where = {
        "conn": 0,
        "pid": pid,
        "local": f"{sock.local_host}:{sock.local_port}",
        "remote": f"{sock.remote_host}:{sock.remote_port}",
    }
    if options is not None:
        return SocketPosture(source="getsockopt", **where, **kernel, **options)  # type: ignore[arg-type]
    return SocketPosture(
        source="proc",
        keepalive=Keepalive(enabled=_keepalive_from_timer(sock)),
        reason=why,
        **where,  # type: ignore[arg-type]
        **kernel,  # type: ignore[arg-type]
    )


def _keepalive_from_timer(sock: tcpstate.TcpSocket) -> bool | str:
    """SO_KEEPALIVE as the kernel's table shows it: on an ESTABLISHED socket with
    nothing unacknowledged the keepalive timer is armed exactly when it is set; a
    pending retransmit or probe timer hides it."""
    if sock.state not in _STATES_WITH_TIMER_TRUTH or sock.tx_queue:
        return UNKNOWN
    if sock.timer == "keepalive":
        return True
    return False if sock.timer == "off" else UNKNOWN


def _options_if_wanted(s: socket.socket, wanted: _Wanted) -> dict[str, object] | None:
    """The options of ``s`` (a duplicate) when it is a connected TCP socket ``wanted``
    names; None otherwise."""
    if s.type != socket.SOCK_STREAM or s.family not in (socket.AF_INET, socket.AF_INET6):
        return None
    try:
        remote, local = s.getpeername()[1], s.getsockname()[1]
        return _options(s) if wanted.matches(remote, local) else None
    except OSError:  # not connected (a listener, a socket mid-connect), or gone
        return None


def _options_of(dup: int) -> dict[str, object]:
    s = socket.socket(fileno=dup)
    try:
        return _options(s)
    finally:
        s.close()


def _options(s: socket.socket) -> dict[str, object]:
    n = platform.option_numbers()
    sol, tcp = n["SOL_SOCKET"], n["IPPROTO_TCP"]
    user_ms = s.getsockopt(tcp, n["TCP_USER_TIMEOUT"])
    return {
        "keepalive": Keepalive(
            enabled=bool(s.getsockopt(sol, n["SO_KEEPALIVE"])),
            idle_s=float(s.getsockopt(tcp, n["TCP_KEEPIDLE"])),
            interval_s=float(s.getsockopt(tcp, n["TCP_KEEPINTVL"])),
            count=int(s.getsockopt(tcp, n["TCP_KEEPCNT"])),
        ),
        "user_timeout_s": user_ms / 1000.0 if user_ms else None,
        "nodelay": bool(s.getsockopt(tcp, n["TCP_NODELAY"])),
    }


def _socket_fds(pid: int, proc: str) -> dict[int, int]:
    """``{socket inode: fd}`` of one process (empty when it is gone); raises
    :class:`_Refused` when its descriptors may not be listed."""
    out: dict[int, int] = {}
    base = f"{proc}/{pid}/fd"
    try:
        names = os.listdir(base)
    except PermissionError as exc:
        raise _Refused(f"{base}: {exc.strerror} (needs the target's user or root)") from exc
    except OSError:
        return out
    for name in names:
        try:
            target = os.readlink(f"{base}/{name}")
        except OSError:  # closed between the listing and the read
            continue
        if target.startswith("socket:[") and target.endswith("]"):
            out.setdefault(int(target[8:-1]), int(name))
    return out


def _pidfd_open(pid: int) -> int:
    if hasattr(os, "pidfd_open"):
        return os.pidfd_open(pid)
    return _syscall("pidfd_open", pid, 0)


def _pidfd_getfd(pidfd: int, fd: int) -> int:
    return _syscall("pidfd_getfd", pidfd, fd, 0)


_libc = None


def _syscall(name: str, *args: int) -> int:
    global _libc
    number = platform.syscall_number(name)
    if number is None:
        raise OSError(errno.ENOSYS, f"{name}: no syscall number known for this machine")
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    result = _libc.syscall(ctypes.c_long(number), *(ctypes.c_long(a) for a in args))
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return int(result)


def _why(call: str, pid: int, exc: OSError) -> str:
    text = f"{call}(pid {pid}): {exc.strerror or exc}"
    if exc.errno in (errno.EPERM, errno.EACCES):
        text += " (needs ptrace access to the target: root, CAP_SYS_PTRACE, or Yama ptrace_scope <= 1 for a descendant)"
    elif exc.errno == errno.ENOSYS:
        text += " (needs Linux 5.6 or later)"
    return text


def _as_path(proc: str) -> Path:
    return Path(proc)
