"""Targets for the not-exercised and did-not-start tests (imported in the child as
``runner.reach_targets``): real OpenAI SDK clients that skip what a scenario needs, and
children that never get to the wire."""

from __future__ import annotations

import os
import sys
import time

from harness.targets.base import CallResult, EventLog, Job, Target, run_calls


def _ask(client, job: Job) -> str:
    reply = client.chat.completions.create(
        model=job.model, messages=[dict(m) for m in job.messages], stream=False
    )
    return reply.choices[0].message.content or ""


class FirstCallOnlyTarget(Target):
    """Makes the job's first call and returns its text for every call: "1 of 3 calls"."""

    name = "first-call-only"
    apis = ("chat",)

    def call(self, job: Job, log: EventLog) -> CallResult:
        import openai

        with openai.OpenAI(base_url=job.base_url, api_key=job.api_key, max_retries=0) as client:
            text = _ask(client, job)
        return CallResult(text=text, texts=(text,) * job.calls, attempts=job.calls)


class NewClientPerCallTarget(Target):
    """A fresh SDK client (and so a fresh connection) for every call: nothing is pooled."""

    name = "new-client-per-call"
    apis = ("chat",)

    def call(self, job: Job, log: EventLog) -> CallResult:
        import openai

        def one() -> str:
            with openai.OpenAI(base_url=job.base_url, api_key=job.api_key, max_retries=0) as client:
                return _ask(client, job)

        texts = run_calls(job, log, one)
        return CallResult(text=texts[-1], texts=tuple(texts), attempts=len(texts))


class SetupInCallTarget(Target):
    """Imports its client inside ``call()`` for longer than the case's ceiling (an own-venv
    agent written the documented way, on a loaded machine), then makes one call."""

    name = "setup-in-call"
    apis = ("chat",)
    SETUP_S = 1.5

    def call(self, job: Job, log: EventLog) -> CallResult:
        time.sleep(self.SETUP_S)  # stands for slow imports, not synchronisation
        import openai

        with openai.OpenAI(base_url=job.base_url, api_key=job.api_key, max_retries=0) as client:
            return CallResult(text=_ask(client, job), attempts=1)


class StuckInSetupTarget(SetupInCallTarget):
    """Its set-up inside ``call()`` outlasts its own start-up allowance."""

    name = "stuck-in-setup"
    start_allowance_s = 0.5
    SETUP_S = 30.0


class CrashAtImportTarget(Target):
    """The child dies while importing its client, before it ever says ``ready``."""

    name = "crash-at-import"
    apis = ("chat",)

    def prepare(self) -> None:
        print("fake_agent: cannot load libfake.so", file=sys.stderr, flush=True)
        os._exit(3)

    def call(self, job: Job, log: EventLog) -> CallResult:
        raise AssertionError("never called: the child died in prepare()")
