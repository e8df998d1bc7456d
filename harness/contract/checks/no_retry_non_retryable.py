"""The ``no_retry_non_retryable`` check: one request per call when the status cannot be
fixed by a retry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.contract.check import Check, register

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
    needs = "the server's request count"
    shown_in = "`requests`"

    def applies(self, contract: Contract, facts: Facts) -> bool:
        return contract.no_retry

    def holds(self, contract: Contract, facts: Facts) -> bool:
        return not contract.no_retry or facts.requests is None or facts.requests <= contract.calls

    def evidence(self, contract: Contract, facts: Facts) -> str:
        return (
            f"{facts.requests} requests for {contract.calls} call(s) on a status no retry can fix"
        )
