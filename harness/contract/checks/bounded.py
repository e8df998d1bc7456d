"""The ``bounded`` check: the call ended (returned or raised) within the bound."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.contract.check import Check, register
from harness.contract.facts import bound_s, model_call_spans

if TYPE_CHECKING:
    from harness.contract.derive import Contract
    from harness.contract.facts import Facts

__all__ = ["Bounded"]


@register
class Bounded(Check):
    name = "bounded"
    rank = 40
    fails_when = (
        "the call did not end (returned or raised) within the bound (`bound_s` scaled, else the "
        "runner's outer ceiling); an agent's job of several model calls is bounded per model call"
    )
    needs = (
        "the call's elapsed time on the case's clock (several model calls: each one's, from "
        "its first request to the next one's)"
    )
    shown_in = "`elapsed_s`, the bound"

    def holds(self, contract: Contract, facts: Facts) -> bool:
        bound = bound_s(contract, facts)
        return facts.outcome.kind != "hung" and all(d <= bound for d in model_call_spans(facts))

    def evidence(self, contract: Contract, facts: Facts) -> str:
        bound = bound_s(contract, facts)
        if facts.outcome.kind == "hung" or facts.elapsed_s is None:
            return f"no result before the {facts.ceiling_s:.2f} s ceiling, bound {bound:.2f} s"
        spans = model_call_spans(facts)
        if len(spans) > 1:
            k, span = max(enumerate(spans, 1), key=lambda x: x[1])
            return f"model call {k} of {len(spans)} took {span:.2f} s, bound {bound:.2f} s"
        at = "the ceiling" if facts.elapsed_s >= facts.ceiling_s else f"{facts.elapsed_s:.2f} s"
        if at == "the ceiling":
            return f"ended at the {facts.ceiling_s:.2f} s ceiling, bound {bound:.2f} s"
        return f"ended at {at}, bound {bound:.2f} s"
