"""A test double for the protocol contract (imported in the child as ``targets.protocol_double``).

It fails the way a real client does (a chained error with a long message) and writes to
the real stdout from Python and from C level, which the protocol must keep off its lines.
"""

from __future__ import annotations

import os

from harness.targets.base import CallResult, EventLog, Job, Target


class ChainedErrorTarget(Target):
    """Returns the healthy reply for ``hi``, raises a chained error for anything else."""

    name = "targets.protocol_double:ChainedErrorTarget"
    reusable = True

    def call(self, job: Job, log: EventLog) -> CallResult:
        print("print() noise on stdout")
        os.write(1, b"fd-level noise on stdout\n")
        log.mark("about_to_answer")
        if job.messages and job.messages[-1].get("content") == "hi":
            return CallResult(text="double reply", finish_reason="stop", attempts=1)
        try:
            raise ConnectionResetError(104, "Connection reset by peer")
        except OSError as exc:
            raise LookupError("x" * 5000) from exc
