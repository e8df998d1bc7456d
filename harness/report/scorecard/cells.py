"""The kinds of scorecard cell, in one table: each cell's name, Markdown mark, colour
(picture and HTML), legend and whether it counts as a case not run. The picture, the
HTML page, the Markdown table, the totals and the command's summary all read it, so a
new kind of cell is one row here.

Not here: which cell a result gets (``harness.report.scorecard.verdict_of``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CELL_KINDS", "COLOURS", "KIND", "MARKS", "NOT_RUN_CELLS", "VERDICTS"]


@dataclass(frozen=True)
class CellKind:
    name: str
    mark: str
    colour: str
    legend: str
    #: never ran (no verdict): counted in a target's "not run"
    not_run: bool = False
    #: the cell shows its name alone (nothing ran, so there is no outcome to show)
    bare: bool = False


#: Every kind, in the order the picture's bars and legends use.
CELL_KINDS = (
    CellKind("pass", "✅", "#4caf50", "pass: the complete answer, every check clean"),
    CellKind(
        "safe", "🟡", "#ffc107", "safe: bounded, a clean typed error, the required checks clean"
    ),
    CellKind("fail", "❌", "#e53935", "fail: anything else (failed checks named)"),
    CellKind("n/a", "➖", "#e0e0e0", "n/a: the target does not speak the API", True, True),
    CellKind("skipped", "⏭️", "#bdbdbd", "skipped: a tier's prerequisite is missing", True, True),
    CellKind(
        "did_not_start",
        "⛔",
        "#8d6e63",
        "did not start: the target never reached the wire",
        True,
        True,
    ),
    CellKind("?", "❔", "#ffffff", "no verdict in the report", True),
    CellKind(
        "not_exercised", "🔘", "#90caf9", "not exercised: the case ran, its fault never fired"
    ),
)
KIND = {k.name: k for k in CELL_KINDS}
#: The contract's verdicts, best first.
VERDICTS = ("pass", "safe", "fail")
NOT_RUN_CELLS = tuple(k.name for k in CELL_KINDS if k.not_run)
COLOURS = {k.name: k.colour for k in CELL_KINDS}
MARKS = {k.name: k.mark for k in CELL_KINDS}
