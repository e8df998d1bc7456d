"""harness.relay: the middlebox relay in front of an SSE upstream (the netem stub),
checked on the wire with httpx and on the kernel's socket table (/proc/net/tcp)."""

from __future__ import annotations

import json
import socket
import struct
import sys
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from harness import tcpstate
from harness.faults import FaultSpecError
from harness.netem.sse_stub import StubServer, StubSettings
from harness.relay import LEGS, Relay, RelaySettings, relay_settings_from_dict
from tests.ports import refused_port

pytestmark = [
    pytest.mark.skipif(
        sys.platform != "linux", reason="relay TCP states are read from /proc (Linux)"
    ),
    pytest.mark.timeout(30),
]

BODY = {"model": "test-model", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def stream_text(client: httpx.Client, url: str) -> str:
    """POST a streaming chat request and return the concatenated deltas."""
    parts = []
    with client.stream("POST", url + "/v1/chat/completions", json=BODY) as resp:
        for line in resp.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                delta = json.loads(line[6:])["choices"][0]["delta"]
                parts.append(delta.get("content", ""))
    return "".join(parts)


def test_pass_mode_relays_a_full_stream_and_records_both_legs() -> None:
    paced = StubSettings(events=4, interval_s=0.15)  # long enough to be sampled mid-stream
    with StubServer(paced) as up, Relay(upstream=("127.0.0.1", up.port)) as relay:
        with httpx.Client(timeout=5) as client:
            assert stream_text(client, relay.url) == "tok0 tok1 tok2 tok3 "
        assert relay.base_url == relay.url + "/v1"
        relay.wait_for("closed", timeout=5)
        # Sampled off the loop and recorded only on change, so wait on the content.
        live = relay.wait_for(
            "tcp",
            timeout=5,
            where=lambda e: all(e.states[leg].startswith("ESTABLISHED") for leg in LEGS),
        )
        assert live.states["relay_upstream"].startswith("ESTABLISHED")
    kinds = [e.kind for e in relay.timeline()]
    for kind in (
        "accepted",
        "upstream_connected",
        "bytes_up",
        "bytes_down",
        "client_fin",
        "closed",
    ):
        assert kind in kinds
    (conn,) = relay.connections()
    assert conn.bytes_down > 0 and conn.bytes_up > 0 and conn.status == "closed"


def test_direct_fin_reaches_httpx_at_once_as_a_protocol_error() -> None:
    # The contrast case: without a middlebox the FIN is seen, nothing hangs.
    with (
        StubServer(StubSettings(events=2, after="fin")) as up,
        httpx.Client(timeout=httpx.Timeout(5, read=3)) as client,
    ):
        with pytest.raises(httpx.RemoteProtocolError):
            stream_text(client, up.url)


def test_swallow_close_leaves_upstream_socket_in_close_wait_and_client_leg_silent() -> None:
    with (
        StubServer(StubSettings(events=2, after="fin")) as up,
        Relay(upstream=("127.0.0.1", up.port), mode="swallow_close") as relay,
    ):
        # Only a read timeout: the client sees silence, not a FIN, so it times out.
        with (
            httpx.Client(timeout=httpx.Timeout(5, read=2.0)) as client,
            ThreadPoolExecutor(1) as pool,
        ):
            call = pool.submit(stream_text, client, relay.url)
            swallowed = relay.wait_for("swallowed", timeout=5)
            # While the client waits: the kernel's view of the four sockets.
            (conn,) = relay.connections()
            table = tcpstate.snapshot()
            (upstream_leg,) = tcpstate.select(
                table, local_port=conn.upstream_local[1], remote_port=up.port
            )
            (client_leg,) = tcpstate.select(
                table, local_port=relay.port, remote_port=conn.client[1]
            )
            (client_sock,) = tcpstate.select(
                table, local_port=conn.client[1], remote_port=relay.port
            )
            assert upstream_leg.state == "CLOSE_WAIT"
            assert client_leg.state == "ESTABLISHED"
            assert client_sock.state == "ESTABLISHED"
            assert conn.status == "swallowed"
            # The relay's own timeline shows the same, on one time axis. A sample that
            # started before the FIN may be stamped after "swallowed" (stamps mark the end
            # of a /proc read) and still show ESTABLISHED: wait for the CLOSE_WAIT one.
            seen = relay.wait_for(
                "tcp",
                timeout=5,
                where=lambda e: (
                    e.t >= swallowed.t and e.states["relay_upstream"].startswith("CLOSE_WAIT")
                ),
            )
            assert seen.states["relay_client"].startswith("ESTABLISHED")
            with pytest.raises(httpx.ReadTimeout):
                call.result(timeout=10)
        # The client gave up and closed: the relay lets go of the upstream socket too.
        relay.wait_for("closed", timeout=5)


def test_idle_cut_closes_the_client_leg_after_silence_from_upstream() -> None:
    with (
        StubServer(StubSettings(events=1, after="hang")) as up,
        Relay(upstream=("127.0.0.1", up.port), mode="idle_cut", idle_cut_s=0.3) as relay,
    ):
        with httpx.Client(timeout=httpx.Timeout(5, read=5)) as client:
            with pytest.raises(httpx.RemoteProtocolError):
                stream_text(client, relay.url)
        cut = relay.wait_for("idle_cut", timeout=5)
    assert "0.3" in cut.detail and relay.connections()[0].status == "cut"


def test_idle_cut_with_rst_surfaces_as_a_read_error() -> None:
    with (
        StubServer(StubSettings(events=1, after="hang")) as up,
        Relay(
            upstream=("127.0.0.1", up.port), mode="idle_cut", idle_cut_s=0.3, idle_cut_rst=True
        ) as relay,
    ):
        with httpx.Client(timeout=httpx.Timeout(5, read=5)) as client:
            with pytest.raises(httpx.ReadError):
                stream_text(client, relay.url)
        assert "rst" in relay.wait_for("idle_cut", timeout=5).detail


def test_hold_stops_relaying_until_switched_back_at_runtime() -> None:
    request = b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}"
    with (
        StubServer(StubSettings(events=1)) as up,
        Relay(upstream=("127.0.0.1", up.port), mode="hold") as relay,
    ):
        with socket.create_connection(("127.0.0.1", relay.port), timeout=5) as sock:
            sock.sendall(request)
            relay.wait_for("upstream_connected", timeout=5)
            sock.settimeout(0.3)
            with pytest.raises(TimeoutError):
                sock.recv(100)
            assert up.requests == 0  # nothing reached the upstream either
            relay.set_mode("pass")
            sock.settimeout(5)
            assert sock.recv(100).startswith(b"HTTP/1.1 200")
        assert relay.mode == "pass"
    modes = [e.detail for e in relay.timeline() if e.kind == "mode"]
    assert modes == ["hold -> pass"]


def test_switching_to_swallow_close_at_runtime_applies_to_an_open_connection() -> None:
    with (
        StubServer(StubSettings(events=1, first_done=1, after="fin")) as up,
        Relay(upstream=("127.0.0.1", up.port)) as relay,
    ):
        with httpx.Client(timeout=httpx.Timeout(5, read=0.8)) as client:
            assert stream_text(client, relay.url) == "tok0 "  # healthy, connection pooled
            relay.set_mode("swallow_close")
            with pytest.raises(httpx.ReadTimeout):
                stream_text(client, relay.url)  # same pooled connection, FIN swallowed
        assert relay.wait_for("swallowed", timeout=5).conn == 1


def test_upstream_refused_closes_the_client_leg() -> None:
    with (
        refused_port() as dead_port,
        Relay(upstream=("127.0.0.1", dead_port)) as relay,
        httpx.Client(timeout=5) as client,
    ):
        with pytest.raises(httpx.TransportError):
            client.get(relay.url + "/v1/models")
        assert "Refused" in relay.wait_for("upstream_connect_failed", timeout=5).detail


def test_upstream_fin_is_not_recorded_as_forwarded_when_the_client_leg_is_gone() -> None:
    # The client resets its leg while the relay holds; then the upstream closes. That FIN
    # cannot reach the client: a ``fin_forwarded`` event would put on the timeline a FIN
    # that never went on the wire. The upstream is a plain socket written here.
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(5)
        upstream_port = listener.getsockname()[1]
        with Relay(
            upstream=("127.0.0.1", upstream_port), mode="hold", sample_interval_s=0.02
        ) as relay:
            client = socket.create_connection(("127.0.0.1", relay.port), timeout=5)
            upstream, _ = listener.accept()
            relay.wait_for("upstream_connected", timeout=5)
            upstream.close()  # FIN; the relay holds, so nothing reads it yet
            relay.wait_for(
                "tcp",
                timeout=5,
                where=lambda e: (
                    e.states is not None and e.states["relay_upstream"].startswith("CLOSE_WAIT")
                ),
            )
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()  # RST: the client leg is gone
            relay.wait_for(
                "tcp",
                timeout=5,
                where=lambda e: e.states is not None and e.states["relay_client"] == "gone",
            )
            relay.set_mode("pass")
            relay.wait_for("closed", timeout=5)
        kinds = [e.kind for e in relay.timeline() if e.conn == 1]
    assert "upstream_fin" in kinds
    assert "fin_forwarded" not in kinds
    assert "fin_not_forwarded" in kinds


def test_settings_errors_name_the_field_and_allowed_values() -> None:
    with pytest.raises(
        FaultSpecError,
        match=r"relay.mode: 'swallow' is not valid; allowed: pass, swallow_close, idle_cut, hold",
    ):
        relay_settings_from_dict({"mode": "swallow"})
    with pytest.raises(FaultSpecError, match=r"relay.idle_cut_s: -1"):
        relay_settings_from_dict({"mode": "idle_cut", "idle_cut_s": -1})
    with pytest.raises(FaultSpecError, match=r"relay.cut: .*allowed: mode, idle_cut_s"):
        relay_settings_from_dict({"cut": 1})
    assert (
        relay_settings_from_dict({"mode": "idle_cut", "idle_cut_s": 2}).scaled(0.5).idle_cut_s
        == 1.0
    )
    assert RelaySettings().mode == "pass"
