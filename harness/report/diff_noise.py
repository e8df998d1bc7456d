"""``harness report noise RUN.json...``: how often a gate goes red on an unchanged build.

Given N reports of one build (``harness run --json``, run one after another), each is
diffed against the next (``harness.report.diff``: N-1 pairs). A pair is **quiet** when
its diff would exit 0 under ``fail_on`` (default: no regression); the result counts the
quiet pairs and names, per case, in how many pairs it was a regression (``noisy``) or an
accepted variation -- the gate's own noise, measured rather than guessed.

Not here: the per-case rules (``harness.report.diff_rules``), the command
(``harness.cli.report_diff``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.report.diff import FAIL_ON, ReportDiff, diff_files
from harness.report.json_report import ReportError

__all__ = ["NoiseReport", "measure_noise", "render_noise"]


@dataclass(frozen=True)
class NoiseReport:
    """The diffs of consecutive same-build reports, and what made each one loud."""

    diffs: tuple[ReportDiff, ...]
    fail_on: str = "regression"

    @property
    def quiet(self) -> int:
        return sum(1 for d in self.diffs if not d.fails(self.fail_on))

    def counted(self, group: str) -> Counter[str]:
        """In how many pairs each case (``target/scenario``) was in ``group``."""
        return Counter(f"{d.target}/{d.scenario}" for diff in self.diffs for d in diff.group(group))

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "noise",
            "fail_on": self.fail_on,
            "pairs": len(self.diffs),
            "quiet": self.quiet,
            "loud": [
                {"base": d.base_name, "head": d.head_name, **d.counts()}
                for d in self.diffs
                if d.fails(self.fail_on)
            ],
            "cases": {g: dict(self.counted(g)) for g in ("regression", "change", "variation")},
        }


def measure_noise(
    paths: Sequence[str | Path], *, fail_on: str = "regression", **diff_options: Any
) -> NoiseReport:
    """Diff each report in ``paths`` against the next one (at least two reports)."""
    if len(paths) < 2:
        raise ReportError(f"noise needs at least two reports of one build, got {len(paths)}")
    if fail_on not in FAIL_ON:
        raise ReportError(f"--fail-on {fail_on!r}: one of {', '.join(FAIL_ON)}")
    diffs = tuple(
        diff_files(base, head, **diff_options) for base, head in zip(paths, paths[1:], strict=False)
    )
    return NoiseReport(diffs=diffs, fail_on=fail_on)


def render_noise(report: NoiseReport) -> str:
    """Plain text: one line per pair, the cases that made pairs loud, the count."""
    lines = []
    for diff in report.diffs:
        counts = diff.counts()
        state = "loud" if diff.fails(report.fail_on) else "quiet"
        lines.append(
            f"{state}: {diff.base_name} → {diff.head_name}: "
            + ", ".join(f"{counts[g]} {g}" for g in ("regression", "fix", "change", "variation"))
        )
    for group, label in (("regression", "regression in"), ("change", "other change in")):
        for case, n in sorted(report.counted(group).items()):
            lines.append(f"  {case}: {label} {n} of {len(report.diffs)} pairs")
    for case, n in sorted(report.counted("variation").items()):
        lines.append(f"  {case}: accepted variation in {n} of {len(report.diffs)} pairs")
    lines.append(
        f"{report.quiet} of {len(report.diffs)} pairs quiet "
        f"(report diff exits 0 under --fail-on {report.fail_on})"
    )
    return "\n".join(lines) + "\n"
