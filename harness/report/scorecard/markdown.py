"""The scorecard as Markdown: totals per target, then the verdict grid."""

from __future__ import annotations

from harness.report.common import target_label
from harness.report.scorecard import Cell, Scorecard

__all__ = ["MARKS", "render_markdown"]

MARKS = {
    "pass": "✅",
    "safe": "🟡",
    "fail": "❌",
    "n/a": "➖",
    "skipped": "⏭️",
    "?": "❔",
    "not_exercised": "🔘",
}


def render_markdown(scorecard: Scorecard, *, picture: str | None = None) -> str:
    lines = [f"## {scorecard.title}", ""]
    if picture:
        lines += [f"![{scorecard.title}]({picture})", ""]
    lines += [
        "✅ pass: the complete answer, every check clean · 🟡 safe: bounded, a clean typed "
        "error, the required checks clean · ❌ fail: anything else (failed checks named) · "
        "➖ n/a: the target does not speak the API · ⏭️ skipped: a tier's prerequisite is "
        "missing · 🔘 not exercised: the case ran, its fault never fired",
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
    if cell.verdict in ("n/a", "skipped"):
        return mark
    text = f"{mark} `{cell.outcome}`"
    if cell.failed_checks:
        text += " (" + ", ".join(cell.failed_checks) + ")"
    return text.replace("|", "\\|")
