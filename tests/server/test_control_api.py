"""The JSON control API under /_harness/ and the Python timeline API."""

from __future__ import annotations

import threading

import httpx
import pytest

from harness.faults import script_from_dict
from harness.server import FaultServer
from tests.server.rawhttp import read_until, send

pytestmark = pytest.mark.timeout(20)


def test_put_script_loads_a_scaled_script_and_resets(server: FaultServer) -> None:
    with send(server.port) as s:
        read_until(s, 5, until=b"0\r\n\r\n")
    doc = {
        "script": {
            "events": 3,
            "rules": [{"fault": {"phase": "request", "action": "hang", "duration_s": 10}}],
        },
        "time_scale": 0.5,
    }
    r = httpx.put(server.url + "/_harness/script", json=doc)
    assert r.status_code == 200 and r.json()["ok"] is True
    assert server.script.rules[0].fault.action.duration_s == 5
    assert server.requests() == [] and server.timeline() == []


def test_put_bad_script_names_field_and_allowed_values(server: FaultServer) -> None:
    r = httpx.put(server.url + "/_harness/script", json={"script": {"framing": "morse"}})
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["field"] == "script.framing" and "chunked" in err["allowed"]


def test_timeline_and_requests_are_readable_over_http(server: FaultServer) -> None:
    with send(server.port) as s:
        read_until(s, 5, until=b"0\r\n\r\n")
    server.wait_for("response_done", timeout=5)  # recorded after the last write
    events = httpx.get(server.url + "/_harness/timeline").json()["events"]
    kinds = [e["kind"] for e in events]
    assert kinds[:3] == ["accepted", "request_head", "request_read"] and "response_done" in kinds
    reqs = httpx.get(server.url + "/_harness/requests").json()["requests"]
    assert len(reqs) == 1 and reqs[0]["api"] == "chat" and reqs[0]["expected_text"]
    assert httpx.post(server.url + "/_harness/reset").json() == {"ok": True}
    assert server.requests() == []


def test_control_requests_are_not_counted_as_attempts(server: FaultServer) -> None:
    server.load(
        script_from_dict(
            {
                "rules": [
                    {
                        "match": {"attempts": 1, "connections": 1},
                        "fault": {"phase": "request", "action": "status", "code": 500},
                    }
                ]
            }
        )
    )
    with httpx.Client() as http:
        http.get(server.url + "/_harness/timeline")
        r = http.post(server.base_url + "/chat/completions", json={"model": "m", "messages": []})
    assert r.status_code == 500  # the control call on the same connection did not use up attempt 1


def test_wait_for_blocks_until_the_event_and_times_out_clearly(server: FaultServer) -> None:
    with pytest.raises(TimeoutError, match="0 of 1 'fault'"):
        server.wait_for("fault", timeout=0.05)
    server.load(script_from_dict({"rules": [{"fault": {"phase": "event:1", "action": "fin"}}]}))
    done = threading.Event()

    def client() -> None:
        with send(server.port) as s:
            read_until(s, 5)
        done.set()

    t = threading.Thread(target=client)
    t.start()
    ev = server.wait_for("fault", timeout=5)
    t.join()
    assert ev.detail == {"action": "fin", "phase": "event:1"} and ev.request == 1 and ev.conn == 1
    assert server.requests()[0].fault == "fin@event:1"


def test_time_scale_of_the_server_scales_loaded_scripts() -> None:
    script = script_from_dict(
        {
            "event_interval_s": 1.0,
            "rules": [{"fault": {"phase": "headers", "action": "drip", "interval_s": 2.0}}],
        }
    )
    with FaultServer(script, time_scale=0.01) as srv:
        assert srv.script.event_interval_s == pytest.approx(0.01)
        assert srv.script.rules[0].fault.action.interval_s == pytest.approx(0.02)
        srv.load(script, time_scale=0.5)
        assert srv.script.event_interval_s == pytest.approx(0.5)


def test_control_only_connections_are_not_numbered_or_recorded(server: FaultServer) -> None:
    server.load(
        script_from_dict(
            {
                "rules": [
                    {
                        "match": {"connections": 1},
                        "fault": {"phase": "request", "action": "status", "code": 503},
                    }
                ]
            }
        )
    )
    assert httpx.get(server.url + "/_harness/timeline").json()["events"] == []
    r = httpx.post(server.base_url + "/chat/completions", json={"model": "m", "messages": []})
    assert r.status_code == 503
    assert {e.conn for e in server.timeline()} == {1}
    assert server.timeline()[0].kind == "accepted"
