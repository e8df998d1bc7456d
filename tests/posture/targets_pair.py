"""Test targets written outside the package (``posture.targets_pair:Class`` with the
tests directory on PYTHONPATH): one plain httpx streaming client, two variants that
differ only in the socket options they hand httpx, and the reference stack with its
keepalive options dropped and its own keepalive self-check off."""

from __future__ import annotations

import json
import socket
from typing import Any, ClassVar

from harness.targets.base import CallResult, EventLog, Job, Target
from harness.targets.mutants import StackTarget

#: httpx's read timeout, real seconds: a silent peer ends the call quickly.
READ_TIMEOUT_S = 1.0
#: The keepalive the test sets: a dead peer is noticed after 20 + 5 x 8 = 60 s.
KEEPALIVE = {"idle_s": 20, "interval_s": 5, "count": 8}


class _PlainHttpx(Target):
    apis = ("chat",)
    reusable = True
    socket_options: ClassVar[list[tuple[int, int, int]]] = []

    def call(self, job: Job, log: EventLog) -> CallResult:
        import httpx

        transport = httpx.HTTPTransport(socket_options=self.socket_options)
        body = {"model": job.model, "stream": True, "messages": [dict(m) for m in job.messages]}
        text = []
        with httpx.Client(transport=transport, timeout=httpx.Timeout(READ_TIMEOUT_S)) as client:
            with client.stream(
                "POST", f"{job.base_url}/chat/completions", json=body, headers=_auth(job)
            ) as response:
                response.raise_for_status()
                for line in response.iter_lines():
                    if line.startswith("data: ") and line != "data: [DONE]":
                        text += _delta(json.loads(line[6:]))
        return CallResult(text="".join(text), finish_reason="stop")


class KeepaliveHttpx(_PlainHttpx):
    name = "keepalive-httpx"
    socket_options: ClassVar[list[tuple[int, int, int]]] = [
        (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1),
        (socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, KEEPALIVE["idle_s"]),
        (socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, KEEPALIVE["interval_s"]),
        (socket.IPPROTO_TCP, socket.TCP_KEEPCNT, KEEPALIVE["count"]),
    ]


class BareHttpx(_PlainHttpx):
    name = "bare-httpx"


#: hermes-agent #11277's keepalive: a dead peer is noticed after 30 + 10 x 3 = 60 s.
MODEL_CALL_KEEPALIVE = {"idle_s": 30, "interval_s": 10, "count": 3}


class ProbingKeepaliveHttpx(_PlainHttpx):
    """hermes's shape: endpoint probes (``GET /v1/models``, ``GET /api/tags``: a 404) on a
    client of their own without keepalive, then the model call on a client with
    keepalive 30/10x3. The probe client stays open until the call is done, so its
    socket is sampled beside the model call's."""

    name = "probing-keepalive-httpx"
    socket_options: ClassVar[list[tuple[int, int, int]]] = [
        (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1),
        (socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, MODEL_CALL_KEEPALIVE["idle_s"]),
        (socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, MODEL_CALL_KEEPALIVE["interval_s"]),
        (socket.IPPROTO_TCP, socket.TCP_KEEPCNT, MODEL_CALL_KEEPALIVE["count"]),
    ]

    def call(self, job: Job, log: EventLog) -> CallResult:
        import httpx

        root = job.base_url.removesuffix("/v1")
        with httpx.Client(timeout=httpx.Timeout(READ_TIMEOUT_S)) as probes:
            probes.get(f"{job.base_url}/models", headers=_auth(job))
            probes.get(f"{root}/api/tags")
            return super().call(job, log)


class UncheckedNoKeepalive(StackTarget):
    """The reference stack with the ``no-keepalive`` seam, and the stack's own
    ``KeepaliveNotSet`` self-check switched off: only a check outside the client can
    tell its sockets carry no keepalive."""

    name = "unchecked-no-keepalive"
    mutant: ClassVar[str | None] = "no-keepalive"

    def call(self, job: Job, log: EventLog) -> CallResult:
        from unittest import mock

        from harness.targets.mutants import table as mutants

        # The self-check is the probe's verdict; with it silenced the stack is a plain
        # keepalive-less client. (A test seam inside the test's own target.)
        with mock.patch.object(mutants._Probe, "violation", lambda self, settings: None):
            return super().call(job, log)


def _auth(job: Job) -> dict[str, str]:
    return {"Authorization": f"Bearer {job.api_key}"}


def _delta(event: Any) -> list[str]:
    return [c.get("delta", {}).get("content") or "" for c in event.get("choices", [])]
