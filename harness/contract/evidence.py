"""What a verdict rests on, in words: the derived contract and each failed check's evidence.

:func:`contract_facts` is the contract as the reports show it (a reply required or not,
the bound in real seconds, the request budget, the checks that apply);
:func:`evidence_for` is one sentence per failed check, from the same facts the check
read ("bounded: ended at the 3.00 s ceiling, bound 2.00 s"), so a reader judges the
verdict without reading ``harness.contract.derive``.

Not here: the checks themselves (``harness.contract.verdict``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.contract.derive import Contract
from harness.contract.verdict import (
    CHECKS,
    Facts,
    bound_s,
    early_retry,
    greedy_call,
    model_call_spans,
    request_budget,
)

__all__ = ["applicable_checks", "contract_facts", "evidence_for"]


def applicable_checks(contract: Contract, facts: Facts) -> tuple[str, ...]:
    """The checks that can fail in this case (a switched-off or unjudgeable one is left out)."""
    off = {
        "complete_reply": contract.ideal != "reply",
        "retry_after": contract.retry_after_s is None,
        "no_retry_non_retryable": not contract.no_retry,
        "alive_after": not contract.alive_after or facts.follow_up_ok is None,
        "no_leaks": not contract.no_leaks or facts.leaks is None,
        "accounting": facts.claimed_attempts is None or facts.wire_attempts is None,
        "dead_peer_bound": facts.dead_peer is None,
    }
    return tuple(c for c in CHECKS if not off.get(c, False))


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
    return {name: _evidence(name, contract, facts) for name in failed}


def _evidence(name: str, contract: Contract, facts: Facts) -> str:
    outcome = facts.outcome
    bound = bound_s(contract, facts)
    if name == "complete_reply":
        return f"a retry gets past this fault, so the reply is required; the call raised {outcome.label}"
    if name == "clean_error":
        return f"raised {outcome.error}: the client broke, not a typed transport error"
    if name == "honest_reply":
        return f"{outcome.kind}: {outcome.detail}" if outcome.detail else outcome.kind
    if name == "bounded":
        if outcome.kind == "hung" or facts.elapsed_s is None:
            return f"no result before the {facts.ceiling_s:.2f} s ceiling, bound {bound:.2f} s"
        spans = model_call_spans(facts)
        if len(spans) > 1:
            k, span = max(enumerate(spans, 1), key=lambda x: x[1])
            return f"model call {k} of {len(spans)} took {span:.2f} s, bound {bound:.2f} s"
        at = "the ceiling" if facts.elapsed_s >= facts.ceiling_s else f"{facts.elapsed_s:.2f} s"
        if at == "the ceiling":
            return f"ended at the {facts.ceiling_s:.2f} s ceiling, bound {bound:.2f} s"
        return f"ended at {at}, bound {bound:.2f} s"
    if name == "request_budget":
        budget = request_budget(contract, facts)
        calls = max(contract.calls, facts.model_calls)
        greedy = greedy_call(contract, facts)
        if greedy is not None and (facts.requests or 0) <= budget:
            first, n, allowed = greedy
            return (
                f"the model call begun by request {first} took {n} requests, at most {allowed} each"
            )
        return f"{facts.requests} requests for {calls} model call(s), budget {budget}"
    if name == "retry_after":
        return _retry_after(contract, facts)
    if name == "no_retry_non_retryable":
        return (
            f"{facts.requests} requests for {contract.calls} call(s) on a status no retry can fix"
        )
    if name == "no_hammering":
        return (
            f"more than {contract.max_requests_per_window} requests within "
            f"{contract.window_s * facts.time_scale:.2f} s"
        )
    if name in ("no_false_kill", "no_truncated_tool_execution"):
        return outcome.detail or outcome.label
    if name == "alive_after":
        return "the follow-up call through the same client failed"
    if name == "no_leaks":
        return f"{facts.leaks} thread(s)/socket(s) left open after the call"
    if name == "no_late_requests":
        return f"{facts.late_requests} request(s) after the call had returned"
    if name == "dead_peer_bound" and facts.dead_peer is not None:
        check = facts.dead_peer
        return check.reason or f"no dead-peer bound within {check.limit_s:g} s ({check.mode})"
    if name == "accounting":
        wire = facts.wire_attempts
        return f"claims {facts.claimed_attempts} attempts, {wire} reached the wire" + (
            ": it counts retries it never made" if wire is not None else ""
        )
    return name


def _retry_after(contract: Contract, facts: Facts) -> str:
    early = early_retry(contract, facts)
    if early is None:  # the check passed: nothing came early
        return "no retry came sooner than its Retry-After"
    gap, wait = early
    return f"retried {gap:.3f} s after a Retry-After of {wait:.3g} s"
