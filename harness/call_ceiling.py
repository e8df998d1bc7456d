"""The outer ceiling, per model call: an agent's job is several model calls.

The runner waits for a child's result until the case's outer ceiling (``CasePlan.
ceiling_s``). An agent makes several model calls per call of its job (a tool call, its
result, the final answer; a framework's own summary call), and on a slow-but-alive
scenario each of them is as slow as the scenario makes it: one ceiling for all of them
called a client ``hung`` that was answering every call in time. So the ceiling counts
from the first request of the latest *model call* (a request the server placed as a
continuation or a new conversation, ``harness.server.lineage``; a retry extends
nothing) or the start of the job's latest call (the child says so as it begins,
``run_calls``), for at most :data:`CEILINGS_PER_CALL` model calls per call of the job. A
client stuck inside one model call still meets the ceiling of that call.

Not here: the start-up allowance before the first request (``harness.lifecycle``) or the
``bounded`` check (``harness.contract.verdict``), which judges each model call the same
way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["CEILINGS_PER_CALL", "model_call_starts", "wait_per_model_call"]

#: A job's call may make this many model calls, each with the whole ceiling; more run
#: within the last one's.
CEILINGS_PER_CALL = 4


def model_call_starts(records: Sequence[Any], since: float) -> list[float]:
    """When each model call among ``records`` (requests at or after ``since``) began:
    the first request, then each one placed as a continuation or a new conversation, or
    as a retry of an earlier model call than the current one (an agent's next job call
    asking the same conversation again), as ``harness.judge.call_requests`` counts them."""
    starts: list[float] = []
    current: Any = None
    for r in records:
        t = float(r.t_start)
        if t < since:
            continue
        lineage = getattr(r, "lineage", None)
        lineage = lineage if isinstance(lineage, Mapping) else {}
        kind, of_call = lineage.get("kind"), lineage.get("call")
        again = kind == "retry" and None not in (of_call, current) and of_call != current
        if not starts or kind in ("continuation", "new") or again:
            starts.append(t)
            current = of_call
    return starts


def wait_per_model_call(
    child: Any, server: Any, contact: float, plan: Any
) -> dict[str, Any] | None:
    """The child's result (None: a model call outlived its ceiling), waiting the plan's
    ``ceiling_s`` from ``contact`` and again from the first request of each later model
    call, and from the start of each later call of the job (the child's ``call`` events:
    a call whose requests never reach the server, its connects lost on a dead path, is
    a call all the same), up to ``CEILINGS_PER_CALL`` per call of the job."""
    ceiling_s = float(plan.ceiling_s)
    cap = max(1, int(plan.scenario.request.calls)) * CEILINGS_PER_CALL
    end = contact + ceiling_s
    while True:
        report = child.wait_result(end)
        if report is not None:
            return report
        job_calls = [t for t in child.call_starts if t >= contact]
        starts = sorted([*model_call_starts(server.requests(), contact), *job_calls])[:cap]
        later = max(starts[-1] + ceiling_s, end) if starts else end
        if later <= end:
            return None
        end = later
