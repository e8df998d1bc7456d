"""Each fault action at each phase where it applies, observed from a raw socket."""

from __future__ import annotations

import json
import socket

import pytest

from harness.faults import script_from_dict
from harness.server import FaultServer
from tests.server.rawhttp import CHAT, connect, read_until, request_bytes, send, sse_events

pytestmark = pytest.mark.timeout(20)


def load(
    server: FaultServer, phase: str, action: str, match: dict | None = None, **params: object
) -> None:
    rule = {"fault": {"phase": phase, "action": action, **params}}
    if match:
        rule["match"] = match
    server.load(script_from_dict({"rules": [rule]}))


def healthy_payload(server: FaultServer) -> bytes:
    server.load(script_from_dict({}))
    with send(server.port) as s:
        got = read_until(s, 5, until=b"0\r\n\r\n")
    payload, complete = got.body()
    assert complete
    return payload


def test_healthy_chat_stream_is_chunked_and_ends_with_done(server: FaultServer) -> None:
    with send(server.port) as s:
        got = read_until(s, 5, until=b"0\r\n\r\n")
    assert got.status == 200
    assert got.headers["transfer-encoding"] == "chunked"
    payload, complete = got.body()
    assert complete
    events = sse_events(payload)
    assert events[-1].data == "[DONE]"
    chunks = [json.loads(e.data) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == server.requests()[0].expected_text


@pytest.mark.parametrize(
    "phase", ["accept", "request", "headers", "event:0", "event:3", "bytes:1", "bytes:77"]
)
def test_rst_gives_connection_reset(server: FaultServer, phase: str) -> None:
    load(server, phase, "rst")
    with send(server.port) as s:
        got = read_until(s, 5)
    assert got.ending == "reset"
    assert server.wait_for("fault", timeout=5).detail == {"action": "rst", "phase": phase}


@pytest.mark.parametrize("phase", ["accept", "request", "headers", "event:2", "bytes:50"])
def test_fin_gives_eof_before_the_terminal_chunk(server: FaultServer, phase: str) -> None:
    load(server, phase, "fin")
    with send(server.port) as s:
        got = read_until(s, 5)
    assert got.ending == "eof"
    payload, complete = got.body() if got.data else (b"", False)
    assert not complete
    assert b"[DONE]" not in payload


@pytest.mark.parametrize("phase", ["request", "headers", "event:1"])
def test_half_close_gives_eof_while_the_server_still_reads(server: FaultServer, phase: str) -> None:
    load(server, phase, "half_close")
    with send(server.port) as s:
        got = read_until(s, 5)
        assert got.ending == "eof"
        s.sendall(b"still talking")  # the server's read side is open: no RST comes back
        assert server.timeline()[-1].kind != "closed"
        s.shutdown(socket.SHUT_WR)
        server.wait_for("peer_closed", timeout=5)
        assert read_until(s, 2).ending == "eof"


@pytest.mark.parametrize("phase", ["accept", "request", "headers", "event:2"])
def test_hang_sends_nothing_more_and_keeps_the_socket_open(server: FaultServer, phase: str) -> None:
    load(server, phase, "hang")
    with send(server.port) as s:
        server.wait_for("fault", timeout=5)
        before = read_until(s, 0.3)
        assert before.ending == "open"
        assert b"[DONE]" not in before.data
        if phase in ("accept", "request"):
            assert before.data == b""
    server.wait_for("peer_closed", timeout=5)


def test_hang_with_duration_closes_after_it(server: FaultServer) -> None:
    server.load(
        script_from_dict(
            {"rules": [{"fault": {"phase": "request", "action": "hang", "duration_s": 2}}]}
        ),
        time_scale=0.05,
    )
    with send(server.port) as s:
        got = read_until(s, 5)
    assert (got.data, got.ending) == (b"", "eof")


@pytest.mark.parametrize("phase", ["headers", "event:2"])
def test_drip_sends_only_comments(server: FaultServer, phase: str) -> None:
    load(server, phase, "drip", interval_s=0.02)
    with send(server.port) as s:
        server.wait_for("comment_sent", timeout=5, count=3)
        got = read_until(s, 0.1)
    payload, complete = got.body()
    assert not complete and got.ending == "open"
    n = int(phase.split(":")[1]) if ":" in phase else 0
    assert len(sse_events(payload)) == n
    tail = payload.split(b"\n\n")[n:]
    assert all(part in (b": keepalive", b"") for part in tail)
    assert tail.count(b": keepalive") >= 3


def test_drip_on_anthropic_stream_sends_ping_events(server: FaultServer) -> None:
    load(server, "event:3", "drip", interval_s=0.02)
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "max_tokens": 5,
    }
    with send(server.port, "/v1/messages", body) as s:
        server.wait_for("comment_sent", timeout=5, count=3)
        got = read_until(s, 0.1)
    events = sse_events(got.body()[0])
    assert [e.event for e in events[:3]] == ["message_start", "content_block_start", "ping"]
    assert {e.event for e in events[3:]} == {"ping"} and len(events) >= 6


def test_status_sends_code_retry_after_custom_headers_and_error_shape(server: FaultServer) -> None:
    load(
        server,
        "request",
        "status",
        code=429,
        retry_after_s=7,
        headers={"x-ratelimit-remaining": "0"},
        message="slow down",
    )
    with send(server.port) as s:
        got = read_until(s, 5, until=b"}}")
    assert got.status == 429
    assert got.headers["retry-after"] == "7" and got.headers["retry-after-ms"] == "7000"
    assert got.headers["x-ratelimit-remaining"] == "0"
    err = json.loads(got.body()[0])["error"]
    assert err["message"] == "slow down" and err["type"] == "rate_limit_error" and "code" in err


def test_a_sub_second_retry_after_is_exact_in_ms_and_never_rounded_down_to_zero(
    server: FaultServer,
) -> None:
    # A fast run scales 2 s to 0.1 s: "Retry-After: 0" would let any retry be "in time".
    load(server, "request", "status", code=429, retry_after_s=0.1)
    with send(server.port) as s:
        got = read_until(s, 5, until=b"}}")
    assert (got.headers["retry-after-ms"], got.headers["retry-after"]) == ("100", "1")


def test_status_with_html_body_at_accept(server: FaultServer) -> None:
    load(
        server,
        "accept",
        "status",
        code=502,
        body="<html>bad gateway</html>",
        content_type="text/html",
    )
    with send(server.port) as s:
        got = read_until(s, 5, until=b"</html>")
    assert got.status == 502 and got.headers["content-type"] == "text/html"
    assert got.body() == (b"<html>bad gateway</html>", True)


@pytest.mark.parametrize("n", [0, 1, 5, 130, 131, 132, 400])
def test_bytes_n_cuts_the_body_exactly_at_n(server: FaultServer, n: int) -> None:
    full = healthy_payload(server)
    load(server, f"bytes:{n}", "fin")
    with send(server.port) as s:
        got = read_until(s, 5)
    payload, complete = got.body()
    assert not complete
    assert payload == full[:n]


def test_bytes_n_can_split_a_utf8_sequence(server: FaultServer) -> None:
    full = healthy_payload(server)
    split = next(i for i in range(1, len(full)) if full[i] & 0xC0 == 0x80)  # a continuation byte
    load(server, f"bytes:{split}", "fin")
    with send(server.port) as s:
        payload, _ = read_until(s, 5).body()
    assert payload == full[:split]
    with pytest.raises(UnicodeDecodeError):
        payload.decode("utf-8")


def test_malformed_inserts_one_broken_event_and_the_stream_continues(server: FaultServer) -> None:
    load(server, "event:2", "malformed")
    with send(server.port) as s:
        payload, complete = read_until(s, 5, until=b"0\r\n\r\n").body()
    assert complete
    events = sse_events(payload)
    assert events[-1].data == "[DONE]"
    with pytest.raises(json.JSONDecodeError):
        json.loads(events[2].data)
    json.loads(events[1].data), json.loads(events[3].data)


def test_slow_per_event_shifts_the_schedule_of_following_events(server: FaultServer) -> None:
    load(server, "event:2", "slow", delay_s=0.02)
    with send(server.port) as s:
        _, complete = read_until(s, 5, until=b"0\r\n\r\n").body()
    assert complete
    sent = [e for e in server.timeline() if e.kind == "event_sent"]
    scheduled = [e.detail["scheduled"] for e in sent[2:]]
    assert all(round(b - a, 3) == 0.02 for a, b in zip(scheduled, scheduled[1:], strict=False))
    assert all(e.t >= e.detail["scheduled"] for e in sent[2:])  # never early


def test_slow_per_byte_still_completes(server: FaultServer) -> None:
    server.load(
        script_from_dict(
            {
                "events": 2,
                "rules": [
                    {
                        "fault": {
                            "phase": "bytes:10",
                            "action": "slow",
                            "delay_s": 0.0005,
                            "per": "byte",
                        }
                    }
                ],
            }
        )
    )
    with send(server.port) as s:
        payload, complete = read_until(s, 10, until=b"0\r\n\r\n").body()
    assert complete and payload.endswith(b"data: [DONE]\n\n")


def test_truncate_ends_chunked_body_cleanly_without_done_and_keeps_the_connection(
    server: FaultServer,
) -> None:
    load(server, "event:3", "truncate", match={"attempts": 1})
    with send(server.port) as s:
        payload, complete = read_until(s, 5, until=b"0\r\n\r\n").body()
        assert complete and len(sse_events(payload)) == 3 and b"[DONE]" not in payload
        s.sendall(request_bytes())
        payload2, complete2 = read_until(s, 5, until=b"0\r\n\r\n").body()
    assert complete2 and payload2.endswith(b"data: [DONE]\n\n")
    assert [r.request_on_connection for r in server.requests()] == [1, 2]


def test_close_idle_closes_a_pooled_connection_after_its_idle_time(server: FaultServer) -> None:
    load(server, "idle", "close_idle", after_s=0.05)
    with send(server.port) as s:
        got = read_until(s, 5)
    assert got.ending == "eof" and got.body()[1]
    assert server.wait_for("fault", timeout=5).detail == {"action": "close_idle", "phase": "idle"}


def test_close_idle_with_rst_resets(server: FaultServer) -> None:
    load(server, "idle", "close_idle", after_s=0, rst=True)
    with send(server.port) as s:
        got = read_until(s, 5)
    assert got.ending == "reset"


def test_fin_at_idle_races_the_next_request_on_the_pooled_connection(server: FaultServer) -> None:
    load(server, "idle", "fin", match={"request_on_connection": 1})
    with send(server.port) as s:
        assert read_until(s, 5, until=b"0\r\n\r\n").body()[1]
        s.sendall(request_bytes())
        got = read_until(s, 5)
    assert (got.data, got.ending) in ((b"", "eof"), (b"", "reset"))
    assert len(server.requests()) == 1


def test_idle_timeout_closes_idle_connections(server: FaultServer) -> None:
    server.load(script_from_dict({"idle_timeout_s": 0.05}))
    with send(server.port) as s:
        got = read_until(s, 5)
    assert got.ending == "eof" and got.body()[1]


def test_connection_close_request_is_answered_then_closed(server: FaultServer) -> None:
    with send(server.port, close=True) as s:
        got = read_until(s, 5)
    assert got.ending == "eof" and got.body()[1] and got.headers["connection"] == "close"


def test_first_byte_delay_holds_the_status_line(server: FaultServer) -> None:
    server.load(script_from_dict({"first_byte_delay_s": 0.1}))
    with send(server.port) as s:
        assert read_until(s, 5, until=b"0\r\n\r\n").body()[1]
    read = server.wait_for("request_read", timeout=1).t
    assert server.wait_for("status_sent", timeout=1).t - read >= 0.09


def test_paced_events_follow_their_absolute_schedule(server: FaultServer) -> None:
    server.load(script_from_dict({"events": 5, "event_interval_s": 0.01}))
    with send(server.port) as s:
        assert read_until(s, 5, until=b"0\r\n\r\n").body()[1]
    sent = [e for e in server.timeline() if e.kind == "event_sent"]
    t0 = sent[0].detail["scheduled"]
    assert [round(e.detail["scheduled"] - t0, 6) for e in sent] == [
        round(0.01 * i, 6) for i in range(len(sent))
    ]
    assert all(e.t >= e.detail["scheduled"] for e in sent)


def test_keepalive_comments_fill_long_waits(server: FaultServer) -> None:
    server.load(
        script_from_dict({"events": 2, "event_interval_s": 0.1, "keepalive_comment_s": 0.02})
    )
    with send(server.port) as s:
        payload, complete = read_until(s, 5, until=b"0\r\n\r\n").body()
    assert complete and payload.count(b": keepalive\n\n") >= 3
    assert sse_events(payload)[-1].data == "[DONE]"


def test_match_by_attempt_fails_first_two_then_succeeds(server: FaultServer) -> None:
    load(server, "request", "status", match={"attempts": [1, 2]}, code=503)
    codes = []
    for _ in range(3):
        with send(server.port) as s:
            codes.append(read_until(s, 5, until=b"\r\n\r\n").status)
    assert codes == [503, 503, 200]
    assert [r.attempt for r in server.requests()] == [1, 2, 3]


def test_server_stops_with_connections_hanging() -> None:
    srv = FaultServer(
        script_from_dict({"rules": [{"fault": {"phase": "headers", "action": "hang"}}]})
    ).start()
    s = connect(srv.port)
    s.sendall(request_bytes(CHAT))
    srv.wait_for("fault", timeout=5)
    srv.stop()
    assert read_until(s, 5).ending in ("eof", "reset")
    s.close()
