"""The run ceiling over a tier's sequences: each in order while ``run_ceiling_s`` lasts,
and the :class:`~harness.live.cases.LiveRun` they make. Shared by the in-process
session and the target tier; what one sequence does is theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from harness.live.cases import CaseResult, LiveRun
from harness.live.config import LiveConfig
from harness.live.redact import Redactor

__all__ = ["run_sequences"]

S = TypeVar("S")


def run_sequences(
    config: LiveConfig,
    sequences: Sequence[S],
    run_one: Callable[[S, float], Sequence[CaseResult]],
    over_budget: Callable[[S], Sequence[CaseResult]],
    *,
    mode: str,
    redactor: Redactor,
    clock: Callable[[], float],
    targets: tuple[str, ...] = ("reference",),
) -> LiveRun:
    """``run_one(sequence, run_deadline)`` gives a sequence's results; one that would
    start after the run's ceiling gives ``over_budget(sequence)`` instead."""
    start = clock()
    deadline = start + config.run_ceiling_s
    results: list[CaseResult] = []
    for seq in sequences:
        results.extend(over_budget(seq) if clock() >= deadline else run_one(seq, deadline))
    return LiveRun(
        mode=mode,
        model=config.model,
        base_url=redactor.redact(config.base_url),
        cases=tuple(results),
        elapsed_s=clock() - start,
        targets=targets,
    )
