"""The ``no_truncated_tool_execution`` check: the agent never executed a tool call whose
arguments were cut (outcome ``executed_truncated_tool_call``; fails under any contract,
whatever it allows).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.contract.check import Check, register

if TYPE_CHECKING:
    from harness.contract.derive import Contract
    from harness.contract.facts import Facts

__all__ = ["NoTruncatedToolExecution"]


@register
class NoTruncatedToolExecution(Check):
    name = "no_truncated_tool_execution"
    rank = 100
    by_outcome = True
    fails_when = (
        "the agent executed a tool call whose arguments were cut (fails under every contract)"
    )
    needs = "the target raising `ExecutedTruncatedToolCall`"
    shown_in = "`outcome` = `executed_truncated_tool_call`"

    def holds(self, contract: Contract, facts: Facts) -> bool:
        return facts.outcome.kind != "executed_truncated_tool_call"

    def evidence(self, contract: Contract, facts: Facts) -> str:
        return facts.outcome.detail or facts.outcome.label
