"""What one ``harness fuzz`` run asks (:class:`FuzzSettings`) and what it found
(:class:`SearchReport`).

Not here: the search itself (``harness.fuzz.search``), writing findings
(``harness.fuzz.findings``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.case_result import CaseResult
from harness.fuzz.findings import Finding, GroupKey
from harness.runner import DEFAULT_TIME_SCALE

__all__ = ["REFERENCE", "SHRINK_CASES", "SHRINK_S", "FuzzSettings", "SearchReport"]

#: Case runs one shrink may spend; after it the shrink takes the smallest failure so far.
SHRINK_CASES = 120
#: Seconds one shrink may spend (from the group's claim): a group of slow cases (hangs
#: behind a relay, ~10 s each) otherwise held a worker for minutes while other groups
#: went unsearched (a 5-minute openai-sdk search spent 180 s shrinking one relay hang).
SHRINK_S = 60.0
REFERENCE = "reference"


@dataclass(frozen=True, kw_only=True)
class FuzzSettings:
    """One ``harness fuzz`` run."""

    target: str
    apis: tuple[str, ...]
    #: action names to draw (empty: every action the fault server plays)
    actions: tuple[str, ...] = ()
    #: network backends to draw between target and server (``server``: none)
    backends: tuple[str, ...] = ("server",)
    examples: int | None = 100
    minutes: float | None = None
    seed: int = 0
    jobs: int = 1
    time_scale: float = DEFAULT_TIME_SCALE
    #: Hypothesis's example database (None: none, nothing remembered between runs)
    database: Path | None = None
    confirm: int = 3
    shrink_cases: int = SHRINK_CASES
    #: seconds one shrink may spend (None: no limit but ``shrink_cases``)
    shrink_s: float | None = SHRINK_S
    #: the target whose verdict says the contract can be met (None: not checked)
    reference: str | None = REFERENCE
    #: a second target whose outcome kind the target's must equal (``--same-as``;
    #: None: the verdict alone decides). A difference is a finding of its own group.
    same_as: str | None = None
    #: scenario seconds drawn for every duration parameter besides the fixed ones: either
    #: side of the target's measured deadlines (``--posture``; ``space.durations_past``)
    durations: tuple[float, ...] = ()


@dataclass
class SearchReport:
    findings: list[Finding] = field(default_factory=list)
    #: per group, the first example the reference target failed too (data, the
    #: target's result, the reference's): a contract nobody met, not a finding
    unsatisfiable: dict[GroupKey, tuple[dict[str, Any], CaseResult, CaseResult]] = field(
        default_factory=dict
    )
    #: per group, a first failure that passed when replayed before it was claimed (the
    #: data and the failing result): timing on this machine, never shrunk
    timing_sensitive: dict[GroupKey, tuple[dict[str, Any], CaseResult]] = field(
        default_factory=dict
    )
    examples: int = 0
    cases: int = 0
    elapsed_s: float = 0.0
    stopped_by: str = ""

    @property
    def cases_per_minute(self) -> float:
        return 60.0 * self.cases / self.elapsed_s if self.elapsed_s > 0 else 0.0
