"""The ``clean_error`` check: an error is a typed one, not a crash of the client or target."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.contract.check import Check, register
from harness.outcome import Outcome

if TYPE_CHECKING:
    from harness.contract.derive import Contract
    from harness.contract.facts import Facts

__all__ = ["UNCLEAN_ERRORS", "CleanError"]

#: Error classes that say the client (or its target) broke, not that it reported a fault.
UNCLEAN_ERRORS = frozenset(
    {
        "TargetCrashed",
        # killed by the kernel at the child's memory limit: the target ran away, it did
        # not report the fault
        "TargetResources",
        "UnknownError",
        "AssertionError",
        "AttributeError",
        "IndexError",
        "KeyError",
        "NameError",
        "RecursionError",
        "TypeError",
        "UnboundLocalError",
        "ZeroDivisionError",
    }
)


@register
class CleanError(Check):
    name = "clean_error"
    rank = 20
    by_outcome = True
    fails_when = (
        "the error is a crash of the client or target (`TypeError`, `KeyError`, `TargetCrashed`, "
        "`TargetResources`, ...), or a wrapper raised from one (`raise AgentError(...) from "
        "TypeError`), not a typed report of the fault"
    )
    needs = "the raised class and the classes it was made from (`raise ... from`)"
    shown_in = "`outcome.error`, the exception's message, `chain`"

    def holds(self, contract: Contract, facts: Facts) -> bool:
        return not (facts.outcome.kind == "error" and (_unclean(facts.outcome) or _crash(facts)))

    def evidence(self, contract: Contract, facts: Facts) -> str:
        crash = _crash(facts)
        if crash and not _unclean(facts.outcome):
            return (
                f"raised {facts.outcome.error} from {crash}: a crash of the client under "
                "another name, not a typed transport error"
            )
        return f"raised {facts.outcome.error}: the client broke, not a typed transport error"


def _crash(facts: Facts) -> str | None:
    """The crash a wrapper was raised from (``AgentGenerationError`` from ``TypeError``)."""
    return next((t for t in facts.wrapped if t in UNCLEAN_ERRORS), None)


def _unclean(outcome: Outcome) -> bool:
    # "RetriesExhausted:KeyError": the last attempt's error counts too.
    return bool(set((outcome.error or "").split(":")) & UNCLEAN_ERRORS)
