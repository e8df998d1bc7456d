"""A loaded script starts a new case: a connection of the last case never writes into
the new case's timeline (issue 24: one case's timeline carried another's connection 3)."""

from __future__ import annotations

import pytest

from harness.faults import script_from_dict
from harness.server import FaultServer
from tests.server.rawhttp import read_until, request_bytes, send


@pytest.mark.timeout(30)
def test_a_stream_of_the_last_case_that_ends_after_load_stays_out_of_the_new_timeline(
    server: FaultServer,
) -> None:
    # The last case: a paced stream still running when the next case's script is loaded.
    server.load(
        script_from_dict(
            {
                "events": 12,
                "rules": [{"fault": {"phase": "event:1", "action": "slow", "delay_s": 0.02}}],
            }
        )
    )
    old = send(server.port, close=True)
    assert b"data:" in read_until(old, 5, until=b"data:").data
    server.load(script_from_dict({}))
    rest = read_until(old, 10)  # the old stream's events, its end and its close, after load
    old.close()
    assert rest.ending == "eof" and b"[DONE]" in rest.data
    # The new case: one request on a fresh connection.
    new = send(server.port, close=True)
    assert read_until(new, 10).ending == "eof"
    new.close()
    server.settle()
    kinds = [e.kind for e in server.timeline()]
    assert kinds.count("accepted") == 1, kinds
    assert kinds.count("closed") == 1, kinds
    assert {e.conn for e in server.timeline()} == {1}
    assert [r.connection for r in server.requests()] == [1]


@pytest.mark.timeout(30)
def test_a_pooled_connection_reused_in_the_new_case_is_numbered_afresh(server: FaultServer) -> None:
    sock = send(server.port)
    assert read_until(sock, 5, complete=True).status == 200
    server.load(script_from_dict({}))
    sock.sendall(request_bytes())
    assert read_until(sock, 5, complete=True).status == 200
    sock.close()
    assert [(r.connection, r.request_on_connection) for r in server.requests()] == [(1, 1)]
    assert server.wait_for("response_done", timeout=5).conn == 1
