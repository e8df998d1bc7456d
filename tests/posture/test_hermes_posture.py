"""hermes-agent's sockets as they are: its requests go through the httpx transports it
mounts (``http._mounts``), which the driver's old attribute walk missed; posture reads
the socket those transports opened, from outside the process.

The test makes hermes hold a connection open (a silent peer after one event), reads the
socket's options as hermes 0.19.0 left them (its mounted ``HTTPTransport(verify=...)``
sets none: keepalive off), then sets keepalive options of its own on that very socket
from outside (``pidfd_getfd`` + ``setsockopt`` on a duplicate: the socket is shared, the
descriptor is ours) and checks posture reads exactly those back."""

from __future__ import annotations

import os
import socket
import time

import pytest

from harness.environment import read_environment
from harness.faults import script_from_dict
from harness.posture import PostureSampler
from harness.posture.reader import _pidfd_getfd, _pidfd_open, read_tree
from harness.server import FaultServer
from harness.targets.hermes import unavailable_reason
from harness.targets.runtime.process import TargetProcess

_SILENT = {"rules": [{"fault": {"phase": "event:1", "action": "hang"}}]}
TEST_KEEPALIVE = {"idle_s": 41, "interval_s": 7, "count": 5}


@pytest.fixture(scope="module")
def hermes_ready() -> None:
    """Skip where hermes-agent is not installed; fail instead on CI, where its tier must run."""
    reason = unavailable_reason()
    if reason is not None:
        if read_environment().ci:
            pytest.fail(f"hermes tier must run in CI: {reason}")
        pytest.skip(reason)


@pytest.mark.hermes
@pytest.mark.timeout(180)
def test_posture_reads_hermes_mounted_transport_socket_as_it_is_and_as_the_test_set_it(
    hermes_ready: None,
) -> None:
    child = TargetProcess.spawn("hermes", environ=os.environ)
    try:
        with FaultServer(script_from_dict(_SILENT)) as srv:
            child.wait_ready(time.monotonic() + 90)
            sampler = PostureSampler(child.pid, dial_ports=[srv.port]).start()
            srv.watch(("request_read", "fault"), sampler.notify)
            child.run(_job(srv.base_url))
            child.wait_started(time.monotonic() + 60)
            srv.wait_for("fault", timeout=60)
            sampler.sample("held")
            stock = sampler.close().connections
            [found] = read_tree(child.pid, remote_ports=[srv.port]).sockets
            owner = found.posture.pid
            _set_from_outside(owner, found.inode)
            [after] = read_tree(child.pid, remote_ports=[srv.port]).sockets
    finally:
        child.kill()
    assert stock and all(p.source == "getsockopt" for p in stock)
    assert all(p.keepalive.enabled is False and p.user_timeout_s is None for p in stock)
    assert after.inode == found.inode and after.posture.source == "getsockopt"
    assert after.posture.keepalive.to_dict() == {
        "enabled": True,
        "idle_s": 41.0,
        "interval_s": 7.0,
        "count": 5,
    }
    assert after.posture.user_timeout_s == 1.5


def _set_from_outside(pid: int, inode: int) -> None:
    """Set the test's keepalive on ``pid``'s socket ``inode`` through a duplicate."""
    fd = next(
        int(name)
        for name in os.listdir(f"/proc/{pid}/fd")
        if os.readlink(f"/proc/{pid}/fd/{name}") == f"socket:[{inode}]"
    )
    pidfd = _pidfd_open(pid)
    try:
        s = socket.socket(fileno=_pidfd_getfd(pidfd, fd))
    finally:
        os.close(pidfd)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, TEST_KEEPALIVE["idle_s"])
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, TEST_KEEPALIVE["interval_s"])
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, TEST_KEEPALIVE["count"])
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, 1500)
    finally:
        s.close()  # the duplicate only


def _job(base_url: str) -> dict[str, object]:
    return {
        "base_url": base_url,
        "api": "chat",
        "messages": [{"role": "user", "content": "hi"}],
        "settings": {},
        "time_scale": 1.0,
        "calls": 1,
    }
