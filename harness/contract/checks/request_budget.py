"""The ``request_budget`` check: at most ``max_requests`` LLM requests for the scenario's
calls, and one call's share more for each further model call the server saw
(``Facts.call_requests``: an agent's next call, its conversation extended, is not a retry);
where the server told the calls apart, no call took more than the budget less one request
for each other call of the scenario.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.contract.check import Check, register

if TYPE_CHECKING:
    from harness.contract.derive import Contract
    from harness.contract.facts import Facts

__all__ = ["RequestBudget", "greedy_call", "request_budget"]


@register
class RequestBudget(Check):
    name = "request_budget"
    rank = 50
    fails_when = (
        "more LLM requests than `max_requests` (`[budget]`, else 5 per call), counted per model "
        "call: each further model call the server saw (a continuation or a new conversation, not a "
        "retry) adds one call's share, and no call may take more than the budget less one request "
        "per other call"
    )
    needs = "the fault server's request log and each request's lineage (`harness/apis/lineage.py`)"
    shown_in = "`requests` (server's count), the model calls"

    def holds(self, contract: Contract, facts: Facts) -> bool:
        return facts.requests is None or (
            facts.requests <= request_budget(contract, facts)
            and greedy_call(contract, facts) is None
        )

    def evidence(self, contract: Contract, facts: Facts) -> str:
        budget = request_budget(contract, facts)
        calls = max(contract.calls, facts.model_calls)
        greedy = greedy_call(contract, facts)
        if greedy is not None and (facts.requests or 0) <= budget:
            first, n, allowed = greedy
            return (
                f"the model call begun by request {first} took {n} requests, at most {allowed} each"
            )
        return f"{facts.requests} requests for {calls} model call(s), budget {budget}"


def request_budget(contract: Contract, facts: Facts) -> int:
    """The requests allowed for the model calls made: the contract's budget for its
    calls, plus one call's share of it for each model call beyond them."""
    extra = max(0, facts.model_calls - contract.calls)
    share = -(-contract.max_requests // max(1, contract.calls))
    return contract.max_requests + extra * share


def greedy_call(contract: Contract, facts: Facts) -> tuple[int, int, int] | None:
    """(first request, requests, allowed) of the first model call that took more than one
    call may: the budget less one request for each other call of the scenario. None:
    none did, or the server saw fewer calls than the scenario makes (identical calls
    read as retries of one, so no call's share is known)."""
    if len(facts.call_requests) < contract.calls:
        return None
    allowed = contract.max_requests - (contract.calls - 1)
    for first, n in facts.call_requests:
        if n > allowed:
            return first, n, allowed
    return None
