"""The scorecard as a PNG: per-target totals (stacked bars with run time) above the
verdict grid (scenario rows x target columns, each cell coloured by its verdict and
labelled with the outcome). matplotlib with the Agg backend: no display needed."""

from __future__ import annotations

import io

from harness.report.common import fmt_seconds
from harness.report.scorecard import VERDICTS, Scorecard, cell_text

__all__ = ["COLOURS", "render_png"]

#: Verdict colours (also used by the HTML page): colour-blind-safe-ish green/amber/red.
COLOURS = {
    "pass": "#4caf50",
    "safe": "#ffc107",
    "fail": "#e53935",
    "n/a": "#e0e0e0",
    "skipped": "#bdbdbd",
    "?": "#ffffff",
}
_ROW_IN = 0.24
_COL_IN = 2.3
_NAME_IN = 3.6
_TOTALS_IN = 0.42
DPI = 110


def render_png(scorecard: Scorecard) -> bytes:
    """The picture as PNG bytes."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle

    targets, scenarios = scorecard.targets, scorecard.scenarios
    n_t, n_s = max(len(targets), 1), max(len(scenarios), 1)
    # Vertical layout in inches, top to bottom: title and legend, the totals, the grid.
    head, totals_h, gap, grid_h, foot = 0.75, _TOTALS_IN * n_t, 0.55, _ROW_IN * n_s, 0.15
    width = _NAME_IN + _COL_IN * n_t + 0.3
    height = head + totals_h + gap + grid_h + foot
    fig = Figure(figsize=(width, height), dpi=DPI)
    left, right = _NAME_IN / width, 1 - 0.3 / width
    top_ax = fig.add_axes((left, (foot + grid_h + gap) / height, right - left, totals_h / height))
    grid_ax = fig.add_axes((left, foot / height, right - left, grid_h / height))
    fig.suptitle(
        scorecard.title, x=0.02, y=1 - 0.1 / height, ha="left", va="top", fontsize=13, weight="bold"
    )

    # totals: one stacked bar per target, counts inside when they fit, the sums after it
    most = max((t.cases for t in scorecard.totals), default=1) or 1
    for row, t in enumerate(scorecard.totals):
        y = n_t - 1 - row
        start = 0
        for verdict in (*VERDICTS, "n/a", "skipped", "?"):
            count = t.counts.get(verdict, 0)
            if not count:
                continue
            top_ax.barh(
                y,
                count,
                left=start,
                color=COLOURS[verdict],
                edgecolor="#9e9e9e",
                linewidth=0.4,
                height=0.7,
            )
            if count / most >= 0.06:
                top_ax.text(start + count / 2, y, str(count), ha="center", va="center", fontsize=8)
            start += count
        c = t.counts
        kind = t.run_time_note
        top_ax.text(
            start + most * 0.02,
            y,
            f"{c.get('pass', 0)} pass · {c.get('safe', 0)} safe · {c.get('fail', 0)} fail"
            f" · {fmt_seconds(t.run_s)}{kind}",
            va="center",
            fontsize=8,
        )
    top_ax.set_xlim(0, most * 1.75)
    top_ax.set_ylim(-0.5, n_t - 0.5)
    top_ax.set_yticks(range(n_t), [t.target for t in reversed(scorecard.totals)], fontsize=9)
    top_ax.set_xticks([])
    top_ax.tick_params(length=0)
    for spine in top_ax.spines.values():
        spine.set_visible(False)

    # the grid
    for col, target in enumerate(targets):
        for row, name in enumerate(scenarios):
            cell = scorecard.cell(name, target)
            verdict = cell.verdict if cell is not None else "?"
            grid_ax.add_patch(
                Rectangle(
                    (col, row), 1, 1, facecolor=COLOURS.get(verdict, "#ffffff"), edgecolor="white"
                )
            )
            if cell is not None:
                grid_ax.text(
                    col + 0.04, row + 0.5, cell_text(cell, limit=34), va="center", fontsize=6.5
                )
    grid_ax.set_xlim(0, n_t)
    grid_ax.set_ylim(n_s, 0)
    grid_ax.set_xticks([c + 0.5 for c in range(len(targets))], targets, fontsize=9)
    grid_ax.xaxis.tick_top()
    grid_ax.set_yticks([r + 0.5 for r in range(len(scenarios))], scenarios, fontsize=7)
    grid_ax.tick_params(length=0)
    for spine in grid_ax.spines.values():
        spine.set_visible(False)
    shown = [
        v for v in (*VERDICTS, "n/a", "skipped", "?") if v in VERDICTS or _present(scorecard, v)
    ]
    legend = [
        Patch(facecolor=COLOURS[v], edgecolor="#9e9e9e", label=_LEGEND.get(v, v)) for v in shown
    ]
    fig.legend(
        handles=legend,
        loc="upper left",
        bbox_to_anchor=(0.02, 1 - 0.38 / height),
        ncol=len(legend),
        fontsize=8,
        frameon=False,
    )
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


_LEGEND = {"?": "no verdict in the report"}


def _present(scorecard: Scorecard, verdict: str) -> bool:
    return any(t.counts.get(verdict, 0) for t in scorecard.totals)
