"""``openai-sdk+guard``: the bare OpenAI SDK at its defaults, plus ``harness.guard``.

Exactly the ``openai-sdk`` target (same calls, same stream consumption, same client
reuse and rebuild), with one change, the two lines an SDK user writes::

    from harness import guard
    openai.OpenAI(..., http_client=guard.http_client(openai, **deadlines))

Errors the guard raised are reported by their typed cause (``guard_common``).

Not here: the guard itself (``harness.guard``).
"""

from __future__ import annotations

from typing import Any

from harness.targets.base import CallResult, EventLog, Job
from harness.targets.clients.guard_common import guard_settings, reraise_typed
from harness.targets.clients.openai_sdk import OpenAISDKTarget

__all__ = ["OpenAISDKGuardTarget"]


class OpenAISDKGuardTarget(OpenAISDKTarget):
    name = "openai-sdk+guard"

    def prepare(self) -> None:
        from harness import guard  # noqa: F401 - imported before the leak baseline

        super().prepare()

    def make_client(self, job: Job) -> Any:
        import openai

        from harness import guard

        http = guard.http_client(openai, settings=guard_settings(job))
        return openai.OpenAI(base_url=job.base_url, api_key=job.api_key, http_client=http)

    def call(self, job: Job, log: EventLog) -> CallResult:
        try:
            return super().call(job, log)
        except Exception as exc:
            reraise_typed(exc, log)
