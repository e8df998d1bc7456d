"""A fourth API is one new module, and an unknown API raises instead of reading as another.

``echo_api.py`` (this directory) is a whole API with its own route and stream dialect;
registered by the fixture below, the fault server serves it, and the reference client's
stream fold and the guard transport read it, with no edit anywhere else. Real sockets, the real openai SDK.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from harness import apis
from harness.apis import UnknownApi, api_for
from harness.client import ReferenceClient, errors
from harness.client.markers import kind_of
from harness.client.streams import StreamReader, parse_document
from harness.guard import http_client, typed_cause
from harness.guard.scan import one_event
from harness.scenario import script_from_dict
from harness.server import FaultServer
from harness.server.apis import error_body, plan_reply
from harness.sse import Event
from tests.apis import echo_api
from tests.client.support import FAST, USER

#: A loaded machine can be slow to answer a first call: no deadline is under test here.
EASY = FAST.replace(first_byte_s=5.0, stream_idle_s=5.0, stale_call_s=10.0, hard_ceiling_s=30.0)


@pytest.fixture
def echo() -> Iterator[apis.Api]:
    api = apis.register(echo_api.API)
    try:
        yield api
    finally:
        apis.unregister(api.name)


def test_an_unknown_api_raises_everywhere_it_is_asked_for() -> None:
    with pytest.raises(UnknownApi, match="unknown API 'echo': known are chat, responses"):
        api_for("echo")
    for ask in (
        lambda: StreamReader("echo"),
        lambda: kind_of("echo", Event("{}", event="end")),
        lambda: parse_document("echo", b'{"text": "x"}'),
        lambda: plan_reply("echo", {"stream": True}, events=2),
        lambda: one_event("echo"),
    ):
        with pytest.raises(UnknownApi):
            ask()


def test_a_registered_api_is_served_and_read_stream_and_document(echo: apis.Api) -> None:
    with FaultServer() as srv, ReferenceClient(srv.base_url, settings=EASY) as client:
        for stream in (True, False):
            reply = client.complete(USER, api="echo", stream=stream)
            record = srv.requests()[-1]
            assert record.path == "/v1/echo"
            assert reply.text == record.expected_text and reply.text
            assert reply.finish_reason == "done"


def test_its_terminal_rule_holds_a_close_delimited_body_cut_before_end_is_truncated(
    echo: apis.Api, fault_server: FaultServer
) -> None:
    rule = {"fault": {"phase": "event:2", "action": "fin"}}
    fault_server.load(script_from_dict({"events": 6, "framing": "close", "rules": [rule]}))
    with ReferenceClient(fault_server.base_url, settings=EASY.replace(max_attempts=1)) as client:
        with pytest.raises(
            errors.TruncatedStream, match="echo stream ended after 2 events without end"
        ):
            client.complete(USER, api="echo")


def test_its_keepalive_and_error_shapes_are_its_own(echo: apis.Api) -> None:
    plan = plan_reply("echo", {"stream": True, "say": USER}, events=3)
    assert plan.drip("keepalive") == echo_api.BEAT
    assert kind_of("echo", Event("{}", event="beat")) == "comment"
    assert kind_of("echo", Event('{"why": "done"}', event="end")) == "terminal"
    assert one_event("echo")(echo_api.BEAT) == "comment"
    assert StreamReader("echo").feed(Event("{}", event="beat")).kind == "comment"
    doc = json.loads(error_body("echo", 429, "slow down"))
    assert doc["error"]["type"] == "rate_limit_error"  # the default (OpenAI) document shape


def test_a_target_table_by_api_raises_for_an_api_it_does_not_speak() -> None:
    table = {api_for("chat"): "chat call", api_for("responses"): "responses call"}
    assert apis.pick(table, "responses", who="openai-sdk") == "responses call"
    with pytest.raises(ValueError, match="openai-sdk does not speak API 'messages'"):
        apis.pick(table, "messages", who="openai-sdk")
    with pytest.raises(UnknownApi):
        apis.pick(table, "echo", who="openai-sdk")


def test_the_guard_transport_holds_its_terminal_rule_too(
    echo: apis.Api, fault_server: FaultServer
) -> None:
    rule = {"fault": {"phase": "event:2", "action": "fin"}}
    fault_server.load(script_from_dict({"events": 6, "framing": "close", "rules": [rule]}))
    body = {"model": "test-model", "say": USER, "stream": True}
    with http_client(settings=EASY) as http:
        with pytest.raises(Exception, match="echo stream ended .* without end") as info:
            with http.stream("POST", fault_server.base_url + "/echo", json=body) as resp:
                for _ in resp.iter_bytes():
                    pass
        assert isinstance(typed_cause(info.value), errors.TruncatedStream)
        healthy = {**body, "stream": False}
        fault_server.load(script_from_dict({}))
        assert http.post(fault_server.base_url + "/echo", json=healthy).json()["why"] == "done"
