"""``litellm-proxy``: the leg bookkeeping (pure), and a real LiteLLM proxy in front of the
fault server when the provider FINs mid-stream (the CLOSE-WAIT question).

The real-proxy tests skip without ``.cache/litellm-venv`` and fail instead when ``CI``
and ``HARNESS_EXTRA_TARGETS=1`` are set; they share one gateway (a LiteLLM proxy takes tens of seconds to start).
"""

from __future__ import annotations

import os

import pytest

from harness.faults import script_from_dict
from harness.gateway.litellm_proxy import Gateway, JobLegs, proxy_config, summarize
from harness.server import FaultServer
from harness.targets.clients.litellm_proxy import upstream_of
from harness.targets.clients.litellm_sdk import CHILD_ENV, litellm_python, litellm_unavailable
from tests.targets.ci_required import skip_or_fail


def _relay_tcp(t: float, conn: int, client: str, upstream: str) -> dict:
    states = {"client": client, "relay_client": "x", "relay_upstream": "x", "upstream": upstream}
    return {"t": t, "conn": conn, "leg": "relay", "kind": "tcp", "states": states}


def test_close_wait_is_counted_only_while_the_client_leg_is_established():
    legs = JobLegs(
        samples=[
            {"t": 0.0, "states": {"client": "ESTABLISHED", "proxy_in": "ESTABLISHED"}},
            {"t": 3.0, "states": {"client": "-", "proxy_in": "-"}},
        ],
        relay=[
            _relay_tcp(0.5, 1, "ESTABLISHED 127.0.0.1:1->127.0.0.1:2", "ESTABLISHED x"),
            _relay_tcp(1.0, 1, "CLOSE_WAIT 127.0.0.1:1->127.0.0.1:2", "FIN_WAIT2 x"),
            _relay_tcp(4.0, 1, "gone", "gone"),
        ],
    )
    summary = summarize(legs)
    assert summary["proxy_close_wait_s"] == pytest.approx(2.0)  # 1.0 .. 3.0, then no client
    assert summary["proxy_out_states"] == ["-", "ESTABLISHED", "CLOSE_WAIT"]
    assert summary["client_states"] == ["ESTABLISHED", "-"]
    lines = [d for _, kind, d in legs.timeline() if kind == "tcp"]
    assert any(
        "client=ESTABLISHED | proxy_in=ESTABLISHED | proxy_out=CLOSE_WAIT" in ln for ln in lines
    )


def test_proxy_config_routes_every_model_to_the_given_base():
    route = proxy_config("http://127.0.0.1:9/v1")["model_list"][0]
    assert route["model_name"] == "*"
    assert route["litellm_params"]["model"] == "openai/*"
    assert route["litellm_params"]["api_base"] == "http://127.0.0.1:9/v1"
    assert upstream_of("http://127.0.0.1:5000/v1") == ("127.0.0.1", 5000)


@pytest.fixture(scope="module")
def gateway():
    skip_or_fail("litellm-proxy", litellm_unavailable(proxy=True))
    gw = Gateway.start(python=litellm_python(), env={**os.environ, **CHILD_ENV})
    yield gw
    gw.close()


def _stream_through(gateway, server, *, timeout_s: float) -> tuple[str, str | None]:
    import openai

    client = openai.OpenAI(
        base_url=gateway.base_url, api_key=gateway.master_key, timeout=timeout_s, max_retries=0
    )
    parts: list[str] = []
    try:
        stream = client.chat.completions.create(
            model="test-model", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        for chunk in stream:
            for choice in chunk.choices:
                parts.append(choice.delta.content or "")
        return "".join(parts), None
    except openai.APIError as exc:
        return "".join(parts), type(exc).__name__
    finally:
        client.close()


@pytest.mark.timeout(400)
def test_healthy_stream_through_the_proxy_is_the_full_reply(gateway):
    with FaultServer() as server:
        gateway.begin(upstream_of(server.base_url))
        text, error = _stream_through(gateway, server, timeout_s=60)
        gateway.end()
        expected = server.requests()[-1].expected_text
    assert error is None
    assert text == expected


@pytest.mark.timeout(400)
def test_provider_fin_mid_stream_is_not_held_silent_by_the_proxy(gateway):
    # The CLOSE-WAIT question: the proxy gets the FIN on its upstream socket. It closes
    # that socket and ends the client's stream with an error instead of keeping the
    # client's leg open and silent; the SDK's 60 s read timeout never comes into it.
    script = script_from_dict({"rules": [{"fault": {"phase": "event:3", "action": "fin"}}]})
    with FaultServer(script) as server:
        gateway.begin(upstream_of(server.base_url))
        text, error = _stream_through(gateway, server, timeout_s=60)
        legs = gateway.end()
        expected = server.requests()[-1].expected_text
    summary = summarize(legs)
    assert error is not None or text != expected  # never the full reply
    assert error != "APITimeoutError"  # ended by the proxy, not by the client's timeout
    assert "CLOSE_WAIT" not in legs.states()[-1][1]["proxy_out"]  # the proxy closed it
    assert summary["proxy_close_wait_s"] < 60
