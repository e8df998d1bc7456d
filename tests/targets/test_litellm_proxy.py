"""``litellm-proxy``: the leg bookkeeping (pure), and a real LiteLLM proxy in front of the
fault server when the provider FINs mid-stream (the CLOSE-WAIT question).

The real-proxy tests skip without ``.cache/litellm-venv`` and fail instead when ``CI``
and ``HARNESS_EXTRA_TARGETS=1`` are set; they share one gateway (a LiteLLM proxy takes tens of seconds to start).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from subprocess import PIPE

import pytest

from harness import tcpstate
from harness.faults import script_from_dict
from harness.gateway.legs import JobLegs, summarize
from harness.gateway.litellm_proxy import Gateway, proxy_config, same_network_namespace
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


def test_a_job_whose_legs_were_never_seen_summarizes_to_nothing_held():
    # A call over between two samples (a warm pooled proxy, a fast failure): every leg
    # "-" in each sample and no relay event. The summary crashed on it (a live dry run in
    # CI, 2026-12-02 18:35 UTC: zip() argument 2 is longer than argument 1).
    dashes = {"client": "-", "proxy_in": "-"}
    for samples in ([], [{"t": 0.0, "states": dashes}, {"t": 0.05, "states": dashes}]):
        legs = JobLegs(samples=samples, relay=[])
        assert legs.states() == [] and legs.timeline() == []
        summary = summarize(legs)
        assert summary["proxy_close_wait_s"] == 0.0
        assert summary["client_states"] == [] and summary["provider_states"] == []


def test_proxy_config_routes_every_model_to_the_given_base():
    route = proxy_config("http://127.0.0.1:9/v1")["model_list"][0]
    assert route["model_name"] == "*"
    assert route["litellm_params"]["model"] == "openai/*"
    assert route["litellm_params"]["api_base"] == "http://127.0.0.1:9/v1"
    assert upstream_of("http://127.0.0.1:5000/v1") == ("127.0.0.1", 5000)


@pytest.mark.timeout(60)
def test_a_child_in_a_kernel_scenarios_namespace_is_told_it_is_not_in_the_runners():
    """The lease's namespace check, on the kernel's own namespaces: a child started the
    way the runner starts a kernel scenario's (``ip netns exec``) is not in its parent's
    network namespace, so it gets a gateway of its own instead of the pool's (in 18:09
    UTC's and 20:35 UTC's runs on 2026-12-02, gateways a kernel case had started in the
    pool died with its namespace: "the gateway is gone: Broken pipe" for the next lease)."""
    from harness.netem.netns import NetnsPair
    from harness.netem.prereq import require_netns
    from harness.paths import PROJECT_ROOT

    require_netns()
    assert same_network_namespace(os.getpid())
    code = "import os, sys; from harness.gateway.litellm_proxy import same_network_namespace as s; print(s(int(sys.argv[1])), s(os.getpid()))"
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    with NetnsPair() as pair:
        child = pair.popen(
            "client", [sys.executable, "-c", code, str(os.getpid())], stdout=PIPE, env=env
        )
        out, _ = child.communicate(timeout=30)
    assert out.split() == [b"False", b"True"]


@dataclass(frozen=True)
class _Pool:
    """A gateway pool of the module's own: its owner is a process the module ends."""

    owner: subprocess.Popen[bytes]
    where: Path

    def lease(self) -> Gateway:
        env = {**os.environ, **CHILD_ENV}
        return Gateway.lease(
            python=litellm_python(), env=env, owner=self.owner.pid, pool=self.where
        )


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    skip_or_fail("litellm-proxy", litellm_unavailable(proxy=True))
    # The owner reads its stdin until it closes: the module ends it, and with it the pool.
    owner = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=PIPE)
    yield _Pool(owner, tmp_path_factory.mktemp("gateways"))
    if owner.poll() is None:
        owner.stdin.close()
        owner.wait(10)


@pytest.fixture
def gateway(pool):
    gw = pool.lease()
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
    before = _close_waits(gateway.proxy_pid)  # a pooled proxy: earlier tests' sockets
    with FaultServer(script) as server:
        gateway.begin(upstream_of(server.base_url))
        text, error = _stream_through(gateway, server, timeout_s=60)
        # The proxy ends the client's stream first and closes its upstream socket in its
        # own time after: on a loaded machine after the job's legs were taken (the last
        # sample then still showed CLOSE_WAIT). The kernel's table says when it did.
        held = _close_waits(gateway.proxy_pid, within_s=30, besides=before)
        legs = gateway.end()
        expected = server.requests()[-1].expected_text
    summary = summarize(legs)
    assert error is not None or text != expected  # never the full reply
    assert error != "APITimeoutError"  # ended by the proxy, not by the client's timeout
    assert held == set()  # the proxy closed it
    assert summary["proxy_close_wait_s"] < 60


def _close_waits(
    pid: int, *, within_s: float = 0.0, besides: set[int] | frozenset[int] = frozenset()
) -> set[int]:
    """The inodes of ``pid``'s sockets in CLOSE_WAIT but ``besides``, once none is left or
    ``within_s`` has passed. No event tells a socket's state: the kernel's table is read
    until then, a bounded wait."""
    deadline = time.monotonic() + within_s
    while True:
        sockets = tcpstate.select(tcpstate.sockets_of_pid(pid), state="CLOSE_WAIT")
        held = {s.inode for s in sockets} - set(besides)
        if not held or time.monotonic() >= deadline:
            return held
        time.sleep(0.05)


#: A target child's lease, cut off mid-request: it leases from the pool, sends a streamed
#: request through the proxy to a server that never answers, says so, and waits to be killed.
_LEASE_AND_HANG = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path

    import httpx

    from harness.gateway.litellm_proxy import Gateway
    from harness.targets.clients.litellm_sdk import CHILD_ENV, litellm_python

    owner, where, port = int(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    gw = Gateway.lease(
        python=litellm_python(), env={**os.environ, **CHILD_ENV}, owner=owner, pool=where
    )
    gw.begin(("127.0.0.1", port))
    print(json.dumps({"slot": gw.slot, "proxy_pid": gw.proxy_pid}), flush=True)
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    headers = {"Authorization": "Bearer " + gw.master_key}
    httpx.post(gw.base_url + "/chat/completions", json=body, headers=headers, timeout=600)
    """
)


@pytest.mark.timeout(400)
def test_a_child_killed_mid_request_gives_its_gateway_back_warm_and_the_pool_ends_with_its_owner(
    pool,
):
    """The pooled gateway outlives a target child killed at the runner's ceiling: the next
    lease gets the same warm proxy (no cold start), its job is served in full, and every
    pooled proxy exits once the pool's owner (the runner) does, leaving no file behind."""
    hang = script_from_dict({"rules": [{"fault": {"phase": "request", "action": "hang"}}]})
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    with FaultServer(hang) as stalled:
        args = [str(pool.owner.pid), str(pool.where), str(stalled.port)]
        child = subprocess.Popen(
            [sys.executable, "-c", _LEASE_AND_HANG, *args], stdout=PIPE, env=env
        )
        try:
            leased = json.loads(child.stdout.readline())
            stalled.wait_for("fault", timeout=120)  # the request is in flight, held upstream
        finally:
            child.kill()
            child.wait(10)
    # The next job's reply is slow (about 3 s) so that a retry of the killed child's request,
    # if the proxy made one, lands on this job's server while it runs (the proxy's own
    # retries back off 0.5-2 s): CI, 2026-12-02, saw that stray reach the next job.
    slow = script_from_dict(
        {"rules": [{"fault": {"phase": "event:1", "action": "slow", "delay_s": 0.15}}]}
    )
    with FaultServer(slow) as server:
        gw = pool.lease()
        try:
            assert (gw.slot, gw.reused, gw.proxy_pid) == (leased["slot"], True, leased["proxy_pid"])
            gw.begin(upstream_of(server.base_url))
            text, error = _stream_through(gw, server, timeout_s=60)
            gw.end()
            served = [r.expected_text for r in server.requests()]
        finally:
            gw.close()
    assert (error, served) == (None, [text])  # its own request only, served in full
    proxy = os.pidfd_open(gw.proxy_pid)
    try:
        pool.owner.stdin.close()
        pool.owner.wait(10)
        import select

        assert select.select([proxy], [], [], 60)[0], "the pooled proxy outlived its owner"
        assert not pool.where.exists()  # its one slot's lock and socket went with it
    finally:
        os.close(proxy)
