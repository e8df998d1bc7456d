"""The scorecard as Markdown: totals per target, then the verdict grid."""

from __future__ import annotations

from harness.report.common import target_label
from harness.report.scorecard import Cell, Scorecard
from harness.report.scorecard.cells import CELL_KINDS, KIND, MARKS

__all__ = ["render_markdown"]

#: The legend above the tables: every kind of cell a report with verdicts can show.
LEGEND = " · ".join(f"{k.mark} {k.legend}" for k in CELL_KINDS if k.name != "?")


def render_markdown(scorecard: Scorecard, *, picture: str | None = None) -> str:
    lines = [f"## {scorecard.title}", ""]
    if picture:
        lines += [f"![{scorecard.title}]({picture})", ""]
    lines += [
        LEGEND,
        "",
        "| target | pass | safe | fail | not run | not exercised | run time |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    lines += ["| " + " | ".join(t.row()) + " |" for t in scorecard.totals]
    lines += [
        "",
        "| scenario | " + " | ".join(target_label(t) for t in scorecard.targets) + " |",
        "|---|" + "---|" * len(scorecard.targets),
    ]
    for name in scorecard.scenarios:
        cells = [_cell(scorecard.cell(name, t)) for t in scorecard.targets]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if scorecard.time_scale is not None:
        lines += ["", f"time_scale {scorecard.time_scale:g}."]
    lines += [f"{note}" for note in scorecard.notes]
    return "\n".join(lines) + "\n"


def _cell(cell: Cell | None) -> str:
    if cell is None:
        return ""
    mark = MARKS.get(cell.verdict, "❔")
    if KIND[cell.verdict].bare:
        return mark
    text = f"{mark} `{cell.outcome}`"
    if cell.failed_checks:
        text += " (" + ", ".join(cell.failed_checks) + ")"
    return text.replace("|", "\\|")
