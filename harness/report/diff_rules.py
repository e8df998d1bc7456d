"""The rules by which ``harness report diff`` tells a change from a build's own noise.

* **latency**: noise unless it moved by more than a floor *and* a share of the smaller;
* **requests**: noise when the count moved by at most a few under the same outcome;
* **accepted variation**: the outcome moved between two the case's expectation accepts
  (both sides matched the same ``expected``), and every check newly failed is one the
  outcome alone decides (:data:`OUTCOME_CHECKS`).

Each rule reads two :class:`~harness.report.diff.CaseSide` objects (any object with
their fields: this module imports nothing of the diff).

Not here: the diff itself (``harness.report.diff``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["OUTCOME_CHECKS", "accepted_variation", "latency_moved", "rates", "requests_moved"]

Side = Any  # harness.report.diff.CaseSide

#: The contract checks the outcome alone decides (``harness.contract.verdict``): a move
#: between two accepted outcomes may flip these and nothing else.
OUTCOME_CHECKS = frozenset(
    {
        "complete_reply",
        "clean_error",
        "honest_reply",
        "no_false_kill",
        "no_truncated_tool_execution",
    }
)


def accepted_variation(base: Side, head: Side, newly: tuple[str, ...]) -> bool:
    """The outcome moved between two the same expectation accepts, and nothing but the
    checks the outcome decides came with it."""
    return (
        base.outcome != head.outcome
        and base.expected is not None
        and base.expected == head.expected
        and base.matched is True
        and head.matched is True
        and all(c in OUTCOME_CHECKS for c in newly)
    )


def rates(side: Side) -> str:
    """`` (3/5 ok, 2/5 false_kill)`` for a case run with ``--repeat``."""
    if not side.outcomes_seen:
        return ""
    runs = sum(n for _, n in side.outcomes_seen)
    return " (" + ", ".join(f"{n}/{runs} {o}" for o, n in side.outcomes_seen) + ")"


def requests_moved(base: Side, head: Side, noise: int) -> bool:
    if base.requests is None or head.requests is None or base.requests == head.requests:
        return False
    return base.outcome != head.outcome or abs(head.requests - base.requests) > noise


def latency_moved(base: Side, head: Side, floor_s: float, ratio: float) -> bool:
    if base.latency_s is None or head.latency_s is None:
        return False
    moved = abs(head.latency_s - base.latency_s)
    return moved > floor_s and moved > ratio * min(base.latency_s, head.latency_s)
