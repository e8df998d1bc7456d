"""The guard's pieces against what they must agree with: the terminal-marker rules
against the reference stack's stream reader (one rule, two faces), the private pool
attribute the socket binding relies on (both HTTP libraries), a healthy body byte for
byte, and an abort that reaches only the stalled one of two concurrent requests."""

from __future__ import annotations

import json
import threading

import pytest

from harness import guard
from harness.client import ClientSettings, errors
from harness.client.markers import kind_of
from harness.client.streams import StreamReader
from harness.faults import script_from_dict
from harness.guard.sockets import AsyncBoundBackend, BoundBackend
from harness.server.apis import plan_reply
from harness.sse import Comment, Event, SSEDecoder

LIBRARIES = [guard.library_of(None)]
try:
    import httpx2

    if httpx2 not in LIBRARIES:
        LIBRARIES.append(httpx2)
except ImportError:  # pragma: no cover - httpx2 ships with anthropic in both venvs
    pass


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
@pytest.mark.parametrize("with_event_names", [True, False])
def test_markers_agree_with_the_reference_stream_reader_on_every_event(
    api: str, with_event_names: bool
) -> None:
    """Every event of a healthy reply (plus a comment), with and without SSE ``event:``
    lines: the guard's rule and the reader agree on keep-alive and on completeness."""
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}
    plan = plan_reply(api, body, events=5)
    items = [Comment("keepalive")]
    for unit in plan.units:
        items += SSEDecoder().feed(unit)
    if not with_event_names:
        items = [Event(i.data) if isinstance(i, Event) else i for i in items]
    reader = StreamReader(api)
    for item in items:
        was_complete = reader.complete
        step = reader.feed(item)
        kind = kind_of(api, item)
        assert (kind == "comment") == (step.kind == "comment"), item
        assert (kind == "terminal") == (reader.complete and not was_complete), item
    assert reader.complete


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda m: m.__name__)
def test_the_pool_backend_the_binding_wraps_exists_in_every_http_library(lib) -> None:
    sync = guard.GuardTransport(http=lib)
    assert isinstance(sync.inner._pool._network_backend, BoundBackend)
    asyn = guard.AsyncGuardTransport(http=lib)
    assert isinstance(asyn.inner._pool._network_backend, AsyncBoundBackend)
    sync.close()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_a_healthy_body_passes_through_byte_for_byte(fault_server, api: str) -> None:
    lib = guard.library_of(None)
    path = {"chat": "/chat/completions", "responses": "/responses", "messages": "/messages"}[api]
    body = {"model": "m", "stream": True, "max_tokens": 16}
    body["input" if api == "responses" else "messages"] = [{"role": "user", "content": "x"}]
    raw = []
    for transport in (None, guard.GuardTransport(http=lib)):
        with lib.Client(transport=transport) as client:
            with client.stream("POST", fault_server.base_url + path, json=body) as resp:
                raw.append(b"".join(resp.iter_raw()))
    assert raw[0] == raw[1] and raw[0]


@pytest.mark.timeout(30)
def test_an_abort_shuts_down_only_the_stalled_requests_socket(fault_server) -> None:
    """Two requests at once on one guarded client: the stalled one ends by its idle
    deadline; the healthy one (same pool, other connection) streams to its end."""
    stall = {"match": {"attempts": [1]}, "fault": {"phase": "event:2", "action": "hang"}}
    slow = {
        "match": {"attempts": [2]},
        "fault": {"phase": "event:0", "action": "slow", "delay_s": 0.03},
    }
    fault_server.load(script_from_dict({"events": 40, "rules": [stall, slow]}))
    lib = guard.library_of(None)
    settings = ClientSettings(first_byte_s=2.0, stream_idle_s=0.4, stale_call_s=None)
    client = lib.Client(transport=guard.GuardTransport(settings=settings, http=lib))
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}
    url = fault_server.base_url + "/chat/completions"
    results: dict[str, object] = {}

    def stalled() -> None:
        try:
            with client.stream("POST", url, json=body) as resp:
                resp.read()
        except lib.TransportError as exc:
            results["stalled"] = guard.typed_cause(exc)
            results["healthy_done_then"] = "healthy" in results

    first = threading.Thread(target=stalled)
    first.start()
    fault_server.wait_for("fault", timeout=10)  # attempt 1 is now silent mid-stream
    with client.stream("POST", url, json=body) as resp:
        text = b"".join(resp.iter_raw())  # attempt 2: healthy, 40 x 30 ms: outlives the abort
    results["healthy"] = True
    first.join(10)
    client.close()
    assert isinstance(results.get("stalled"), errors.StreamIdleTimeout)
    assert results["healthy_done_then"] is False  # the abort came while both were in flight
    assert text.rstrip().endswith(b"data: [DONE]")
    chunks = [json.loads(line[6:]) for line in text.split(b"\n") if line.startswith(b"data: {")]
    assert len(chunks) >= 40


@pytest.mark.timeout(30)
def test_a_first_byte_stall_on_a_reused_pooled_connection_is_aborted(fault_server) -> None:
    """No connect event fires for a pooled connection: the binding comes from the
    request's own first write on it."""
    rule = {
        "match": {"request_on_connection": [2]},
        "fault": {"phase": "request", "action": "hang"},
    }
    fault_server.load(script_from_dict({"rules": [rule]}))
    lib = guard.library_of(None)
    settings = ClientSettings(first_byte_s=0.3, stream_idle_s=None, stale_call_s=None)
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}
    url = fault_server.base_url + "/chat/completions"
    with lib.Client(transport=guard.GuardTransport(settings=settings, http=lib)) as client:
        with client.stream("POST", url, json=body) as resp:
            resp.read()
        with pytest.raises(lib.ReadTimeout) as info:
            with client.stream("POST", url, json=body) as resp:
                resp.read()
    assert isinstance(guard.typed_cause(info.value), errors.FirstByteTimeout)
    assert [r.connection for r in fault_server.requests()] == [1, 1]
