"""The ``honest_reply`` check: never a partial, different or error text returned as the
reply, nor a cut reply carried into the job's next model call as the model's whole turn
(``harness.contract.carried``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.contract.check import Check, register

if TYPE_CHECKING:
    from harness.contract.derive import Contract
    from harness.contract.facts import Facts

__all__ = ["HonestReply"]

_DISHONEST = frozenset({"truncated_as_complete", "wrong_content", "error_as_reply"})


@register
class HonestReply(Check):
    name = "honest_reply"
    rank = 30
    by_outcome = True
    fails_when = (
        "a partial, different or error text came back as the reply (`truncated_as_complete`, "
        "`wrong_content`, `error_as_reply`), or a cut reply went into the job's next model "
        "call as the assistant's whole turn (`truncated_as_complete`)"
    )
    needs = (
        "the reply text against the server's `expected_text`; each continuation's carried "
        "assistant text against the reply it continues (`harness/contract/carried.py`); "
        "whether the script's content edits are visible to a client (`edit_excuses`)"
    )
    shown_in = "`outcome`, the reply text"

    def holds(self, contract: Contract, facts: Facts) -> bool:
        if facts.outcome.kind in contract.edit_excuses:
            return True  # an edit no client can see: the changed text is all there was
        return facts.outcome.kind not in _DISHONEST

    def evidence(self, contract: Contract, facts: Facts) -> str:
        outcome = facts.outcome
        return f"{outcome.kind}: {outcome.detail}" if outcome.detail else outcome.kind
