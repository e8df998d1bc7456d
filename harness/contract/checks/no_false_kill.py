"""The ``no_false_kill`` check: no deadline killed a slow-but-alive stream."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.contract.check import Check, register

if TYPE_CHECKING:
    from harness.contract.derive import Contract
    from harness.contract.facts import Facts

__all__ = ["NoFalseKill"]


@register
class NoFalseKill(Check):
    name = "no_false_kill"
    rank = 90
    by_outcome = True
    fails_when = (
        "a deadline killed a slow-but-alive stream (also when a retry hid it: a request cut by the "
        "client whose model call was asked again; a continuation after a completed stream is the "
        "next call, not a kill)"
    )
    needs = "the scenario is alive (`is_alive`), the outcome, the requests' lineage"
    shown_in = "`outcome` = `false_kill`"

    def holds(self, contract: Contract, facts: Facts) -> bool:
        return facts.outcome.kind != "false_kill"

    def evidence(self, contract: Contract, facts: Facts) -> str:
        return facts.outcome.detail or facts.outcome.label
