"""One report's view of one case, as ``harness report diff`` compares it.

Read field by field from a JSON report's result entry: a field it does not know is
ignored, a missing one is unknown (never a difference).

Not here: the comparison (``harness.report.diff``), its rules (``harness.report.diff_rules``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.outcome import NOT_RUN

__all__ = ["VERDICT_RANK", "CaseSide"]

#: Verdicts, worst first: a lower rank on the head is a regression.
VERDICT_RANK = {"fail": 0, "safe": 1, "pass": 2}


@dataclass(frozen=True)
class CaseSide:
    """One report's view of one case: only the fields the diff compares."""

    verdict: str | None
    failed_checks: tuple[str, ...]
    outcome: str | None
    outcome_kind: str | None
    requests: int | None
    latency_s: float | None
    flaky: bool
    message: str
    #: The expectation the case was judged by and whether it matched (None: unknown).
    expected: str | None = None
    matched: bool | None = None
    #: ``--repeat``: how often each outcome came out (empty: one run).
    outcomes_seen: tuple[tuple[str, int], ...] = ()
    #: ``--repeat``: how often each verdict came out (empty: one run).
    verdicts_seen: tuple[tuple[str, int], ...] = ()

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any]) -> CaseSide:
        outcome = entry.get("outcome")
        outcome = outcome if isinstance(outcome, Mapping) else {}
        label = entry.get("actual")
        kind = outcome.get("kind")
        if not isinstance(label, str):
            label = kind if isinstance(kind, str) else None
        verdict = entry.get("verdict")
        checks = entry.get("failed_checks")
        expected, matched = entry.get("expected"), entry.get("matched")
        repeats = entry.get("repeats")
        repeats = repeats if isinstance(repeats, Mapping) else {}
        seen, verdicts = repeats.get("outcomes"), repeats.get("verdicts")
        return cls(
            verdict=verdict if verdict in VERDICT_RANK or verdict == "not_exercised" else None,
            failed_checks=tuple(c for c in checks if isinstance(c, str))
            if isinstance(checks, list)
            else (),
            outcome=label,
            outcome_kind=kind if isinstance(kind, str) else None,
            requests=_int_or_none(entry.get("requests")),
            latency_s=_float_or_none(entry.get("latency_s")),
            flaky=bool(entry.get("flaky")),
            message=str(entry.get("message") or "")[:300],
            expected=expected if isinstance(expected, str) and expected else None,
            matched=matched if isinstance(matched, bool) else None,
            outcomes_seen=_counts(seen),
            verdicts_seen=_counts(verdicts),
        )

    @property
    def ran(self) -> bool:
        return self.outcome_kind not in NOT_RUN

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "failed_checks": list(self.failed_checks),
            "outcome": self.outcome,
            "requests": self.requests,
            "latency_s": self.latency_s,
            "flaky": self.flaky,
            "expected": self.expected,
            "matched": self.matched,
        }


def _counts(value: Any) -> tuple[tuple[str, int], ...]:
    items = value.items() if isinstance(value, Mapping) else ()
    return tuple((str(k), n) for k, n in items if isinstance(n, int))


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
