"""The scorecard: every target's verdict on every scenario, with totals and run time.

:func:`build_scorecard` turns :class:`~harness.runner.CaseResult` lists (a fresh run or
saved JSON reports) into a :class:`Scorecard`; ``scorecard.write.write_scorecard`` writes
it as ``scorecard.md`` (the table, for a README or a PR), ``scorecard.png`` (the verdict
grid, scenario x target, with per-target totals and run time; matplotlib, Agg) and a
self-contained ``scorecard.html`` (inline CSS, the picture embedded as base64).

A cell's *verdict* is the scenario contract's judgement of the case (``pass``: the
complete answer with every check clean; ``safe``: bounded, a clean typed error, the
required checks clean; ``fail``: anything else, with the failed checks named), read from
``CaseResult.verdict`` / ``failed_checks``. Cases that did not run are shown and counted
apart, as ``n/a`` (the target does not speak the scenario's API), ``skipped`` (a tier's
prerequisite is missing) and ``did_not_start`` (the target never reached the wire); a
case that ran but never met its fault is counted apart too, as ``not_exercised``
(``harness.contract.reach``); a result without a verdict shows ``?``. The kinds of cell,
with their marks and colours, are one table: ``harness.report.scorecard.cells``.

Run time per target is the wall time of its run when the command measured it, else the
sum of its cases' times (a hung case counts its ceiling).

Not here: running cases (``harness.runner``), the command (``harness.cli.scorecard``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.outcome import NOT_RUN
from harness.report.common import fmt_seconds, target_label
from harness.report.scorecard.cells import CELL_KINDS, KIND, NOT_RUN_CELLS, VERDICTS

__all__ = [
    "NO_VERDICT",
    "VERDICTS",
    "Cell",
    "Scorecard",
    "TargetTotals",
    "build_scorecard",
    "cell_text",
]

#: Cells without a verdict: not run (n/a, skipped, did not start), not exercised, or
#: from a report without verdicts (harness.report.scorecard.cells).
NO_VERDICT = tuple(k.name for k in CELL_KINDS if k.name not in VERDICTS)
DEFAULT_TITLE = "Transport fault scorecard"


@dataclass(frozen=True)
class Cell:
    """One scenario x target case as the scorecard shows it."""

    scenario: str
    target: str
    verdict: str
    outcome: str
    failed_checks: tuple[str, ...] = ()
    expected: str = ""
    matched: bool = True
    message: str = ""


@dataclass(frozen=True)
class TargetTotals:
    target: str
    counts: Mapping[str, int]
    run_s: float
    #: ``wall``: measured around the target's run; ``cases``: the sum of case times.
    run_time_kind: str = "cases"

    @property
    def cases(self) -> int:
        return sum(self.counts.values())

    @property
    def not_run(self) -> int:
        """Cases with no verdict: the target does not speak the API, skipped, unknown."""
        return sum(self.counts.get(v, 0) for v in NOT_RUN_CELLS)

    @property
    def not_exercised(self) -> int:
        """Cases that ran but never met their fault: neither pass nor fail."""
        return self.counts.get("not_exercised", 0)

    @property
    def run_time_note(self) -> str:
        """What the run time is: `` wall`` (measured around the target's run), or
        `` (sum of cases, not wall time)`` from reports that carry no wall time."""
        return " wall" if self.run_time_kind == "wall" else " (sum of cases, not wall time)"

    def row(self) -> tuple[str, ...]:
        """The totals table's row, as every rendering shows it: target, pass, safe, fail,
        not run, not exercised, run time."""
        c = self.counts
        counts = (
            c.get("pass", 0),
            c.get("safe", 0),
            c.get("fail", 0),
            self.not_run,
            self.not_exercised,
        )
        run_time = fmt_seconds(self.run_s) + self.run_time_note
        return (target_label(self.target), *map(str, counts), run_time)


@dataclass(frozen=True)
class Scorecard:
    title: str
    targets: tuple[str, ...]
    scenarios: tuple[str, ...]
    cells: Mapping[tuple[str, str], Cell]
    totals: tuple[TargetTotals, ...]
    time_scale: float | None = None
    notes: tuple[str, ...] = field(default=())

    def cell(self, scenario: str, target: str) -> Cell | None:
        return self.cells.get((scenario, target))


def build_scorecard(
    results: Sequence[Any],
    *,
    wall_s: Mapping[str, float] | None = None,
    title: str = DEFAULT_TITLE,
    notes: Sequence[str] = (),
) -> Scorecard:
    """A :class:`Scorecard` of ``results``; ``wall_s`` gives measured run times per target."""
    from harness.report.console import short_label
    from harness.report.posture import target_postures

    targets = tuple(dict.fromkeys(r.target for r in results))
    scenarios = tuple(sorted(dict.fromkeys(r.scenario for r in results)))
    cells: dict[tuple[str, str], Cell] = {}
    for r in results:
        cells[(r.scenario, r.target)] = Cell(
            scenario=r.scenario,
            target=r.target,
            verdict=verdict_of(r),
            outcome=short_label(r.outcome),
            failed_checks=tuple(getattr(r, "failed_checks", None) or ()),
            expected=str(r.expected or ""),
            matched=bool(r.matched),
            message=str(r.message or ""),
        )
    totals = []
    for target in targets:
        mine = [r for r in results if r.target == target]
        counts = {v: 0 for v in (*VERDICTS, *NO_VERDICT)}
        for r in mine:
            counts[cells[(r.scenario, r.target)].verdict] += 1
        measured = (wall_s or {}).get(target)
        run_s = float(measured) if measured is not None else sum(_case_s(r) for r in mine)
        totals.append(
            TargetTotals(
                target=target,
                counts=counts,
                run_s=run_s,
                run_time_kind="wall" if measured is not None else "cases",
            )
        )
    scales = {r.time_scale for r in results}
    return Scorecard(
        title=title,
        targets=targets,
        scenarios=scenarios,
        cells=cells,
        totals=tuple(totals),
        time_scale=min(scales) if scales else None,
        # each target's socket posture (harness.report.posture): one note per target
        notes=(*notes, *(f"Posture of {t}: {n}." for t, n in target_postures(results).items())),
    )


def verdict_of(result: Any) -> str:
    """The cell verdict of one result (see the module docstring)."""
    kind = result.outcome.kind
    if kind == "not_applicable":
        return "n/a"
    if kind in NOT_RUN:  # skipped, did_not_start: the cell is named for why
        return kind
    verdict = getattr(result, "verdict", None)
    if verdict == "not_exercised":
        return verdict
    return verdict if verdict in VERDICTS else "?"


def cell_text(cell: Cell, *, limit: int = 0) -> str:
    """What a grid cell says: the outcome, and for a fail the first failed check."""
    if KIND[cell.verdict].bare:
        return cell.verdict.replace("_", " ")
    text = cell.outcome
    if text.startswith("error(") and text.rstrip("↻").endswith(")"):
        text = text[len("error(") :].replace(")", "", 1)
    if cell.verdict == "fail" and cell.failed_checks:
        text += f" · {cell.failed_checks[0]}"
        if len(cell.failed_checks) > 1:
            text += f" +{len(cell.failed_checks) - 1}"
    if limit and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def _case_s(result: Any) -> float:
    if result.outcome.kind in NOT_RUN:  # never ran
        return 0.0
    if result.elapsed_s is not None:
        return float(result.elapsed_s)
    if result.outcome.kind == "hung":
        return float(result.ceiling_s)
    return 0.0
