"""The ``complete_reply`` check: the contract wants the reply (a retry gets past the fault)
and the call raised instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.contract.check import Check, register

if TYPE_CHECKING:
    from harness.contract.derive import Contract
    from harness.contract.facts import Facts

__all__ = ["CompleteReply"]


@register
class CompleteReply(Check):
    name = "complete_reply"
    rank = 10
    by_outcome = True
    fails_when = (
        "the contract wants the reply (a retry or a fresh connection gets past the fault) and the "
        "call raised"
    )
    needs = "the outcome; the contract's `ideal`"
    shown_in = "`outcome`, `contract.ideal`"

    def applies(self, contract: Contract, facts: Facts) -> bool:
        return contract.ideal == "reply"

    def holds(self, contract: Contract, facts: Facts) -> bool:
        return not (facts.outcome.kind == "error" and contract.ideal == "reply")

    def evidence(self, contract: Contract, facts: Facts) -> str:
        return (
            "a retry gets past this fault, so the reply is required; "
            f"the call raised {facts.outcome.label}"
        )
