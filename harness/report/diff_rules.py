"""The rules by which ``harness report diff`` tells a change from a build's own noise.

* **latency**: noise unless it moved by more than a floor *and* a share of the smaller;
* **requests**: noise when the count moved by at most a few under the same outcome:
  hermes's own timers race a loaded machine (its 1 s Codex first-byte watchdog at time
  scale 0.2 closes a reply already in its socket and asks again; its continuation
  retries reach the server 4 or 5 times), one request either way between two runs of
  one build (3 to 10 of 91 cases a pair, 2026-12-04);
* **accepted variation**: the outcome moved between two the case's expectation accepts
  (both sides matched the same ``expected``). The checks that came with the move are
  named; those the outcome alone does not decide (not in :data:`OUTCOME_CHECKS`: a leak
  hermes leaves on one path and not the other) are marked, never hidden;
* **recorded variation**: nothing changed but checks the target's overlay records as
  varying by its own timing on that case (``[varies]``, ``harness.expectations``: a
  leak hermes leaves in some runs, with the measured rate); the note names each;
* **flaky alike**: both reports ran the case several times (``--repeat``), each saw more
  than one verdict, and the head saw none the base did not: the same spread, not a change.

Each rule reads two :class:`~harness.report.diff_side.CaseSide` objects (any object with
their fields: this module imports nothing of the diff).

Not here: the diff itself (``harness.report.diff``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.contract.check import checks

__all__ = [
    "OUTCOME_CHECKS",
    "accepted_variation",
    "flaky_alike",
    "flaky_note",
    "latency_moved",
    "rates",
    "recorded_variation",
    "requests_moved",
    "variation_note",
]

Side = Any  # harness.report.diff_side.CaseSide

#: The contract checks the outcome alone decides (``Check.by_outcome`` in the registry,
#: ``harness.contract.checks``): a move between two accepted outcomes flips these by itself.
OUTCOME_CHECKS = frozenset(c.name for c in checks() if c.by_outcome)


def accepted_variation(base: Side, head: Side) -> bool:
    """The outcome moved between two outcomes the same expectation accepts."""
    return (
        base.outcome != head.outcome
        and base.expected is not None
        and base.expected == head.expected
        and base.matched is True
        and head.matched is True
    )


def variation_note(head: Side, newly: tuple[str, ...]) -> str:
    """``both accepted by `ok|false_kill` (3/5 ok, 2/5 false_kill)``, and the newly failed
    checks the outcome does not decide, if any."""
    note = f"both accepted by `{head.expected}`" + rates(head)
    other = [c for c in newly if c not in OUTCOME_CHECKS]
    if other:
        note += "; with " + ", ".join(f"`{c}`" for c in other) + " (not decided by the outcome)"
    return note


def recorded_variation(changed: tuple[str, ...], varies: Mapping[str, str]) -> str | None:
    """The note for a case whose changed checks are all recorded as varying for its
    target (``varies``: check -> why); None when one is not, or none changed."""
    if not changed or any(c not in varies for c in changed):
        return None
    return "recorded variation: " + "; ".join(f"`{c}` varies ({varies[c]})" for c in changed)


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


def flaky_alike(base: Side, head: Side) -> bool:
    """Both sides' repeated runs gave several verdicts, and the head no new one."""
    b_seen = {v for v, _ in base.verdicts_seen}
    h_seen = {v for v, _ in head.verdicts_seen}
    return len(b_seen) > 1 and len(h_seen) > 1 and h_seen <= b_seen


def flaky_note(base: Side, head: Side) -> str:
    """``flaky on both sides: pass 2/3, fail 1/3 → pass 1/3, fail 2/3``."""
    return f"flaky on both sides: {_spread(base.verdicts_seen)} → {_spread(head.verdicts_seen)}"


def _spread(seen: tuple[tuple[str, int], ...]) -> str:
    runs = sum(n for _, n in seen)
    return ", ".join(f"{v} {n}/{runs}" for v, n in seen)
