"""The scorecard as a PNG: per-target totals (stacked bars with run time) above the
verdict grid (scenario rows x target columns, each cell coloured by its verdict and
labelled with the outcome). matplotlib with the Agg backend: no display needed.

Nothing is clipped at any number of targets or name length: every column is as wide as
its longest text, measured in a monospaced font (so a width is characters x a constant),
and :func:`clipped_texts` re-checks the drawn picture (each text inside the figure, a
cell's text inside its cell), which the tests assert is empty.
"""

from __future__ import annotations

import functools
import io
from typing import Any

from harness.report.common import fmt_seconds, target_label
from harness.report.scorecard import Scorecard, cell_text
from harness.report.scorecard.cells import COLOURS, KIND, VERDICTS

__all__ = ["clipped_texts", "render_png"]

DPI = 110
FONT = "DejaVu Sans Mono"  # ships with matplotlib: the same widths everywhere
_CELL_PT, _NAME_PT, _HEAD_PT, _TOTAL_PT, _TITLE_PT = 6.5, 7.0, 8.0, 8.0, 13.0
_ROW_IN, _TOTAL_ROW_IN, _PAD_IN = 0.24, 0.42, 0.12
_BARS_IN = 3.0  # the stacked bars' width; their totals text follows them


def _width_in(text: str, points: float) -> float:
    """The drawn width of ``text`` in inches, measured by the Agg renderer at ``DPI``
    (hinting rounds each advance to whole pixels, so characters x em would be short)."""
    return _measure(text, points)


@functools.cache
def _measure(text: str, points: float) -> float:
    from matplotlib.font_manager import FontProperties

    width, _, _ = _renderer().get_text_width_height_descent(
        text, FontProperties(family=FONT, size=points), ismath=False
    )
    return width / DPI


@functools.cache
def _renderer() -> Any:
    from matplotlib.backends.backend_agg import RendererAgg

    return RendererAgg(100, 100, DPI)


def render_png(scorecard: Scorecard) -> bytes:
    """The picture as PNG bytes."""
    fig = _figure(scorecard)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def clipped_texts(scorecard: Scorecard) -> list[str]:
    """Every drawn text that leaves the figure, or a grid cell's text that leaves its
    cell: empty when nothing is clipped (measured on the rendered picture)."""
    fig = _figure(scorecard)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    problems = []
    for text in fig.findobj(lambda a: hasattr(a, "get_text") and hasattr(a, "get_window_extent")):
        if not text.get_text() or not text.get_visible():
            continue
        extent = text.get_window_extent(renderer)
        if (
            extent.x0 < box.x0 - 1
            or extent.x1 > box.x1 + 1
            or extent.y0 < box.y0 - 1
            or (extent.y1 > box.y1 + 1)
        ):
            problems.append(f"outside the figure: {text.get_text()!r}")
        cell = getattr(text, "_scorecard_cell", None)
        if cell is not None:
            x0, x1 = cell.get_window_extent(renderer).x0, cell.get_window_extent(renderer).x1
            if extent.x0 < x0 - 1 or extent.x1 > x1 + 1:
                problems.append(f"outside its cell: {text.get_text()!r}")
    return problems


def _figure(scorecard: Scorecard) -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle

    targets, scenarios = scorecard.targets, scorecard.scenarios
    labels = {t: target_label(t) for t in targets}
    n_t, n_s = max(len(targets), 1), max(len(scenarios), 1)
    texts = {(s, t): _cell_label(scorecard, s, t) for s in scenarios for t in targets}
    total_texts = [_total_text(t) for t in scorecard.totals]

    # Widths in inches, each from its longest text.
    name_in = _PAD_IN * 2 + max(
        [_width_in(s, _NAME_PT) for s in scenarios]
        + [_width_in(labels[t.target], _HEAD_PT) for t in scorecard.totals]
        + [1.0]
    )
    col_in = {
        t: _PAD_IN * 2
        + max(
            [_width_in(texts[(s, t)], _CELL_PT) for s in scenarios]
            + [_width_in(line, _HEAD_PT) for line in _head_lines(labels[t])]
            + [0.8]
        )
        for t in targets
    } or {"": 1.0}
    grid_in = sum(col_in.values())
    totals_in = _BARS_IN + _PAD_IN * 2 + max([_width_in(x, _TOTAL_PT) for x in total_texts] + [1])
    legend_in = 6.5  # five entries in one row
    width = name_in + max(grid_in, totals_in, legend_in) + _PAD_IN * 2
    head_lines = max([len(_head_lines(labels[t])) for t in targets] + [1])
    header_in = 0.16 * head_lines + 0.1
    title_in, legend_h = 0.45, 0.35
    totals_h, gap, grid_h, foot = _TOTAL_ROW_IN * n_t, 0.35 + header_in, _ROW_IN * n_s, 0.15
    height = title_in + legend_h + totals_h + gap + grid_h + foot
    fig = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)  # a renderer to measure with (clipped_texts)
    left = name_in / width
    fig.text(
        _PAD_IN / width,
        1 - 0.12 / height,
        scorecard.title,
        ha="left",
        va="top",
        fontsize=_TITLE_PT,
        weight="bold",
        family=FONT,
    )

    # totals: one stacked bar per target, counts inside when they fit, the sums after it
    bars_frac = _BARS_IN / width
    top_ax = fig.add_axes(
        (left, (foot + grid_h + gap) / height, bars_frac, totals_h / height), frameon=False
    )
    most = max((t.cases for t in scorecard.totals), default=1) or 1
    for row, t in enumerate(scorecard.totals):
        y = n_t - 1 - row
        start = 0
        for verdict in COLOURS:
            count = t.counts.get(verdict, 0)
            if not count:
                continue
            top_ax.barh(y, count, left=start, color=COLOURS[verdict], edgecolor="#9e9e9e",
                        linewidth=0.4, height=0.7)  # fmt: skip
            if _width_in(str(count), _TOTAL_PT) + 0.04 < _BARS_IN * count / most:
                top_ax.text(start + count / 2, y, str(count), ha="center", va="center",
                            fontsize=_TOTAL_PT, family=FONT)  # fmt: skip
            start += count
        fig.text(
            left + bars_frac + _PAD_IN / width,
            (foot + grid_h + gap + (y + 0.5) * _TOTAL_ROW_IN) / height,
            total_texts[row],
            va="center",
            fontsize=_TOTAL_PT,
            family=FONT,
        )
        fig.text(
            left - _PAD_IN / width,
            (foot + grid_h + gap + (y + 0.5) * _TOTAL_ROW_IN) / height,
            labels[t.target],
            ha="right",
            va="center",
            fontsize=_HEAD_PT,
            family=FONT,
        )
    top_ax.set_xlim(0, most)
    top_ax.set_ylim(-0.5, n_t - 0.5)
    top_ax.set_xticks([])
    top_ax.set_yticks([])

    # the grid: one axes in inches, columns of their own widths
    grid_ax = fig.add_axes((left, foot / height, grid_in / width, grid_h / height), frameon=False)
    grid_ax.set_xlim(0, grid_in)
    grid_ax.set_ylim(n_s, 0)
    grid_ax.set_xticks([])
    grid_ax.set_yticks([])
    x = 0.0
    for target in targets:
        w = col_in[target]
        grid_ax.text(x + _PAD_IN, -0.25, "\n".join(_head_lines(labels[target])), va="bottom",
                     ha="left", fontsize=_HEAD_PT, family=FONT, weight="bold")  # fmt: skip
        for row, name in enumerate(scenarios):
            cell = scorecard.cell(name, target)
            verdict = cell.verdict if cell is not None else "?"
            rect = Rectangle((x, row), w, 1, facecolor=COLOURS.get(verdict, "#ffffff"),
                             edgecolor="white")  # fmt: skip
            grid_ax.add_patch(rect)
            if cell is not None:
                label = grid_ax.text(x + _PAD_IN, row + 0.5, texts[(name, target)],
                                     va="center", fontsize=_CELL_PT, family=FONT)  # fmt: skip
                label._scorecard_cell = rect  # for clipped_texts()
        x += w
    for row, name in enumerate(scenarios):
        fig.text(
            left - _PAD_IN / width,
            (foot + (n_s - row - 0.5) * _ROW_IN) / height,
            name,
            ha="right",
            va="center",
            fontsize=_NAME_PT,
            family=FONT,
        )
    shown = [v for v in COLOURS if v in VERDICTS or _present(scorecard, v)]
    legend = [Patch(facecolor=COLOURS[v], edgecolor="#9e9e9e", label=_legend(v)) for v in shown]
    fig.legend(
        handles=legend,
        loc="upper left",
        bbox_to_anchor=(_PAD_IN / width, 1 - title_in / height),
        ncol=len(legend),
        fontsize=_TOTAL_PT,
        frameon=False,
        prop={"family": FONT, "size": _TOTAL_PT},
    )
    return fig


def _legend(verdict: str) -> str:
    """The legend's label: a verdict's own name, another kind's short meaning."""
    if verdict in VERDICTS or verdict == "n/a":
        return verdict
    return KIND[verdict].legend.split(":", 1)[0]


def _cell_label(scorecard: Scorecard, scenario: str, target: str) -> str:
    cell = scorecard.cell(scenario, target)
    return "" if cell is None else cell_text(cell)


def _total_text(t: Any) -> str:
    c = t.counts
    return (
        f"{c.get('pass', 0)} pass · {c.get('safe', 0)} safe · {c.get('fail', 0)} fail"
        + (f" · {t.not_run} not run" if t.not_run else "")
        + (f" · {t.not_exercised} not exercised" if t.not_exercised else "")
        + f" · {fmt_seconds(t.run_s)}{t.run_time_note}"
    )


def _head_lines(label: str) -> list[str]:
    """A column header on at most two lines: the name, then ``(import path)``."""
    name, sep, rest = label.partition(" (")
    return [name, f"({rest}"] if sep else [label]


def _present(scorecard: Scorecard, verdict: str) -> bool:
    return any(t.counts.get(verdict, 0) for t in scorecard.totals)
