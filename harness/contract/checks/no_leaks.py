"""The ``no_leaks`` check: no thread or socket left open after the call returned."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.contract.check import Check, register

if TYPE_CHECKING:
    from harness.contract.derive import Contract
    from harness.contract.facts import Facts

__all__ = ["NoLeaks"]


@register
class NoLeaks(Check):
    name = "no_leaks"
    rank = 120
    fails_when = (
        "a thread, descriptor or socket was left open after the call returned (a socket only garbage "
        "holds counts: the child runs no automatic collection from the job until its next command)"
    )
    needs = "`/proc` snapshots of the child before and after"
    shown_in = "`leaks`"

    def applies(self, contract: Contract, facts: Facts) -> bool:
        return contract.no_leaks and facts.leaks is not None

    def holds(self, contract: Contract, facts: Facts) -> bool:
        return not contract.no_leaks or not facts.leaks

    def evidence(self, contract: Contract, facts: Facts) -> str:
        return f"{facts.leaks} thread(s)/socket(s) left open after the call"
