"""Holds (``harness.server.holds``): a body waits at the N-th counted unit until the
runner releases it, so a network fault the runner fires at ``event:N`` lands there.
Real server, real socket; the release is what the test waits on, never a sleep."""

from __future__ import annotations

import threading

import httpx
import pytest

from harness.faults import script_from_dict
from harness.server import FaultServer
from harness.server.holds import Holds

pytestmark = pytest.mark.timeout(30)

BODY = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def _read_stream(server: FaultServer, seen: list[int]) -> None:
    with (
        httpx.Client(timeout=10) as client,
        client.stream("POST", server.base_url + "/chat/completions", json=BODY) as resp,
    ):
        for line in resp.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                seen.append(1)


def test_the_body_stops_at_the_hold_until_released_and_records_both() -> None:
    with FaultServer(script_from_dict({"events": 12})) as server:
        with httpx.Client(timeout=10) as client:  # the same reply, unheld
            client.post(server.base_url + "/chat/completions", json=BODY)
        server.wait_for("response_done", timeout=10)  # every event of it recorded
        whole = len([e for e in server.timeline() if e.kind == "event_sent"])
        server.reset()
        release = server.hold(3)
        seen: list[int] = []
        reader = threading.Thread(target=_read_stream, args=(server, seen))
        reader.start()
        server.wait_for("held", timeout=10)
        # held after three counted units: none after them was sent
        sent = [e for e in server.timeline() if e.kind == "event_sent"]
        assert len(sent) == 3
        release()
        reader.join(timeout=10)
        assert not reader.is_alive()
        # the reader may have its [DONE] before the server records the end of the body
        server.wait_for("response_done", timeout=10)
        kinds = [e.kind for e in server.timeline()]
        assert kinds.index("held") < kinds.index("released") < kinds.index("response_done")
        released = next(e for e in server.timeline() if e.kind == "released")
        assert released.detail["n"] == 3 and released.detail["timed_out"] is False
        assert len([k for k in kinds if k == "event_sent"]) == whole  # then the whole stream


def test_a_hold_stops_one_body_once_and_load_clears_it() -> None:
    holds = Holds()
    holds.add(2)
    assert holds.next_after(0) == 2 and holds.next_after(2) is None
    assert len(holds.take(2)) == 1 and holds.take(2) == []  # claimed by the first body there
    holds.add(5)
    holds.clear()  # a new script: the hold is released and gone
    assert holds.next_after(0) is None
    with pytest.raises(ValueError, match=r"n: -1 is not valid; allowed: a whole number >= 0"):
        holds.add(-1)


def test_a_hold_at_zero_stops_the_body_after_its_head_before_any_event() -> None:
    # the runner's posture hold: the client is connected and waiting, nothing sent yet
    with FaultServer(script_from_dict({"events": 4})) as server:
        release = server.hold(0)
        seen: list[int] = []
        reader = threading.Thread(target=_read_stream, args=(server, seen))
        reader.start()
        server.wait_for("held", timeout=10)
        kinds = [e.kind for e in server.timeline()]
        assert "headers_sent" in kinds and "event_sent" not in kinds
        release()
        reader.join(timeout=10)
        assert not reader.is_alive() and seen
        server.wait_for("response_done", timeout=10)
        assert len([e for e in server.timeline() if e.kind == "event_sent"]) >= 4


def test_a_released_hold_lets_the_body_through_without_stopping() -> None:
    with FaultServer(script_from_dict({"events": 5})) as server:
        server.hold(2)()  # released before the body gets there
        with httpx.Client(timeout=10) as client:
            resp = client.post(server.base_url + "/chat/completions", json=BODY)
            assert resp.status_code == 200
        assert "held" not in [e.kind for e in server.timeline()]
