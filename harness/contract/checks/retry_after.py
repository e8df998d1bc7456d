"""The ``retry_after`` check: no retry sooner than the Retry-After the server sent."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.contract.check import Check, register
from harness.contract.records import status_key
from harness.faults import ACTIONS
from harness.tcpinfo import TICK_S

if TYPE_CHECKING:
    from harness.contract.derive import Contract
    from harness.contract.facts import Facts

__all__ = ["RETRY_AFTER_SLACK", "RetryAfter", "early_retry"]

#: A retry that comes this much early is still "after" the Retry-After (clock granularity).
RETRY_AFTER_SLACK = 0.9


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
    if contract.retry_after_s is None:
        return None
    owed = dict(contract.retry_after_by_fault)
    log = list(facts.request_log)
    for (t, fault), (t_next, _) in zip(log, log[1:], strict=False):
        if owed:  # the wait the rule that answered this request sent (none: nothing owed)
            told = owed.get(status_key(fault))
        else:  # a [contract] table's wait, after any status answer
            told = contract.retry_after_s if _answered_with_status(fault) else None
        if told is None:
            continue
        wait = told * facts.time_scale
        if t_next - t < wait * RETRY_AFTER_SLACK - 2 * TICK_S:
            return t_next - t, wait
    return None


def _answered_with_status(fault: str | None) -> bool:
    """Was the request answered with an HTTP status? ``fault`` is the server's record of
    the rule it applied (``status@request(code=429, ...)``): its action's trait says."""
    if fault is None:
        return False
    action = ACTIONS.get(fault.split("@", 1)[0].strip().lower())
    return action is not None and action.answers_status
