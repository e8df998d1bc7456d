"""Trigger points count LLM API exchanges only, never an agent's metadata probes."""

from __future__ import annotations

import httpx
import pytest

from harness.faults.network.trigger import Trigger, parse_trigger, wait_for_trigger
from harness.server import FaultServer

pytestmark = pytest.mark.timeout(30)

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def test_done_and_request_points_skip_metadata_probes():
    with FaultServer() as srv, httpx.Client(base_url=srv.url, timeout=5) as http:
        assert http.get("/v1/models").status_code == 200  # a probe: a response, not a call
        assert http.get("/api/tags").status_code == 404
        assert http.post("/v1/chat/completions", json=CHAT).status_code == 200
        done = wait_for_trigger(parse_trigger("done:1"), srv, timeout=5)
        read = wait_for_trigger(Trigger("request", 1), srv, timeout=5)
        (chat,) = [r for r in srv.requests() if r.path == "/v1/chat/completions"]
        assert done.request == chat.index and read.request == chat.index
        with pytest.raises(TimeoutError):  # only one LLM exchange so far
            wait_for_trigger(parse_trigger("done:2"), srv, timeout=0.2)
        assert http.post("/v1/chat/completions", json=CHAT).status_code == 200
        second = wait_for_trigger(parse_trigger("done:2"), srv, timeout=5)
        assert second.request == max(r.index for r in srv.requests())


def test_accept_point_still_counts_every_connection():
    with FaultServer() as srv, httpx.Client(base_url=srv.url, timeout=5) as http:
        http.get("/v1/models")
        assert wait_for_trigger(Trigger("accept", 1), srv, timeout=5).kind == "accepted"
        assert wait_for_trigger(Trigger("start", 1), srv, timeout=5) is None
