"""Bad input never stops the server: the next connection is served normally."""

from __future__ import annotations

import json
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.faults import FaultSpecError, script_from_dict
from harness.server import FaultServer, ServerError
from tests.server.rawhttp import CHAT, connect, read_until, request_bytes, send

pytestmark = pytest.mark.timeout(30)


def assert_serves_normally(server: FaultServer) -> None:
    with send(server.port) as s:
        payload, complete = read_until(s, 5, until=b"0\r\n\r\n").body()
    assert complete and payload.endswith(b"data: [DONE]\n\n")


def raw_exchange(server: FaultServer, data: bytes, *, shut: bool = True) -> bytes:
    with connect(server.port) as s:
        try:
            s.sendall(data)
            if shut:
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            return b""
        return read_until(s, 5).data


def test_garbage_bytes_get_400_then_close(server: FaultServer) -> None:
    reply = raw_exchange(server, b"\x00\x01garbage\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400 ")
    assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]["type"] == "invalid_request_error"
    assert_serves_normally(server)


def test_oversized_header_gets_431(server: FaultServer) -> None:
    head = b"POST /v1/chat/completions HTTP/1.1\r\nhost: t\r\nx-big: " + b"a" * 40_000 + b"\r\n\r\n"
    reply = raw_exchange(server, head, shut=False)
    assert reply.startswith(b"HTTP/1.1 431 ")
    assert_serves_normally(server)


def test_half_request_then_close_is_survived(server: FaultServer) -> None:
    raw_exchange(server, request_bytes()[:40])
    raw_exchange(server, request_bytes()[:-10])  # body cut short
    assert_serves_normally(server)


def test_unknown_route_gets_404_in_openai_error_shape(server: FaultServer) -> None:
    with send(server.port, "/v1/nope", {"x": 1}) as s:
        got = read_until(s, 5, complete=True)
    assert got.status == 404
    err = json.loads(got.body()[0])["error"]
    assert set(err) >= {"message", "type", "code"} and "/v1/nope" in err["message"]
    assert_serves_normally(server)


def test_invalid_json_body_gets_400_and_the_connection_is_reused(server: FaultServer) -> None:
    with send(server.port, CHAT, b"{not json") as s:
        got = read_until(s, 5, complete=True)
        assert (
            got.status == 400 and "not valid JSON" in json.loads(got.body()[0])["error"]["message"]
        )
        s.sendall(request_bytes())
        assert read_until(s, 5, until=b"0\r\n\r\n").body()[1]


def test_models_route_lists_a_model(server: FaultServer) -> None:
    with send(server.port, "/v1/models", method="GET") as s:
        got = read_until(s, 5, complete=True)
    assert json.loads(got.body()[0])["data"][0]["id"] == "test-model"


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(junk=st.binary(min_size=0, max_size=600), shut=st.booleans())
def test_random_bytes_never_stop_the_server(server: FaultServer, junk: bytes, shut: bool) -> None:
    with connect(server.port) as s:
        try:
            s.sendall(junk)
            if shut:
                s.shutdown(socket.SHUT_WR)
            read_until(s, 0.05 if not shut else 2)
        except (BrokenPipeError, ConnectionResetError):
            pass
    assert_serves_normally(server)


def test_blackhole_is_not_an_action_a_dead_peer_is_the_kernel_backend() -> None:
    with pytest.raises(FaultSpecError) as info:
        script_from_dict({"rules": [{"fault": {"phase": "headers", "action": "blackhole"}}]})
    assert info.value.field == "script.rules[0].fault.action" and "hang" in info.value.allowed


@pytest.mark.parametrize("action", ["swallow_close"])
def test_scripts_with_actions_the_server_cannot_perform_are_rejected(
    server: FaultServer, action: str
) -> None:
    script = script_from_dict({"rules": [{"fault": {"phase": "headers", "action": action}}]})
    with pytest.raises(FaultSpecError) as info:
        server.load(script)
    assert info.value.field == "rules[0].fault.action" and action in str(info.value)
    with pytest.raises(FaultSpecError):
        FaultServer(script)


def test_binding_a_non_loopback_host_needs_allow_remote() -> None:
    with pytest.raises(ServerError, match="allow_remote"):
        FaultServer(host="0.0.0.0")


def test_oversized_body_is_refused_with_413_before_reading_it(server: FaultServer) -> None:
    head = b"POST /v1/chat/completions HTTP/1.1\r\nhost: t\r\ncontent-length: 999999999\r\n\r\n{"
    reply = raw_exchange(server, head, shut=False)
    assert reply.startswith(b"HTTP/1.1 413 ")
    assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]["code"] == "request_too_large"
    assert_serves_normally(server)


def test_expect_100_continue_is_answered_before_the_body(server: FaultServer) -> None:
    body = json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": "x" * 2000}]}
    ).encode()
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nhost: t\r\nexpect: 100-continue\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    ).encode()
    with connect(server.port) as s:
        s.sendall(head)
        assert read_until(s, 5, until=b"\r\n\r\n").data == b"HTTP/1.1 100 Continue\r\n\r\n"
        s.sendall(body)
        got = read_until(s, 5, complete=True)
    assert got.status == 200 and json.loads(got.body()[0])["object"] == "chat.completion"
