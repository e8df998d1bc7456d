"""``--repeat N``: one case run N times, folded into one result that carries the spread.

Nondeterminism is measured, not hidden: every run of a case counts. The folded result is
the run that speaks against the target most (the first mismatched one, else the first
with a failing verdict, else the first), so a case is "as expected" only when every run
was, and it carries ``repeats``: how many runs, and how often each outcome (its label)
and each verdict came out. A case whose verdict varies between runs is ``flaky``
(``CaseResult.flaky``), which every report shows.

Not here: running the cases (``harness.runner``) or rendering (``harness.report``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TypeVar

from harness.case_result import CaseResult

__all__ = ["fold", "repeat_cases"]

T = TypeVar("T")


def repeat_cases(cases: Sequence[T], times: int) -> list[T]:
    """Each case ``times`` times, its runs side by side (the runner keeps a worker on one
    target, so a clean child is reused across them)."""
    if times < 1:
        raise ValueError(f"repeat must be a whole number >= 1, got {times}")
    return [case for case in cases for _ in range(times)]


def fold(results: Sequence[CaseResult]) -> list[CaseResult]:
    """One result per (scenario, target), in first-seen order; a case run more than once
    carries its ``repeats`` counts (a case run once is returned as it came)."""
    groups: dict[tuple[str, str], list[CaseResult]] = {}
    for r in results:
        groups.setdefault((r.scenario, r.target), []).append(r)
    return [_folded(runs) if len(runs) > 1 else runs[0] for runs in groups.values()]


def _folded(runs: list[CaseResult]) -> CaseResult:
    chosen = next(
        (r for r in runs if not r.matched),
        next((r for r in runs if r.verdict == "fail"), runs[0]),
    )
    counts = {
        "runs": len(runs),
        "matched": sum(1 for r in runs if r.matched),
        "outcomes": _counted(r.outcome.label for r in runs),
        "verdicts": _counted(r.verdict for r in runs),
    }
    return replace(chosen, repeats=counts)


def _counted(values: Iterable[str]) -> dict[str, int]:
    """Counts, most frequent first (ties in first-seen order)."""
    return dict(Counter(values).most_common())
