"""A target whose result alternates between runs (imported in the child as
``runner.repeat_targets``): the stand-in for a client with real nondeterminism, so
``--repeat`` has a verdict that varies to measure. The run count lives in a file
(``HARNESS_TEST_FLIP_FILE``), so it holds across fresh and reused children alike."""

from __future__ import annotations

import json
import os
from pathlib import Path

from harness.targets.base import CallResult, EventLog, Job, Target


class FlipFlopTarget(Target):
    """Even runs: the reply, over real HTTP. Odd runs: the same request, then a clean
    ConnectionError (after the request: a client that never reaches the server did not
    start, which judges nothing)."""

    name = "runner.repeat_targets:FlipFlopTarget"
    apis = ("chat",)

    def call(self, job: Job, log: EventLog) -> CallResult:
        import httpx

        counter = Path(os.environ["HARNESS_TEST_FLIP_FILE"])
        run = int(counter.read_text() or 0) if counter.exists() else 0
        counter.write_text(str(run + 1))
        body = {"model": job.model, "messages": [dict(m) for m in job.messages], "stream": False}
        response = httpx.post(
            job.base_url.rstrip("/") + "/chat/completions",
            json=body,
            headers={"Authorization": f"Bearer {job.api_key}"},
            timeout=10,
        )
        text = json.loads(response.read())["choices"][0]["message"]["content"]
        if run % 2:
            raise ConnectionError(f"run {run}: dropped the reply")
        return CallResult(text=text, finish_reason="stop", attempts=1)
