"""The ``retry_after`` check: no retry sooner than the Retry-After the server sent."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from harness.contract.check import Check, register
from harness.contract.records import status_key
from harness.faults import ACTIONS
from harness.leaks import starved_between
from harness.tcpinfo import TICK_S

if TYPE_CHECKING:
    from harness.contract.derive import Contract
    from harness.contract.facts import Facts

__all__ = ["LOAD_MADE_FRACTION", "RETRY_AFTER_SLACK", "RetryAfter", "early_retry", "load_made_wait"]

#: A retry that comes this much early is still "after" the Retry-After (clock granularity).
RETRY_AFTER_SLACK = 0.9
#: Of a wait: the least run-queue time in its gap that can have made it (see
#: :func:`load_made_wait`).
LOAD_MADE_FRACTION = 0.5


@register
class RetryAfter(Check):
    name = "retry_after"
    rank = 60
    fails_when = "a retry started sooner than the `Retry-After` the server sent"
    needs = "request start times and which were answered with a status"
    shown_in = "the server's request log"

    def applies(self, contract: Contract, facts: Facts) -> bool:
        return contract.retry_after_s is not None

    def holds(self, contract: Contract, facts: Facts) -> bool:
        return early_retry(contract, facts) is None

    def evidence(self, contract: Contract, facts: Facts) -> str:
        early = early_retry(contract, facts)
        if early is None:  # the check passed: nothing came early
            return "no retry came sooner than its Retry-After"
        gap, wait = early
        return f"retried {gap:.3f} s after a Retry-After of {wait:.3g} s"


def early_retry(contract: Contract, facts: Facts) -> tuple[float, float] | None:
    """(gap, wait) of the first retry that started sooner than Retry-After after a
    request the server answered with it (seconds, real time); None: none did.

    What the client was told: the scaled delay, exact in ``retry-after-ms`` (and never
    less in ``Retry-After``, whole seconds rounded up), so a fast run can fail this too.
    Allowed early: :data:`RETRY_AFTER_SLACK` of it, and the precision of two arrival
    stamps (each is a kernel tick coarse, :data:`harness.tcpinfo.TICK_S`)."""
    for _, gap, wait in _owed(contract, facts):
        if gap < _least(wait):
            return gap, wait
    return None


def load_made_wait(contract: Contract, facts: Facts) -> str:
    """Why a kept wait may be the machine's load, not the client ("" when none may): a
    retry that came late enough only because a target thread sat on a CPU run queue in
    the gap -- without that time it would have come too soon. A client that never waits
    passes a short wait on a starved machine; this names that pass.

    A sleeping thread gathers no run-queue time, so a client that waits is not charged
    with its sleep. Another of its threads may still queue while it sleeps (a poll loop):
    only a queue of at least :data:`LOAD_MADE_FRACTION` of the wait counts, as long as a
    thread that never waited needs to have queued to pass."""
    for t, gap, wait in _owed(contract, facts):
        starved = starved_between(facts.runqueue, t, t + gap)
        least = _least(wait)
        if starved is None or starved < LOAD_MADE_FRACTION * least:
            continue
        if gap >= least > gap - starved:
            return (
                f"a retry came {gap:.3f} s after a Retry-After of {wait:.3g} s, but a target "
                f"thread waited {starved:.3f} s for a CPU in that gap: without it the retry "
                "came too soon, so the wait may be the machine's load, not the client's"
            )
    return ""


def _least(wait: float) -> float:
    """The shortest gap that keeps a wait of ``wait`` real seconds."""
    return wait * RETRY_AFTER_SLACK - 2 * TICK_S


def _owed(contract: Contract, facts: Facts) -> Iterator[tuple[float, float, float]]:
    """(start, gap, wait) of every retry the server had told to wait (real seconds)."""
    if contract.retry_after_s is None:
        return
    owed = dict(contract.retry_after_by_fault)
    log = list(facts.request_log)
    for (t, fault), (t_next, _) in zip(log, log[1:], strict=False):
        if owed:  # the wait the rule that answered this request sent (none: nothing owed)
            told = owed.get(status_key(fault))
        else:  # a [contract] table's wait, after any status answer
            told = contract.retry_after_s if _answered_with_status(fault) else None
        if told is not None:
            yield t, t_next - t, told * facts.time_scale


def _answered_with_status(fault: str | None) -> bool:
    """Was the request answered with an HTTP status? ``fault`` is the server's record of
    the rule it applied (``status@request(code=429, ...)``): its action's trait says."""
    if fault is None:
        return False
    action = ACTIONS.get(fault.split("@", 1)[0].strip().lower())
    return action is not None and action.answers_status
