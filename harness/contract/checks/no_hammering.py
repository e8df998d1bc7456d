"""The ``no_hammering`` check: at most ``max_requests_per_window`` requests in any window."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.contract.check import Check, register

if TYPE_CHECKING:
    from harness.contract.derive import Contract
    from harness.contract.facts import Facts

__all__ = ["NoHammering"]


@register
class NoHammering(Check):
    name = "no_hammering"
    rank = 80
    fails_when = "more than `max_requests_per_window` request starts in any `window_s`"
    needs = "request start times"
    shown_in = "the server's request log"

    def holds(self, contract: Contract, facts: Facts) -> bool:
        starts = [t for t, _ in facts.request_log]
        window = contract.window_s * facts.time_scale
        return (
            _busiest_window(starts, window) <= contract.max_requests_per_window + contract.calls - 1
        )

    def evidence(self, contract: Contract, facts: Facts) -> str:
        return (
            f"more than {contract.max_requests_per_window} requests within "
            f"{contract.window_s * facts.time_scale:.2f} s"
        )


def _busiest_window(starts: Sequence[float], window: float) -> int:
    """The most request starts inside any window of ``window`` seconds."""
    ordered = sorted(starts)
    best, lo = 0, 0
    for hi, t in enumerate(ordered):
        while t - ordered[lo] > window:
            lo += 1
        best = max(best, hi - lo + 1)
    return best
