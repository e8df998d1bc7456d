"""The ``no_retry_non_retryable`` check: one request per call when the status cannot be
fixed by a retry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.contract.check import Check, register
from harness.contract.records import status_key

if TYPE_CHECKING:
    from harness.contract.derive import Contract
    from harness.contract.facts import Facts

__all__ = ["NoRetryNonRetryable"]


@register
class NoRetryNonRetryable(Check):
    name = "no_retry_non_retryable"
    rank = 70
    fails_when = (
        "more than one request per call after a status no retry can fix (400, 401, 403, 404, 413, "
        "422)"
    )
    needs = "the server's request log: which request a no-retry status rule answered"
    shown_in = "`requests`"

    def applies(self, contract: Contract, facts: Facts) -> bool:
        return contract.no_retry

    def holds(self, contract: Contract, facts: Facts) -> bool:
        if not contract.no_retry or facts.requests is None:
            return True
        if contract.no_retry_faults and facts.request_log:
            return _after_final(contract, facts) <= contract.calls - 1
        return facts.requests <= contract.calls

    def evidence(self, contract: Contract, facts: Facts) -> str:
        if contract.no_retry_faults and facts.request_log:
            return (
                f"{_after_final(contract, facts)} request(s) after a status no retry can fix, "
                f"for {contract.calls} call(s)"
            )
        return (
            f"{facts.requests} requests for {contract.calls} call(s) on a status no retry can fix"
        )


def _after_final(contract: Contract, facts: Facts) -> int:
    """Requests that came after the first one a no-retry status rule answered (each
    later call of the job may make one)."""
    keys = [status_key(fault) for _, fault in facts.request_log]
    first = next((i for i, k in enumerate(keys) if k in contract.no_retry_faults), None)
    return 0 if first is None else len(keys) - first - 1
