"""A target of the tests' own with the hermes-agent #10933 bug (imported in the child as
``runner.causes_double``): it keeps using an HTTP client it has closed.

Like hermes, it turns what it caught into reply text ("API call failed after 3 retries:
Connection error."), and says it made 3 attempts on that call -- none of which could
reach the server, because a closed httpx client raises before it sends anything."""

from __future__ import annotations

import logging

from harness.targets.base import CallResult, EventLog, Job, Target

#: Attempts per call before the agent gives up (hermes's ``max_retries``).
RETRIES = 3
log_ = logging.getLogger("closed-client-agent")


class ClosedClientAgent(Target):
    """Two calls on one agent; its client is closed after the first (the bug)."""

    name = "closed-client-agent"
    apis = ("chat",)
    reusable = True

    def call(self, job: Job, log: EventLog) -> CallResult:
        import httpx

        client = httpx.Client(timeout=10)
        texts: list[str] = []
        attempts = 0
        try:
            for _ in range(job.calls):
                text, made = self._turn(client, job, log)
                texts.append(text)
                attempts += made
                client.close()  # the bug: the agent's stored client is closed after a call
        finally:
            client.close()
        return CallResult(
            text=texts[-1], finish_reason="stop", attempts=attempts, texts=tuple(texts)
        )

    def _turn(self, client, job: Job, log: EventLog) -> tuple[str, int]:
        body = {"model": job.model, "messages": [dict(m) for m in job.messages], "stream": False}
        url = job.base_url.rstrip("/") + "/chat/completions"
        headers = {"Authorization": f"Bearer {job.api_key}"}
        for attempt in range(1, RETRIES + 1):
            try:
                response = client.post(url, json=body, headers=headers)
                return response.json()["choices"][0]["message"]["content"], attempt
            except RuntimeError as exc:  # httpx: "Cannot send a request, as the client..."
                try:
                    raise ConnectionError("Connection error.") from exc  # the SDK's wrapper
                except ConnectionError as wrapped:
                    log.caught(wrapped)
                    log_.warning("API call failed (attempt %s/%s)", attempt, RETRIES)
        return f"API call failed after {RETRIES} retries: Connection error.", RETRIES


class UninstalledTarget(Target):
    """A target whose client is not installed here: the run stops before any case."""

    name = "uninstalled"
    install = "pip install uninstalled-client"

    @classmethod
    def unavailable(cls) -> str | None:
        return "uninstalled-client is not installed in .cache/uninstalled-venv"

    def call(self, job: Job, log: EventLog) -> CallResult:
        raise AssertionError("a target that cannot run must never get a case")


class ProbingClosedClientAgent(ClosedClientAgent):
    """hermes's shape of the same bug: before its first call it probes the endpoint
    (``GET /v1/models``, ``/api/tags``, ``/props``: 404s) on a client of its own per
    probe, each closed at once."""

    name = "probing-closed-client-agent"
    PROBES = ("/v1/models", "/api/tags", "/props")

    def call(self, job: Job, log: EventLog) -> CallResult:
        import httpx

        root = job.base_url.rstrip("/").removesuffix("/v1")
        for path in self.PROBES:
            with httpx.Client(timeout=10) as probe:
                probe.get(root + path)
        return super().call(job, log)
