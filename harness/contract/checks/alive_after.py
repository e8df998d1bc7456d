"""The ``alive_after`` check: a healthy follow-up call through the same client succeeded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.contract.check import Check, register

if TYPE_CHECKING:
    from harness.contract.derive import Contract
    from harness.contract.facts import Facts

__all__ = ["AliveAfter"]


@register
class AliveAfter(Check):
    name = "alive_after"
    rank = 110
    fails_when = (
        "the healthy follow-up call through the same client failed (targets with `follows_up = "
        "True`)"
    )
    needs = "`follow_up()` in the target"
    shown_in = "`details.follow_up`"

    def applies(self, contract: Contract, facts: Facts) -> bool:
        return contract.alive_after and facts.follow_up_ok is not None

    def holds(self, contract: Contract, facts: Facts) -> bool:
        return not contract.alive_after or facts.follow_up_ok is not False

    def evidence(self, contract: Contract, facts: Facts) -> str:
        return "the follow-up call through the same client failed"
