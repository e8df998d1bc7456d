"""What the benchmarks share: one definition of a percentile, and their command lines'
whole-number options and ``--json PATH``.

Not here: measuring anything (``server.py``, ``watchdog.py``, ``netem.py``).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["finish", "percentile", "whole_numbers"]


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile: the smallest value with ``q`` % of the
    values at or below it. NaN for no values (a figure that was not measured)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def whole_numbers(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    names: Sequence[str],
    *,
    least: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """The whole-number options ``names`` that were given (not None), each checked to be
    at least its ``least`` (1 unless named there); a bad one is ``parser``'s error."""
    given: dict[str, int] = {}
    for name in names:
        value = getattr(args, name)
        if value is None:
            continue
        low = (least or {}).get(name, 1)
        if value < low:
            parser.error(
                f"--{name.replace('_', '-')}: {value} is not valid; allowed: a whole number >= {low}"
            )
        given[name] = value
    return given


def finish(result: Any, render: Callable[[Any], object], json_path: str | None) -> int:
    """A bench command's end: ``render(result)``, the figures as JSON too with
    ``--json PATH`` (``result.to_dict()``); exit status 0."""
    render(result)
    if json_path:
        with open(json_path, "w", encoding="utf-8") as fh:
            json.dump(result.to_dict(), fh, indent=2)
    return 0
