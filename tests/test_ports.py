"""A port handed to another program is outside the kernel's ephemeral range, so no
port-0 bind or outgoing connection takes it while that program starts."""

from __future__ import annotations

import random
import socket

import pytest

from harness.ports import DEFAULT_EPHEMERAL, LOWEST, ephemeral_range, named_port, named_ports

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("32768\t60999\n", (32768, 60999)),
        ("1024 65535", (1024, 65535)),
        ("", DEFAULT_EPHEMERAL),
        ("60999 32768", DEFAULT_EPHEMERAL),  # inverted: not a range the kernel would take
        ("32768", DEFAULT_EPHEMERAL),
        ("a b", DEFAULT_EPHEMERAL),
        ("0 70000", DEFAULT_EPHEMERAL),
    ],
)
def test_the_ephemeral_range_is_read_from_the_kernel_text_or_the_linux_default(text, expected):
    assert ephemeral_range(text) == expected


def test_this_kernel_s_range_is_read_from_proc():
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low, high = (int(p) for p in f.read().split())
    assert ephemeral_range() == (low, high)


@pytest.mark.parametrize(
    ("ephemeral", "spans"),
    [
        ((32768, 60999), [range(LOWEST, 32768), range(61000, 65536)]),
        ((32768, 65535), [range(LOWEST, 32768)]),
        ((1024, 40000), [range(40001, 65536)]),
        ((1024, 65535), []),
    ],
)
def test_named_ports_are_the_ports_outside_the_range_from_the_lowest(ephemeral, spans):
    assert named_ports(ephemeral) == spans


def test_a_named_port_is_outside_the_range_and_free_to_bind():
    low, high = ephemeral_range()
    for seed in range(20):
        port = named_port(rng=random.Random(seed))
        assert LOWEST <= port < low or high < port <= 65535
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # free: the program it is named to can bind it


def test_a_taken_port_is_passed_over():
    first = named_port(rng=random.Random(7))
    with socket.socket() as held:
        held.bind(("127.0.0.1", first))
        held.listen()
        # the same random sequence meets the held port first and takes the next pick
        assert named_port(rng=random.Random(7)) != first
