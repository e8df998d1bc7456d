"""harness.netem.backends: the [network] table of a scenario and one call through each
backend in front of the real fault server (relay always; toxiproxy and kernel where
their prerequisites are present: skip locally, fail in CI)."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

from harness.faults import FaultSpecError, script_from_dict
from harness.faults.network.spec import NetworkSpec
from harness.faults.network.trigger import Trigger
from harness.netem.backends import network_backend
from harness.netem.prereq import require_netns, require_toxiproxy
from harness.network_spec import network_from_dict
from harness.server import FaultServer

BODY = {"model": "test-model", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def stream_events(client: httpx.Client, base_url: str) -> int:
    n = 0
    with client.stream("POST", base_url + "/chat/completions", json=BODY) as resp:
        for line in resp.iter_lines():
            if line.startswith("data: "):
                n += 1
    return n


def stream_until_silent(base_url: str, *, read_s: float) -> None:
    """Read a stream that goes silent: the client's read timeout must end it."""
    with httpx.Client(timeout=httpx.Timeout(5, read=read_s)) as client:
        with pytest.raises(httpx.ReadTimeout):
            stream_events(client, base_url)


# --------------------------------------------------------------------------- parsing


def test_network_from_dict_builds_each_backend() -> None:
    assert network_from_dict(None) == NetworkSpec()
    relay = network_from_dict({"backend": "relay", "relay": {"mode": "hold"}, "at": "event:2"})
    assert relay.relay.mode == "hold" and relay.relay_at == Trigger("event", 2)
    tox = network_from_dict(
        {
            "backend": "toxiproxy",
            "toxics": [{"type": "latency", "latency": 100}, {"type": "down", "at": "request:2"}],
        }
    )
    assert [t.type for t in tox.toxics] == ["latency", "down"] and tox.toxics[1].at == Trigger(
        "request", 2
    )
    assert tox.scaled(0.5).toxics[0].attrs["latency"] == 50
    kern = network_from_dict({"backend": "kernel", "kernel": {"cut_at": "event:4"}})
    assert kern.kernel.cut_at == Trigger("event", 4)
    assert network_from_dict(kern.to_dict()).kernel.cut_at == kern.kernel.cut_at


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"backend": "tc"}, r"network.backend: 'tc' .*allowed: server, relay, toxiproxy, kernel"),
        (
            {"backend": "relay", "toxics": []},
            r"network.toxics: .*keys for backend relay: backend, relay, at",
        ),
        (
            {"backend": "relay", "relay": {"mode": "drop"}},
            r"network.relay.mode: 'drop' .*pass, swallow_close",
        ),
        ({"backend": "toxiproxy"}, r"network.toxics: \[\] .*non-empty list"),
        (
            {"backend": "toxiproxy", "toxics": [{"type": "latency"}]},
            r"network.toxics\[0\].latency: None",
        ),
        (
            {"backend": "toxiproxy", "toxics": [{"type": "timeout"}, {"type": "timeout"}]},
            r"unique toxic names",
        ),
        ({"backend": "kernel", "kernel": {"cut_at": "soon"}}, r"network.kernel.cut_at: 'soon'"),
    ],
)
def test_invalid_network_tables_name_the_field_and_allowed_values(data, message) -> None:
    with pytest.raises(FaultSpecError, match=message):
        network_from_dict(data)


# --------------------------------------------------------------------------- one call each


@pytest.mark.timeout(30)
def test_relay_backend_swallows_the_servers_fin_and_shows_close_wait() -> None:
    spec = network_from_dict({"backend": "relay", "relay": {"mode": "swallow_close"}})
    script = script_from_dict({"rules": [{"fault": {"phase": "event:3", "action": "fin"}}]})
    with FaultServer(script) as srv, network_backend(spec, server=srv) as net:
        assert net.base_url != srv.base_url and net.command_prefix == []
        net.arm(timeout=10)
        stream_until_silent(net.base_url, read_s=1.0)
        rows = net.events()
    assert any(r["kind"] == "swallowed" for r in rows)
    states = [r["states"] for r in rows if r["kind"] == "tcp"]
    assert any(
        s["relay_upstream"].startswith("CLOSE_WAIT") and s["relay_client"].startswith("ESTABLISHED")
        for s in states
    )


@pytest.mark.timeout(30)
def test_a_relay_switched_at_the_request_is_in_place_before_the_reply_goes_on() -> None:
    # CI 2026-12-06: a relay switched to swallow_close at "request" landed after the
    # server's FIN at event:3 on a loaded machine; the FIN went through, nothing was
    # swallowed. The body now waits after its head until the switch is made: here the
    # switch waits for that hold, so without it the switch never comes.
    spec = network_from_dict(
        {"backend": "relay", "relay": {"mode": "swallow_close"}, "at": "request"}
    )
    script = script_from_dict({"rules": [{"fault": {"phase": "event:3", "action": "fin"}}]})
    with FaultServer(script) as srv, network_backend(spec, server=srv) as net:
        [(trigger, label, switch)] = net._deferred

        def switch_once_held() -> None:
            srv.wait_for("held", timeout=5)  # TimeoutError: recorded as a missed trigger
            switch()

        net._deferred[0] = (trigger, label, switch_once_held)
        net.arm(timeout=10)
        stream_until_silent(net.base_url, read_s=1.0)
        rows = net.events()
        held = [e for e in srv.timeline() if e.kind in ("held", "released")]
    assert [e.detail["n"] for e in held] == [0, 0]
    assert any(r["kind"] == "swallowed" for r in rows)


@pytest.mark.timeout(30)
def test_relay_backend_switches_to_hold_at_the_scripted_event() -> None:
    spec = network_from_dict({"backend": "relay", "relay": {"mode": "hold"}, "at": "event:2"})
    script = script_from_dict(
        {"events": 6, "rules": [{"fault": {"phase": "event:0", "action": "slow", "delay_s": 0.2}}]}
    )
    with FaultServer(script) as srv, network_backend(spec, server=srv) as net:
        net.arm(timeout=10)
        stream_until_silent(net.base_url, read_s=1.5)
        rows = net.events()
    assert [r["detail"] for r in rows if r["kind"] == "mode"] == ["pass -> hold"]


@pytest.mark.toxiproxy
@pytest.mark.timeout(30)
def test_toxiproxy_backend_adds_a_deferred_timeout_toxic_at_the_scripted_event() -> None:
    require_toxiproxy()
    spec = network_from_dict(
        {"backend": "toxiproxy", "toxics": [{"type": "timeout", "timeout": 0, "at": "event:2"}]}
    )
    script = script_from_dict(
        {"events": 8, "rules": [{"fault": {"phase": "event:0", "action": "slow", "delay_s": 0.2}}]}
    )
    with FaultServer(script) as srv, network_backend(spec, server=srv) as net:
        net.arm(timeout=10)
        stream_until_silent(net.base_url, read_s=1.0)
        rows = net.events()
    assert [r["detail"] for r in rows if r["kind"] == "toxic_added"] == [
        "timeout[downstream]@event:2(timeout=0ms)"
    ]


@pytest.mark.netem
@pytest.mark.timeout(40)
def test_kernel_backend_runs_the_target_in_the_client_namespace_and_cuts_at_the_event() -> None:
    require_netns()
    spec = network_from_dict({"backend": "kernel", "kernel": {"cut_at": "event:2"}})
    script = script_from_dict(
        {
            "events": 40,
            "rules": [{"fault": {"phase": "event:0", "action": "slow", "delay_s": 0.05}}],
        }
    )

    def factory(host: str) -> FaultServer:
        return FaultServer(script, host=host, allow_remote=True)

    with network_backend(spec, server_factory=factory) as net:
        assert net.base_url.startswith("http://10.213.0.1:")
        argv = net.command_prefix + [
            sys.executable,
            "-m",
            "harness.netem.probe",
            "--url",
            net.base_url.removesuffix("/v1"),
            "--keepalive",
            "1,1,2",
        ]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        net.watch(proc.pid)
        net.arm(timeout=15)
        out, _ = proc.communicate(timeout=20)
        rows = net.events()
    result = json.loads(out.strip().splitlines()[-1])
    assert result["event"] == "result" and result["errno"] == 110, result
    kinds = [(r["source"], r["kind"]) for r in rows]
    assert ("netem", "cut") in kinds
    assert any(r["source"] == "kernel" and "probes=" in r["detail"] for r in rows)


def test_server_backend_is_a_pass_through_handle() -> None:
    with FaultServer() as srv, network_backend(NetworkSpec(), server=srv) as net:
        assert net.base_url == srv.base_url and net.server is srv and net.events() == []
        with httpx.Client(timeout=5) as client:
            assert stream_events(client, net.base_url) > 1
