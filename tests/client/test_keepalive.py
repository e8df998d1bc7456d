"""Keepalive socket options: every platform branch with fake constant tables, and the
options read back with getsockopt from the connection httpx really opened."""

from __future__ import annotations

import socket
import sys

import pytest

from harness.client import ClientSettings, ReferenceClient
from harness.client.keepalive import keepalive_options, socket_constants

LINUX = {
    "SOL_SOCKET": 1,
    "IPPROTO_TCP": 6,
    "SO_KEEPALIVE": 9,
    "TCP_KEEPIDLE": 4,
    "TCP_KEEPINTVL": 5,
    "TCP_KEEPCNT": 6,
    "TCP_USER_TIMEOUT": 18,
}
MACOS = {
    "SOL_SOCKET": 0xFFFF,
    "IPPROTO_TCP": 6,
    "SO_KEEPALIVE": 8,
    "TCP_KEEPALIVE": 0x10,
    "TCP_KEEPINTVL": 0x101,
    "TCP_KEEPCNT": 0x102,
}
OLD_MACOS = {"SOL_SOCKET": 0xFFFF, "IPPROTO_TCP": 6, "SO_KEEPALIVE": 8, "TCP_KEEPALIVE": 0x10}
WINDOWS = {
    "SOL_SOCKET": 0xFFFF,
    "IPPROTO_TCP": 6,
    "SO_KEEPALIVE": 8,
    "TCP_KEEPIDLE": 3,
    "TCP_KEEPINTVL": 17,
    "TCP_KEEPCNT": 16,
}


def test_linux_sets_keepalive_idle_interval_count_and_user_timeout() -> None:
    opts = keepalive_options("linux", LINUX, ClientSettings())
    assert opts == [(1, 9, 1), (6, 4, 30), (6, 5, 10), (6, 6, 3), (6, 18, 60_000)]


def test_linux_values_follow_the_settings() -> None:
    s = ClientSettings(
        keepalive_idle_s=1, keepalive_interval_s=2, keepalive_count=4, tcp_user_timeout_s=0.0005
    )
    assert keepalive_options("linux", LINUX, s) == [
        (1, 9, 1),
        (6, 4, 1),
        (6, 5, 2),
        (6, 6, 4),
        (6, 18, 1),
    ]


def test_linux_without_user_timeout_setting_omits_it() -> None:
    opts = keepalive_options("linux", LINUX, ClientSettings(tcp_user_timeout_s=None))
    assert all(opt != 18 for _, opt, _ in opts)


def test_linux_without_user_timeout_constant_omits_it() -> None:
    table = {k: v for k, v in LINUX.items() if k != "TCP_USER_TIMEOUT"}
    assert len(keepalive_options("linux", table, ClientSettings())) == 4


def test_macos_uses_tcp_keepalive_for_idle_plus_interval_and_count() -> None:
    assert keepalive_options("darwin", MACOS, ClientSettings()) == [
        (0xFFFF, 8, 1),
        (6, 0x10, 30),
        (6, 0x101, 10),
        (6, 0x102, 3),
    ]


def test_old_macos_without_interval_constants_sets_only_idle() -> None:
    assert keepalive_options("darwin", OLD_MACOS, ClientSettings()) == [
        (0xFFFF, 8, 1),
        (6, 0x10, 30),
    ]


def test_windows_gets_no_options_even_with_constants_present() -> None:
    assert keepalive_options("win32", WINDOWS, ClientSettings()) == []


def test_other_unix_with_linux_names_uses_keepidle() -> None:
    table = {k: v for k, v in LINUX.items() if k != "TCP_USER_TIMEOUT"}
    assert keepalive_options("freebsd14", table, ClientSettings())[1] == (6, 4, 30)


def test_missing_so_keepalive_or_disabled_setting_gives_nothing() -> None:
    assert keepalive_options("linux", {"SOL_SOCKET": 1, "IPPROTO_TCP": 6}, ClientSettings()) == []
    assert keepalive_options("linux", LINUX, ClientSettings(keepalive=False)) == []


def test_socket_constants_reads_only_known_names_from_a_module() -> None:
    class Fake:
        SOL_SOCKET = 1
        SO_KEEPALIVE = 9
        TCP_NODELAY = 1

    assert socket_constants(Fake) == {"SOL_SOCKET": 1, "SO_KEEPALIVE": 9}


@pytest.mark.skipif(sys.platform != "linux", reason="reads Linux TCP options back")
@pytest.mark.timeout(20)
def test_the_connection_httpx_opened_carries_the_options(fault_server) -> None:
    settings = ClientSettings(
        keepalive_idle_s=7, keepalive_interval_s=3, keepalive_count=5, tcp_user_timeout_s=4.5
    )
    with ReferenceClient(fault_server.base_url, settings=settings) as client:
        client.complete([{"role": "user", "content": "hi"}])
        owned = client._owned
        assert owned is not None
        socks = owned.sockets.live()
        assert len(socks) == 1  # the kept-alive connection the call used
        sock = socks[0]
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 7
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == 3
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == 5
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 4500
