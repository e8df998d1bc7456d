"""What a verdict rests on, in words: the derived contract and each failed check's evidence.

:func:`contract_facts` is the contract as the reports show it (a reply required or not,
the bound in real seconds, the request budget, the checks that apply);
:func:`evidence_for` is one sentence per failed check, from the same facts the check
read ("bounded: ended at the 3.00 s ceiling, bound 2.00 s"), so a reader judges the
verdict without reading ``harness.contract.derive``.

Not here: the checks themselves (``harness.contract.checks``, one module each: this
module only asks the registry).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.contract.check import REGISTRY, checks
from harness.contract.derive import Contract
from harness.contract.facts import Facts, bound_s

__all__ = ["applicable_checks", "contract_facts", "evidence_for"]


def applicable_checks(contract: Contract, facts: Facts) -> tuple[str, ...]:
    """The checks that can fail in this case (a switched-off or unjudgeable one is left out)."""
    return tuple(c.name for c in checks() if c.applies(contract, facts))


def contract_facts(contract: Contract, facts: Facts) -> dict[str, Any]:
    """The derived contract as the JSON report carries it."""
    return {
        "required_reply": contract.ideal == "reply",
        "ideal": contract.ideal,
        "bound_s": round(bound_s(contract, facts), 3),
        "bound_from": "ceiling" if contract.bound_s is None else "scenario",
        "max_requests": contract.max_requests,
        "calls": contract.calls,
        "retry_after_s": contract.retry_after_s,
        "no_retry": contract.no_retry,
        "checks": list(applicable_checks(contract, facts)),
    }


def evidence_for(contract: Contract, facts: Facts, failed: Sequence[str]) -> dict[str, str]:
    """One sentence of evidence per failed check."""
    checks()  # every check registered
    return {
        name: REGISTRY[name].evidence(contract, facts) if name in REGISTRY else name
        for name in failed
    }
