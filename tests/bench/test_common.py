"""The benchmarks' shared percentile: nearest rank, NaN when nothing was measured."""

from __future__ import annotations

import math

from harness.bench.common import percentile


def test_percentile_is_the_nearest_rank_value() -> None:
    values = [float(v) for v in range(100, 0, -1)]  # unsorted input
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile(values, 100) == 100.0
    assert percentile([7.0, 1.0], 0) == 1.0


def test_percentile_of_nothing_is_nan_not_an_error() -> None:
    assert math.isnan(percentile([], 99))
