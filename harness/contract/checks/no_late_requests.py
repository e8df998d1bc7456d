"""The ``no_late_requests`` check: no request sent after the call had returned."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.contract.check import Check, register

if TYPE_CHECKING:
    from harness.contract.derive import Contract
    from harness.contract.facts import Facts

__all__ = ["NoLateRequests"]


@register
class NoLateRequests(Check):
    name = "no_late_requests"
    rank = 130
    fails_when = (
        "a request reached the server after the call had returned (a continuation of the job's "
        "conversation, and its retries, belong to the job)"
    )
    needs = (
        "when each request reached the server's kernel (`TCP_INFO`, not when its loop read it) "
        "against the call's end; the requests' lineage"
    )
    shown_in = "`late_requests`"

    def holds(self, contract: Contract, facts: Facts) -> bool:
        return not facts.late_requests

    def evidence(self, contract: Contract, facts: Facts) -> str:
        return f"{facts.late_requests} request(s) after the call had returned"
