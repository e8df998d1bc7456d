"""Target doubles for the live tier's target form: each misbehaves in one way a real
client has. They run in real child processes (``python -m harness.targets.runtime.child``);
``name`` is the import path so the child finds them with or without path-based names."""

from __future__ import annotations

import threading

from harness.targets.base import CallResult, EventLog, Job, Target


def _word(job: Job) -> str:
    return job.messages[-1]["content"].split()[-1]


class Echo(Target):
    """Answers every chat with its word: a correct client."""

    name = "tests.live.doubles:Echo"

    def call(self, job: Job, log: EventLog) -> CallResult:
        texts = tuple(_word(job) for _ in range(job.calls))
        return CallResult(text=texts[-1], finish_reason="stop", attempts=job.calls, texts=texts)


class ErrorTextAfterRebuild(Target):
    """After the rebuild every chat "succeeds" with the agent's give-up message (#10933
    as the user saw it: a truthy reply)."""

    name = "tests.live.doubles:ErrorTextAfterRebuild"

    def call(self, job: Job, log: EventLog) -> CallResult:
        texts = tuple(
            _word(job)
            if job.rebuild_after is None or i < job.rebuild_after
            else "API call failed after 3 retries: Connection error."
            for i in range(job.calls)
        )
        return CallResult(text=texts[-1], finish_reason="stop", texts=texts)


class ClosedClientAfterRebuild(Target):
    """Raises httpx's closed-client error after the rebuild."""

    name = "tests.live.doubles:ClosedClientAfterRebuild"

    def call(self, job: Job, log: EventLog) -> CallResult:
        if job.rebuild_after is not None and job.calls > job.rebuild_after:
            raise RuntimeError("Cannot send a request, as the client has been closed.")
        return CallResult(text=_word(job), finish_reason="stop", texts=(_word(job),))


class HangsAfterRebuild(Target):
    """Blocks forever on the chat after the rebuild (a silent socket, no deadline)."""

    name = "tests.live.doubles:HangsAfterRebuild"

    def call(self, job: Job, log: EventLog) -> CallResult:
        if job.rebuild_after is not None and job.calls > job.rebuild_after:
            threading.Event().wait()  # until the runner's SIGKILL
        return CallResult(text=_word(job), finish_reason="stop", texts=(_word(job),))


class WrongWordSecondChat(Target):
    """The second chat answers another word (a stale or cross-talk reply)."""

    name = "tests.live.doubles:WrongWordSecondChat"

    def call(self, job: Job, log: EventLog) -> CallResult:
        texts = tuple("zozozozo1111" if i == 1 else _word(job) for i in range(job.calls))
        return CallResult(text=texts[-1], finish_reason="stop", texts=texts)
