"""Figures shared by the benchmarks: one definition of a percentile.

Not here: measuring anything (``server.py``, ``watchdog.py``, ``netem.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["percentile"]


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile: the smallest value with ``q`` % of the
    values at or below it. NaN for no values (a figure that was not measured)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]
