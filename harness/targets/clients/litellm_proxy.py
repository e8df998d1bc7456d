"""``litellm-proxy`` and ``litellm-proxy+openai-sdk``: a client behind a real LiteLLM proxy.

The client is the reference stack (``litellm-proxy``) or the bare OpenAI SDK at its
defaults (``litellm-proxy+openai-sdk``), unchanged; only its base URL is the proxy's.
The proxy (:mod:`harness.gateway.litellm_proxy`) is leased from the runner's gateway
pool in ``prepare()`` -- before the leak baseline, outside the child's process tree; a
warm one when a child before this one (killed at its ceiling, say) gave it back, a new
one otherwise -- and is re-pointed at each job's fault server, so the scenario's fault
happens on the proxy's upstream leg and the client sees whatever the proxy makes of it.
This is the real middlebox of the CLOSE-WAIT hang: when the provider FINs mid-stream,
does the proxy close the client's leg, or keep it open and silent with its upstream
socket in CLOSE_WAIT?

Every job's client events carry ``tcp`` events with both legs' kernel TCP states
(``client``, ``proxy_in`` | ``proxy_out``, ``provider``; see
:mod:`harness.gateway.litellm_main`), and its details the measurement
(:func:`harness.gateway.legs.summarize`): ``proxy_close_wait_s`` and the
states each leg went through. A case the runner kills at its ceiling reports no
events (the child is gone); the tests measure that shape directly.

Without the LiteLLM venv (``ci/setup``) every job is skipped with the reason.

Not here: the proxy process (``harness.gateway``), the clients (``reference``,
``openai_sdk``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar
from urllib.parse import urlsplit

from harness.targets.base import CallResult, EventLog, Job, TargetUnsupported
from harness.targets.clients.litellm_sdk import CHILD_ENV, litellm_python, litellm_unavailable
from harness.targets.clients.openai_sdk import OpenAISDKTarget
from harness.targets.clients.reference import ReferenceTarget

__all__ = ["LiteLLMProxyReferenceTarget", "LiteLLMProxySDKTarget", "upstream_of"]

#: A proxied call adds the proxy's own latency (a Python hop per chunk, 50-400 ms a
#: request on a busy 2-core machine) and its Router retries, which do not scale.
PROXY_MIN_CEILING_S = 12.0
#: The reference stack's cases run at this time scale at least (a first-byte deadline of
#: 5 s x 0.05 = 250 ms is shorter than the proxy's own latency): the relay scenarios'
#: floor (``min_time_scale = 0.5``), as the proxy is a middlebox too, and a slower one (a
#: Python hop per chunk; at 0.25, CI at load 18 saw a slow-but-alive stream killed 1 run
#: in 3). The whole case: the fault script and the client's deadlines at one scale, so a
#: first byte the scenario makes late (or early) for its deadline stays so (with the
#: client's deadlines alone raised, a byte 3x past its deadline came in time).
PROXY_MIN_TIME_SCALE = 0.5


class _ThroughProxy:
    """Mixin: start the gateway in ``prepare``; run the client's ``call`` through it."""

    apis: ClassVar[tuple[str, ...]] = ("chat",)
    min_ceiling_s: ClassVar[float] = PROXY_MIN_CEILING_S
    #: How long the runner waits for ``ready``: the proxy's cold start is slow.
    start_s: ClassVar[float] = 300.0
    _gateway: Any = None
    _direct = False
    forkable: ClassVar[bool] = False  # the gateway process started in prepare() is its own
    #: Every child leases a LiteLLM proxy (~10 s of CPU to start one, a Python hop per
    #: chunk): eight started at once on 2 cores put the load at 25+, and the proxy's own
    #: latency past the client's scaled first-byte deadline.
    max_parallel: ClassVar[int] = 2
    #: Its expected hangs only wait, and a child killed at the ceiling gives its gateway
    #: back to the runner's pool warm: more of them wait at once than cases run.
    idle_parallel: ClassVar[int] = 4
    #: The proxy's Router retries each request upstream (num_retries 2, its default).
    requests_per_request: ClassVar[int] = 3
    install: ClassVar[str] = "HARNESS_EXTRA_TARGETS=1 bash ci/setup"

    @classmethod
    def unavailable(cls) -> str | None:
        return litellm_unavailable(proxy=True)

    def prepare(self) -> None:
        self._direct = True  # the client's own warm-up talks to its server directly
        try:
            super().prepare()  # type: ignore[misc]
        finally:
            self._direct = False
        if litellm_unavailable(proxy=True) is not None:
            return
        import os

        from harness.gateway.litellm_proxy import Gateway

        # The runner's pool: a warm proxy left by a child killed at its ceiling serves
        # this one (the runner is this child's parent; the pool exits with it).
        self._gateway = Gateway.lease(
            python=litellm_python(), env={**os.environ, **CHILD_ENV}, owner=os.getppid()
        )
        # One proxied call, so the proxy's first-request costs land before the baseline.
        from harness.server import FaultServer

        with FaultServer() as server:
            warm = Job(base_url=server.base_url, messages=({"role": "user", "content": "warm"},))
            self.call(warm, EventLog())

    def call(self, job: Job, log: EventLog) -> CallResult:
        if self._direct:
            return super().call(job, log)  # type: ignore[misc]
        if self._gateway is None:
            raise TargetUnsupported(
                litellm_unavailable(proxy=True) or "the LiteLLM gateway did not start"
            )
        from harness.gateway.legs import summarize

        self._gateway.begin(upstream_of(job.base_url))
        gw = self._gateway
        if gw.slot is None:  # another network namespace than the runner's: no pool
            lease = " (this child's own: not in the runner's network namespace)"
        else:
            lease = f" (pool slot {gw.slot}, {'warm' if gw.reused else 'started'})"
        fenced = f"; {gw.fenced} request(s) of ended jobs fenced off so far" if gw.fenced else ""
        log.mark("proxy", f"via LiteLLM proxy {gw.url}{lease}{fenced}")
        try:
            proxied = dataclasses.replace(
                job,
                base_url=self._gateway.base_url,
                api_key=self._gateway.master_key,
            )
            return super().call(proxied, log)  # type: ignore[misc]
        finally:
            legs = self._gateway.end()
            log.events.extend(legs.timeline())
            log.events.sort(key=lambda ev: ev[0])
            del log.events[EventLog.MAX_EVENTS :]
            log.details.update(summarize(legs))


class LiteLLMProxyReferenceTarget(_ThroughProxy, ReferenceTarget):
    name = "litellm-proxy"
    min_time_scale = PROXY_MIN_TIME_SCALE


class LiteLLMProxySDKTarget(_ThroughProxy, OpenAISDKTarget):
    name = "litellm-proxy+openai-sdk"


def upstream_of(base_url: str) -> tuple[str, int]:
    """``(host, port)`` of the fault server behind ``base_url``."""
    parts = urlsplit(base_url)
    if parts.hostname is None or parts.port is None:
        raise ValueError(f"base_url {base_url!r} has no host:port")
    return parts.hostname, parts.port
