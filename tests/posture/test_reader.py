"""The reader against real processes: options the test set on a child's socket come back
as set (through the whole process tree), and where they cannot be read they are
unknown with the reason -- never "off"."""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.posture import reader
from harness.posture.facts import UNKNOWN
from harness.posture.reader import read_tree

ROOT = Path(__file__).resolve().parents[2]

_CLIENT = """
import socket, sys
s = socket.create_connection(("127.0.0.1", {port}))
for level, name, value in {options!r}:
    s.setsockopt(level, name, value)
print("connected", flush=True)
sys.stdin.read()
"""
KEEPALIVE = [
    (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1),
    (socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 13),
    (socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 4),
    (socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 6),
    (socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, 2500),
    (socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),
]


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as srv:
        yield srv


def client(port: int, options, *, via_shell: bool = False) -> subprocess.Popen[str]:
    code = _CLIENT.format(port=port, options=options)
    # via_shell: the socket lives in a grandchild, as a command: target's program does
    argv = (
        ["sh", "-c", f'"{sys.executable}" -c "$0"', code]
        if via_shell
        else [
            sys.executable,
            "-c",
            code,
        ]
    )
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "connected\n"
    return proc


def finish(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=10)


@dataclass(frozen=True)
class Connected:
    """A client process connected to the listener: its process, the listener's port and
    the client's own (its socket's local port)."""

    proc: subprocess.Popen[str]
    port: int
    peer_port: int


@contextmanager
def connected(listener: socket.socket, options, *, via_shell: bool = False) -> Iterator[Connected]:
    """A client with ``options`` on its socket, accepted; both ends open for the block."""
    port = listener.getsockname()[1]
    proc = client(port, options, via_shell=via_shell)
    try:
        conn, peer = listener.accept()
        with conn:
            yield Connected(proc, port, peer[1])
    finally:
        finish(proc)


@pytest.mark.timeout(30)
def test_options_the_test_set_are_read_back_from_the_live_socket(listener):
    with connected(listener, KEEPALIVE) as c:
        reading = read_tree(c.proc.pid, remote_ports=[c.port])
        by_peer = read_tree(c.proc.pid, peer_ports=[c.peer_port])
    proc, port, peer_port = c.proc, c.port, c.peer_port
    assert reading.readable and len(reading.sockets) == 1
    p = reading.sockets[0].posture
    assert p.source == "getsockopt" and p.pid == proc.pid
    assert p.keepalive.to_dict() == {"enabled": True, "idle_s": 13.0, "interval_s": 4.0, "count": 6}
    assert (p.user_timeout_s, p.nodelay, p.state) == (2.5, True, "ESTABLISHED")
    assert p.timer == "keepalive" and 0 < p.timer_s <= 13
    assert p.local == f"127.0.0.1:{peer_port}" and p.remote == f"127.0.0.1:{port}"
    assert [f.posture.local for f in by_peer.sockets] == [p.local]


@pytest.mark.timeout(30)
def test_a_socket_with_no_options_reads_as_off_and_a_grandchilds_socket_is_found(listener):
    with connected(listener, [], via_shell=True) as c:
        reading = read_tree(c.proc.pid, remote_ports=[c.port])
    [found] = reading.sockets
    p = found.posture
    assert p.pid != c.proc.pid  # the shell's child holds it
    assert p.keepalive.enabled is False and p.user_timeout_s is None and p.timer == "off"


@pytest.mark.timeout(30)
def test_sockets_to_other_ports_are_not_the_clients(listener):
    with connected(listener, KEEPALIVE) as c:
        other = c.port + 1 if c.port < 65535 else 1
        assert read_tree(c.proc.pid, remote_ports=[other]).sockets == ()


def test_off_linux_nothing_is_read_and_the_reason_says_so():
    reading = read_tree(os.getpid(), remote_ports=[1], sys_platform="darwin")
    assert not reading.readable and "Linux only" in reading.reason


@pytest.mark.timeout(30)
def test_refused_duplicate_keeps_the_kernels_view_and_says_why(listener, monkeypatch):
    # Mock: pidfd_getfd refused (EPERM). As root here the real call always succeeds, and
    # the real refusal needs a process this user may list but not ptrace.
    def refuse(pidfd: int, fd: int) -> int:
        raise OSError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(reader, "_pidfd_getfd", refuse)
    with connected(listener, KEEPALIVE) as with_ka, connected(listener, []) as without:
        a = read_tree(with_ka.proc.pid, remote_ports=[with_ka.port]).sockets[0].posture
        b = read_tree(without.proc.pid, remote_ports=[without.port]).sockets[0].posture
    for p in (a, b):
        assert p.source == "proc" and "ptrace" in p.reason
        assert p.user_timeout_s == UNKNOWN and p.keepalive.idle_s == UNKNOWN
    # the kernel's table still tells SO_KEEPALIVE on an idle ESTABLISHED socket
    assert a.keepalive.enabled is True and b.keepalive.enabled is False


@pytest.mark.timeout(30)
def test_a_descriptor_reused_since_the_listing_is_not_read_as_the_socket(listener, monkeypatch):
    # Mock of the race's timing only: the socket's fd number names a pipe by the time it is
    # duplicated (a hermes run: closed and reused between the listing and pidfd_getfd;
    # socket() then raised ENOTSOCK in the sampler thread). The duplicate hands back a
    # real pipe of this process in its place.
    read_end, write_end = os.pipe()

    def reused(pidfd: int, fd: int) -> int:
        return os.dup(read_end)

    monkeypatch.setattr(reader, "_pidfd_getfd", reused)
    try:
        with connected(listener, KEEPALIVE) as c:
            reading = read_tree(c.proc.pid, remote_ports=[c.port])
    finally:
        os.close(read_end)
        os.close(write_end)
    assert all(s.posture.source != "getsockopt" for s in reading.sockets)


#: A stdlib-only interpreter another user may run (the reader needs nothing else); the
#: venv's may sit under root's home.
SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.mark.timeout(60)
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start a reader as another user")
@pytest.mark.skipif(not os.access(SYSTEM_PYTHON, os.X_OK), reason="needs /usr/bin/python3")
def test_another_users_reader_gets_unreadable_with_the_reason_not_off(listener):
    with connected(listener, []) as c:
        code = (
            "import json, sys; from harness.posture.reader import read_tree; "
            f"r = read_tree({c.proc.pid}, remote_ports=[{c.port}]); "
            "print(json.dumps([r.readable, r.reason, len(r.sockets)]))"
        )
        done = subprocess.run(
            [SYSTEM_PYTHON, "-c", code],
            capture_output=True,
            text=True,
            user=65534,  # nobody
            group=65534,
            env={"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "")},
            cwd="/",
            timeout=30,
        )
    assert done.returncode == 0, done.stderr
    readable, reason, count = json.loads(done.stdout)
    assert (readable, count) == (False, 0)
    assert "Permission denied" in reason and f"/proc/{c.proc.pid}/fd" in reason
