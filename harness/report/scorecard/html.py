"""The scorecard as one self-contained HTML page: inline CSS, the picture embedded as
base64, the totals and the grid as tables (a cell's tooltip has its failed checks,
expectation and message)."""

from __future__ import annotations

import base64
from html import escape

from harness.report.common import target_label
from harness.report.scorecard import Cell, Scorecard, cell_text
from harness.report.scorecard.cells import COLOURS

__all__ = ["render_html"]

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; }
th { background: #f5f5f5; }
td.num { text-align: right; }
td.v { font-family: ui-monospace, monospace; font-size: 12px; }
img { max-width: 100%; border: 1px solid #eee; }
td, th { white-space: nowrap; }
.legend span { display: inline-block; padding: 2px 8px; margin-right: 6px; }
"""


def render_html(scorecard: Scorecard, *, png: bytes | None = None) -> str:
    css = _CSS + "".join(
        f"td.{_css(v)}, span.{_css(v)} {{ background: {c}; }}\n" for v, c in COLOURS.items()
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(scorecard.title)}</title>",
        f"<style>{css}</style></head><body>",
        f"<h1>{escape(scorecard.title)}</h1>",
        '<p class="legend">'
        + "".join(f'<span class="{_css(v)}">{escape(v)}</span>' for v in COLOURS if v != "?")
        + "</p>",
        "<table><tr><th>target</th><th>pass</th><th>safe</th><th>fail</th>"
        "<th>not run</th><th>not exercised</th><th>run time</th></tr>",
    ]
    for t in scorecard.totals:
        label, *figures = t.row()
        nums = "".join(f"<td class='num'>{escape(f)}</td>" for f in figures)
        parts.append(f"<tr><td>{escape(label)}</td>{nums}</tr>")
    parts.append("</table>")
    if png is not None:
        data = base64.b64encode(png).decode("ascii")
        parts.append(f'<img id="picture" alt="verdict grid" src="data:image/png;base64,{data}">')
    parts.append(
        '<table id="grid"><tr><th>scenario</th>'
        + "".join(f"<th>{escape(target_label(t))}</th>" for t in scorecard.targets)
        + "</tr>"
    )
    for name in scorecard.scenarios:
        row = [f"<td>{escape(name)}</td>"]
        for target in scorecard.targets:
            row.append(_cell(scorecard.cell(name, target)))
        parts.append("<tr>" + "".join(row) + "</tr>")
    parts.append("</table>")
    if scorecard.time_scale is not None:
        parts.append(f"<p>time_scale {scorecard.time_scale:g}</p>")
    parts += [f"<p>{escape(note)}</p>" for note in scorecard.notes]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _cell(cell: Cell | None) -> str:
    if cell is None:
        return "<td></td>"
    tip = [f"verdict: {cell.verdict}", f"outcome: {cell.outcome}"]
    if cell.failed_checks:
        tip.append("failed checks: " + ", ".join(cell.failed_checks))
    if cell.expected:
        tip.append(f"expected: {cell.expected}" + ("" if cell.matched else " (MISMATCH)"))
    if cell.message:
        tip.append(cell.message[:300])
    return (
        f'<td class="v {_css(cell.verdict)}" title="{escape(chr(10).join(tip))}">'
        f"{escape(cell_text(cell))}</td>"
    )


def _css(verdict: str) -> str:
    return {"n/a": "na", "?": "unknown"}.get(verdict, verdict)
