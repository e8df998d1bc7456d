"""Each sampled client socket tied to what it carried, on recorded timelines (issue 34):
a model call, an endpoint probe, nothing, or unknown (not tied); what is judged."""

from __future__ import annotations

import dataclasses

import pytest

from harness.contract.dead_peer import check_dead_peer
from harness.posture.carried import carried_counts, judged, tie
from harness.posture.facts import Keepalive, SocketPosture
from harness.report.posture import posture_note
from harness.server.timeline import RequestRecord

SERVER = "127.0.0.1:8000"
RELAY = "127.0.0.1:9000"
OFF = Keepalive(enabled=False, idle_s=7200.0, interval_s=75.0, count=9)
ON = Keepalive(enabled=True, idle_s=30.0, interval_s=10.0, count=3)


def sock(conn: int, port: int, keepalive: Keepalive = OFF, remote: str = SERVER) -> SocketPosture:
    return SocketPosture(
        conn=conn,
        pid=7,
        local=f"127.0.0.1:{port}",
        remote=remote,
        source="getsockopt",
        keepalive=keepalive,
        user_timeout_s=None,
        nodelay=True,
        state="ESTABLISHED",
    )


def ev(t: float, conn: int, kind: str, request: int | None = None, **detail: object) -> dict:
    return {"t": t, "conn": conn, "request": request, "kind": kind, "detail": detail}


def rec(index: int, conn: int, path: str) -> RequestRecord:
    api = {"/v1/chat/completions": "chat", "/v1/models": "models"}.get(path, "unknown")
    return RequestRecord(index, path, api, True, index, conn, 1, None, "", float(index))


# hermes's shape as the server recorded it: two probe connections (GET /v1/models
# answered 200, GET /api/tags answered 404), an idle pre-opened one, then the POST.
TIMELINE = [
    ev(1.0, 1, "accepted", port=40001),
    ev(1.1, 1, "request_head", 1, method="GET", path="/v1/models", attempt=1, port=40001),
    ev(1.2, 1, "peer_closed", 1, bytes_in=120, bytes_out=300),
    ev(1.3, 2, "accepted", port=40002),
    ev(1.4, 2, "request_head", 2, method="GET", path="/api/tags", attempt=1, port=40002),
    ev(1.5, 2, "peer_closed", 2, bytes_in=110, bytes_out=200),
    ev(1.6, 3, "accepted", port=40003),
    ev(1.7, 3, "peer_closed", None, bytes_in=0, bytes_out=0),
    ev(2.0, 4, "accepted", port=40004),
    ev(2.1, 4, "request_head", 3, method="POST", path="/v1/chat/completions", port=40004),
    ev(2.2, 4, "fault", 3, action="hang", phase="event:1"),
]
RECORDS = [rec(1, 1, "/v1/models"), rec(2, 2, "/api/tags"), rec(3, 4, "/v1/chat/completions")]
SOCKETS = [sock(1, 40001), sock(2, 40002), sock(3, 40003), sock(4, 40004, ON), sock(5, 40999)]


def test_each_socket_is_tied_by_its_port_to_what_its_server_connection_carried():
    tied = tie(SOCKETS, TIMELINE, RECORDS)
    assert [(p.carried, p.server_conn) for p in tied] == [
        ("probe", 1),
        ("probe", 2),
        ("nothing", 3),
        ("model_call", 4),
        ("unknown", None),  # no connection of this case's server had port 40999
    ]
    assert tied[3].requests == ((3, "/v1/chat/completions"),)
    assert tied[0].requests == ((1, "/v1/models"),)
    # the JSON round trip keeps the tie; a file from before it reads "unknown"
    again = SocketPosture.from_dict(tied[3].to_dict())
    assert (again.carried, again.server_conn, again.requests) == ("model_call", 4, tied[3].requests)
    old = {k: v for k, v in tied[3].to_dict().items() if k not in ("carried", "requests")}
    assert SocketPosture.from_dict(old).carried == "unknown"


def test_only_the_model_call_sockets_are_judged_the_others_shown_apart():
    tied = tie(SOCKETS, TIMELINE, RECORDS)
    chosen, apart = judged(tied)
    assert [p.conn for p in chosen] == [4]
    assert carried_counts(apart) == "2 probe, 1 nothing, 1 unknown"
    check = check_dead_peer("waiting", 120.0, [p.to_dict() for p in tied])
    assert (check.status, check.bound_s, check.connections) == ("pass", 60.0, 1)
    assert check.to_dict()["apart"] == "2 probe, 1 nothing, 1 unknown"
    note = posture_note(tied)
    assert note.startswith("keepalive 30/10x3 user-timeout off nodelay, dead peer noticed: <= 60s")
    assert note.endswith(
        "; not judged: 2 probe, 1 nothing, 1 unknown (keepalive off user-timeout off nodelay)"
    )


def test_a_stock_model_call_socket_still_fails_and_probes_alone_judge_nothing():
    stock = [sock(1, 40001), sock(4, 40004)]
    check = check_dead_peer("waiting", 120.0, tie(stock, TIMELINE, RECORDS))
    assert check.status == "fail" and "no keepalive on the model-call socket" in check.reason
    only_probes = check_dead_peer("waiting", 120.0, tie([sock(1, 40001)], TIMELINE, RECORDS))
    assert only_probes.status == "not_applicable"
    assert (
        "no client socket that carried a model call was sampled (only 1 probe)"
        in only_probes.reason
    )
    assert posture_note(tie([sock(1, 40001)], TIMELINE, RECORDS)).startswith(
        "posture of the model call unknown (only 1 probe"
    )


def test_untied_sockets_are_judged_as_before_when_none_is_tied():
    """Toxiproxy does not say which upstream connection carries which client's: every
    socket stays unknown and the worst of them is judged, never a false pass."""
    through_proxy = tie([sock(1, 50001, ON), sock(2, 50002)], TIMELINE, RECORDS)
    assert {p.carried for p in through_proxy} == {"unknown"}
    check = check_dead_peer("waiting", 120.0, through_proxy)
    assert check.status == "fail" and check.connections == 2
    assert "the 2 untied sockets" in check.reason


def test_through_the_relay_the_client_leg_is_tied_by_the_relays_own_record():
    timeline = [
        {
            "t": 1.0,
            "source": "relay",
            "conn": 1,
            "leg": "client",
            "kind": "accepted",
            "detail": "from 127.0.0.1:41000",
        },
        {
            "t": 1.1,
            "source": "relay",
            "conn": 1,
            "leg": "upstream",
            "kind": "upstream_connected",
            "detail": "127.0.0.1:42000 -> 127.0.0.1:8000",
        },
        {
            "t": 1.2,
            "source": "relay",
            "conn": 2,
            "leg": "client",
            "kind": "accepted",
            "detail": "from 127.0.0.1:41001",
        },
        {
            "t": 1.3,
            "source": "relay",
            "conn": 2,
            "leg": "upstream",
            "kind": "upstream_connected",
            "detail": "127.0.0.1:42001 -> 127.0.0.1:8000",
        },
        ev(1.15, 1, "accepted", port=42000),
        ev(1.16, 1, "request_head", 1, method="GET", path="/v1/models", port=42000),
        ev(1.35, 2, "accepted", port=42001),
        ev(1.36, 2, "request_head", 2, method="POST", path="/v1/chat/completions", port=42001),
    ]
    records = [rec(1, 1, "/v1/models"), rec(2, 2, "/v1/chat/completions")]
    tied = tie([sock(1, 41000, remote=RELAY), sock(2, 41001, ON, remote=RELAY)], timeline, records)
    assert [(p.carried, p.server_conn) for p in tied] == [("probe", 1), ("model_call", 2)]


def test_a_pooled_connection_of_an_earlier_case_is_tied_by_its_request_heads_port():
    # accepted in the last case (not in this timeline); its request head names the port
    timeline = [
        ev(5.0, 1, "request_head", 1, method="POST", path="/v1/chat/completions", port=43000)
    ]
    [p] = tie([sock(1, 43000, ON)], timeline, [rec(1, 1, "/v1/chat/completions")])
    assert (p.carried, p.server_conn) == ("model_call", 1)


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/openai/v1/responses", "/v1/messages"])
def test_a_probe_and_a_model_call_on_one_connection_make_it_a_model_call(path):
    timeline = [ev(1.0, 1, "accepted", port=44000)]
    records = [rec(1, 1, "/v1/models"), rec(2, 1, path)]
    [p] = tie([sock(1, 44000)], timeline, records)
    assert p.carried == "model_call" and [i for i, _ in p.requests] == [1, 2]


def test_a_model_call_socket_read_before_its_request_came_is_not_judged():
    """A retry's socket read while the client had connected but not yet set its options
    (sampled at another connection's fault): "keepalive off" there is no fact of the
    call. The same socket read after its request head is judged."""
    early = dataclasses.replace(sock(4, 40004), read_t=2.05)  # the head came at 2.1
    later = dataclasses.replace(sock(4, 40004, ON), read_t=2.2)
    [p] = tie([early], TIMELINE, RECORDS)
    assert p.carried == "model_call_early"
    check = check_dead_peer("waiting", 120.0, [p])
    assert check.status == "not_applicable" and "1 model-call-early" in check.reason
    [q] = tie([later], TIMELINE, RECORDS)
    assert q.carried == "model_call"
    assert check_dead_peer("waiting", 120.0, [q]).status == "pass"
