"""The job loop of a target that drives one SDK client: make it, make the job's calls
on it one after another (``base.run_calls``: the pause between them, the rebuild the job
asks for), close it.

:class:`SDKClientTarget` is that job once; a target says only how to make its client
(``make_client``) and make one call on it (``one_call``), and may use the client once
more before it is closed (``before_close``: the contract's follow-up call).

Not here: the SDKs' own calls (``openai_sdk``, ``anthropic_sdk`` and their guarded
twins).
"""

from __future__ import annotations

from typing import Any

from harness.targets.base import CallResult, EventLog, Job, Target, run_calls

__all__ = ["SDKClientTarget"]


class SDKClientTarget(Target):
    """One SDK client per job, its calls made in order on it; see the module docstring."""

    def make_client(self, job: Job) -> Any:
        """The SDK client for one job (it has a ``close()``)."""
        raise NotImplementedError

    def one_call(self, client: Any, job: Job, log: EventLog) -> CallResult:
        """One call of the job on ``client``, consumed to its end."""
        raise NotImplementedError

    def before_close(self, client: Any, job: Job, log: EventLog) -> None:
        """After the job's calls, returned or raised, with the client still open."""

    def call(self, job: Job, log: EventLog) -> CallResult:
        client = self.make_client(job)

        def rebuild() -> None:
            nonlocal client
            client.close()
            client = self.make_client(job)

        try:
            results = run_calls(job, log, lambda: self.one_call(client, job, log), rebuild=rebuild)
        finally:
            # the same client (its connection pool) after whatever happened above
            self.before_close(client, job, log)
            client.close()
        last = results[-1]
        return CallResult(
            text=last.text, finish_reason=last.finish_reason, texts=tuple(r.text for r in results)
        )
