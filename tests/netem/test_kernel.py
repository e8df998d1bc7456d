"""A real dead path between two network namespaces (harness.netem netns, deadpeer).

Needs root and `ip netns` (skips locally without them, fails in CI). Keepalive 1/1/2
keeps each run to a few seconds; timing bounds are generous sanity bounds (two shared
cores), the figures themselves belong to `harness bench netem`."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys

import pytest

from harness.faults import FaultSpecError
from harness.faults.network.kernel import (
    KeepaliveSettings,
    KernelSettings,
    kernel_settings_from_dict,
)
from harness.faults.network.trigger import Trigger
from harness.foreground import alive
from harness.netem import netns as lifecycle
from harness.netem.deadpeer import run_dead_peer
from harness.netem.netns import NetnsPair, cleanup_stale
from harness.netem.prereq import require_netns
from harness.netem.sse_stub import StubServer, StubSettings
from harness.paths import PROJECT_ROOT

MARGIN_S = 2.5  # scheduling noise, RTO granularity, process start


@pytest.fixture
def netns() -> None:
    require_netns()


def namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return {line.split(" ", 1)[0] for line in out.stdout.splitlines()}


# --------------------------------------------------------------------------- settings


def test_settings_from_dict_and_expected_detection() -> None:
    s = kernel_settings_from_dict(
        {"cut_at": "event:2", "keepalive": {"idle_s": 2, "interval_s": 1, "count": 3}}
    )
    assert s.cut_at == Trigger("event", 2) and s.keepalive.formula_s == 5.0
    assert s.expected_detection_s == 5.0
    assert (
        kernel_settings_from_dict({"shape": "in_flight", "user_timeout_s": 3}).expected_detection_s
        == 3
    )
    assert kernel_settings_from_dict({"keepalive": False}).expected_detection_s is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"shape": "idle"}, r"kernel.shape: 'idle' .*allowed: waiting, in_flight"),
        ({"cut_at": "later"}, r"kernel.cut_at: 'later' .*event:N"),
        ({"keepalive": {"idle_s": 0}}, r"kernel.keepalive.idle_s: 0 .*whole number >= 1"),
        ({"keepalive": {"idle": 1}}, r"kernel.keepalive.idle: 1 .*idle_s, interval_s, count"),
        ({"user_timeout_s": -1}, r"kernel.user_timeout_s: -1"),
        ({"link": "down"}, r"kernel.link: 'down' .*cut_at, shape, keepalive"),
    ],
)
def test_invalid_kernel_settings_name_field_and_allowed_values(data, message) -> None:
    with pytest.raises(FaultSpecError, match=message):
        kernel_settings_from_dict(data)


def test_keepalive_settings_are_validated_eagerly() -> None:
    with pytest.raises(FaultSpecError, match="keepalive.count"):
        KeepaliveSettings(count=True)


# --------------------------------------------------------------------------- namespaces


@pytest.mark.netem
@pytest.mark.timeout(30)
def test_namespaces_are_removed_on_exit_even_after_an_error(netns) -> None:
    with pytest.raises(RuntimeError, match="boom"), NetnsPair() as pair:
        assert {pair.server_ns, pair.client_ns} <= namespaces()
        raise RuntimeError("boom")
    assert not {pair.server_ns, pair.client_ns} & namespaces()
    assert pair not in lifecycle._live


@pytest.mark.netem
@pytest.mark.timeout(30)
def test_server_in_namespace_a_is_reachable_from_b_only(netns) -> None:
    with (
        NetnsPair() as pair,
        pair.enter("server", StubServer(StubSettings(), host=pair.server_ip)) as srv,
    ):
        probe = [
            "python3",
            "-c",
            "import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3); print('ok')",
            pair.server_ip,
            str(srv.port),
        ]
        done = subprocess.run(
            pair.command_prefix("client") + probe, capture_output=True, text=True, timeout=20
        )
        assert done.stdout.strip() == "ok", done.stderr
        with pytest.raises(OSError):  # the host's namespace has no route into the pair
            socket.create_connection((pair.server_ip, srv.port), timeout=0.5)


@pytest.mark.netem
@pytest.mark.timeout(30)
def test_cleanup_stale_removes_namespaces_of_dead_runs_only(netns) -> None:
    dead_pid = next(p for p in range(4_194_000, 4_194_300) if not alive(p))
    stale = f"hx-{dead_pid}-1-a"
    subprocess.run(["ip", "netns", "add", stale], check=True)
    try:
        with NetnsPair() as pair:
            removed = cleanup_stale()
            assert stale in removed
            assert {pair.server_ns, pair.client_ns} <= namespaces()  # ours: pid alive
    finally:
        subprocess.run(["ip", "netns", "del", stale], capture_output=True, check=False)
    assert stale not in namespaces()


# --------------------------------------------------------------------------- dead peer


@pytest.mark.netem
@pytest.mark.timeout(40)
def test_keepalive_detects_a_dead_path_while_the_client_only_waits(netns) -> None:
    s = KernelSettings(cut_at="event:3", keepalive=KeepaliveSettings(1, 1, 2))
    r = run_dead_peer(s, ceiling_s=s.keepalive.formula_s + MARGIN_S + 3)
    assert r.outcome == "detected", r.timeline()
    assert r.errno == 110  # ETIMEDOUT: the kernel gave up, nobody sent FIN or RST
    assert r.detect_s <= s.keepalive.formula_s + MARGIN_S
    # The kernel's view over time: keepalive timer armed, unanswered probes, then gone.
    described = [x.describe() for x in r.samples]
    assert any("ESTABLISHED" in d and "keepalive" in d for d in described)
    assert any("probes=" in d for d in described)
    assert described[-1] == "gone"


@pytest.mark.netem
@pytest.mark.timeout(40)
def test_bare_client_stays_stuck_on_a_dead_path_until_the_ceiling(netns) -> None:
    r = run_dead_peer(KernelSettings(keepalive=None), ceiling_s=4.0)
    assert r.outcome == "hung"
    assert all("probes=" not in x.describe() for x in r.samples)


@pytest.mark.netem
@pytest.mark.timeout(40)
def test_user_timeout_ends_a_request_written_into_a_dead_path(netns) -> None:
    s = KernelSettings(shape="in_flight", keepalive=KeepaliveSettings(1, 1, 2), user_timeout_s=3)
    r = run_dead_peer(s, ceiling_s=3 + MARGIN_S + 3)
    assert r.outcome == "detected", r.timeline()
    assert r.errno == 110
    assert r.detect_s <= 3 + MARGIN_S
    assert any(x.sockets and x.sockets[0].retransmits > 0 for x in r.samples)


@pytest.mark.netem
@pytest.mark.timeout(40)
def test_keepalive_alone_does_not_end_a_request_in_flight(netns) -> None:
    # Data in flight: the kernel retransmits and keepalive is suspended (formula 3 s).
    s = KernelSettings(shape="in_flight", keepalive=KeepaliveSettings(1, 1, 2), user_timeout_s=None)
    r = run_dead_peer(s, ceiling_s=s.keepalive.formula_s + MARGIN_S)
    assert r.outcome == "hung"
    assert any(x.sockets and x.sockets[0].retransmits > 0 for x in r.samples)


@pytest.mark.netem
@pytest.mark.timeout(40)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_namespaces_are_removed_when_the_run_is_interrupted(netns, sig) -> None:
    proc, names = _child_holding_a_pair()
    assert len(names) == 2 and names <= namespaces()
    proc.send_signal(sig)
    proc.wait(timeout=20)
    assert not names & namespaces()


@pytest.mark.netem
@pytest.mark.timeout(40)
def test_namespaces_of_a_killed_run_are_removed_by_cleanup_stale(netns) -> None:
    proc, names = _child_holding_a_pair()
    proc.kill()  # SIGKILL: no handler runs, the namespaces stay behind
    proc.wait(timeout=20)
    assert names <= namespaces()
    assert names <= set(cleanup_stale())
    assert not names & namespaces()


def _child_holding_a_pair() -> tuple[subprocess.Popen[str], set[str]]:
    """A child that creates a namespace pair, prints its two names and then waits 30 s
    to be interrupted or killed by the test; returns it and the names."""
    # A shell's background job (`cmd &`, as CI steps and tool runners start pytest)
    # inherits SIGINT ignored, and so would this child: Ctrl-C in a terminal raises
    # KeyboardInterrupt, so the child restores that first (else SIGINT does nothing).
    child = (
        "import signal, time\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from harness.netem.netns import NetnsPair\n"
        "pair = NetnsPair()\n"
        "pair.create()\n"
        "print(pair.server_ns, pair.client_ns, flush=True)\n"
        "time.sleep(30)  # waits to be interrupted or killed by the test\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", child], stdout=subprocess.PIPE, text=True, cwd=str(PROJECT_ROOT)
    )
    return proc, set(proc.stdout.readline().split())
