"""harness.gateway.fence: what a request of an ended job gets, checked with the real
OpenAI SDK (its retry rules are the oracle: an answer it would retry is no fence) through
a real relay in front of the fault server, on loopback sockets."""

from __future__ import annotations

import socket
import threading

import httpx
import openai
import pytest

from harness.faults import script_from_dict
from harness.gateway.fence import ANSWER, Fence
from harness.relay import Relay
from harness.server import FaultServer

pytestmark = pytest.mark.timeout(60)

MESSAGES = [{"role": "user", "content": "hi"}]


def _client(base_url: str) -> openai.OpenAI:
    # The SDK's default retries (2) stay on: the point is that they are not used.
    return openai.OpenAI(base_url=base_url, api_key="sk-test", timeout=30)


def test_the_fence_answers_a_request_and_the_sdk_does_not_retry_it():
    with Fence() as fence, _client(f"http://{fence.address[0]}:{fence.address[1]}/v1") as client:
        with pytest.raises(openai.BadRequestError) as raised:
            client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        assert fence.answered == 1  # asked once, not three times
    assert raised.value.code == "job_ended"
    assert raised.value.response.headers["x-should-retry"] == "false"


def _in_background(call):
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except openai.APIError as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def test_an_unanswered_leg_is_answered_in_the_upstreams_place_and_not_retried():
    hang = script_from_dict({"rules": [{"fault": {"phase": "request", "action": "hang"}}]})
    with FaultServer(hang) as server, Relay(upstream=("127.0.0.1", server.port)) as relay:
        with _client(relay.base_url) as client:
            thread, outcome = _in_background(
                lambda: client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            )
            server.wait_for("fault", timeout=10)  # the request is in, held without a reply
            assert relay.close_connections(answer=ANSWER) == 1
            thread.join(30)
        assert not thread.is_alive()
        assert isinstance(outcome.get("error"), openai.BadRequestError)
        assert len(server.requests()) == 1  # the SDK took the answer as final
    assert [e.kind for e in relay.timeline()].count("answered") == 1


def test_a_leg_with_a_reply_under_way_is_closed_not_answered():
    stall = script_from_dict({"rules": [{"fault": {"phase": "event:2", "action": "hang"}}]})
    with FaultServer(stall) as server, Relay(upstream=("127.0.0.1", server.port)) as relay:
        with _client(relay.base_url) as client:
            stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            first = next(iter(stream))  # the reply has begun
            server.wait_for("fault", timeout=10)
            assert relay.close_connections(answer=ANSWER) == 0
            # Cut: an error (the SDK lets httpx's through mid-stream), never an answer
            # spliced into the stream.
            with pytest.raises((openai.APIError, httpx.TransportError)):
                list(stream)
        assert first.choices is not None
    assert "answered" not in [e.kind for e in relay.timeline()]


def test_a_leg_the_relay_already_half_closed_is_not_answered():
    # The upstream closed before any byte (FIN at the request), the relay passed the FIN
    # on, and the client kept its leg open: a write after our FIN raised in asyncio and
    # ended a pooled LiteLLM gateway mid-run. The raw socket is that client.
    fin = script_from_dict({"rules": [{"fault": {"phase": "request", "action": "fin"}}]})
    with FaultServer(fin) as server, Relay(upstream=("127.0.0.1", server.port)) as relay:
        with socket.create_connection(("127.0.0.1", relay.port), timeout=10) as sock:
            sock.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 2\r\n\r\n{}"
            )
            assert sock.recv(1024) == b""  # the relay's FIN: no bytes came from upstream
            assert relay.close_connections(answer=ANSWER) == 0
            assert relay.close_connections() == 0  # and the relay's loop is still serving
    kinds = [e.kind for e in relay.timeline()]
    assert "fin_forwarded" in kinds and "answered" not in kinds
