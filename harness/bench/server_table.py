"""The side-by-side tables of ``harness bench server`` (rich): one column per server.

Not here: measuring (``server.py``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.bench.server import ServerBenchResult

__all__ = ["ratios", "render"]

LABELS = {
    "ours": "fault server",
    "raw-asyncio": "raw asyncio",
    "uvicorn": "uvicorn+starlette",
    "llmock": "llmock",
}


def render(result: ServerBenchResult, *, console: Any = None) -> None:
    """Print the cells table, the ratios, ours' timeline figures and the run's context."""
    from rich.console import Console
    from rich.table import Table

    if console is None:
        console = Console()
        if not console.is_terminal:  # piped: rich would wrap the table at 80 columns
            console = Console(width=140)
    names = [f.name for f in result.servers]
    by = {f.name: f for f in result.servers}
    table = Table(title="harness bench server: fault server vs baselines, one run")
    table.add_column("configuration")
    table.add_column("measure")
    for name in names:
        table.add_column(LABELS.get(name, name), justify="right")

    def row(config: str, label: str, cells: list[str]) -> None:
        table.add_row(config, label, *cells)

    row(
        f"held at once (of {result.held_target})",
        "streams / errors",
        [f"{by[n].held_peak} / {by[n].held_errors}" for n in names],
    )
    modes = [("burst", c) for c in result.concurrency] + [("paced", result.paced_concurrency)]
    for mode, c in modes:
        cells = [result.cell(n, mode, c) for n in names]
        if not any(cells):
            continue
        load = next(x.loadavg_1m for x in cells if x is not None)
        first = cells[0] or next(x for x in cells if x is not None)
        config = f"{mode} C={c} (load {load:.1f})"
        row(config, "events/s (median)", [_fmt(x, "events_per_s", "{:,.0f}") for x in cells])
        row(
            f"{first.events_per_run:,} ev/run",
            f"CPU µs/event median (min–max of {result.runs})",
            [
                "-"
                if x is None
                else f"{x.cpu_us_per_event:.1f} ({x.cpu_us_min:.1f}–{x.cpu_us_max:.1f})"
                for x in cells
            ],
        )
        row("", "errors", [_fmt(x, "errors", "{}") for x in cells])
        if mode == "paced":
            row(
                f"every {result.paced_interval_s * 1000:.0f} ms"
                f" (ours: quantum {result.pace_quantum_s * 1000:g} ms)",
                "client lateness p50 / p99 ms",
                [
                    "-" if x is None else f"{x.lateness_p50_ms:.1f} / {x.lateness_p99_ms:.1f}"
                    for x in cells
                ],
            )
    row("after burst", "peak RSS MiB (VmHWM)", [f"{by[n].peak_rss_mb:.0f}" for n in names])
    console.print(table)
    for line in ratios(result):
        console.print(f"  {line}")
    ours = by.get("ours")
    if ours is not None and ours.timeline_all_p99_ms is not None:
        console.print(
            f"  fault server timeline |actual - scheduled| p99 ms (target < 5): events "
            f"{ours.timeline_event_p99_ms:.2f}, drip {ours.timeline_drip_p99_ms:.2f}, "
            f"hang end {ours.timeline_hang_end_p99_ms:.2f}, all {ours.timeline_all_p99_ms:.2f}"
            f" ({result.timing_priority} priority; paced frames written up to"
            f" {result.pace_quantum_s * 1000:g} ms early: the pace quantum)"
        )
    for fig in result.servers:
        console.print(f"  {fig.name}: {fig.notes}")
    console.print(
        f"  {result.cpus}; loadavg before {tuple(round(x, 2) for x in result.loadavg_before)}, "
        f"after {tuple(round(x, 2) for x in result.loadavg_after)}"
    )


def ratios(result: ServerBenchResult) -> list[str]:
    """Per cell: ours / raw asyncio and llmock / ours, in median CPU per event."""
    lines = []
    for mode, c in [("burst", c) for c in result.concurrency] + [
        ("paced", result.paced_concurrency)
    ]:
        ours = result.cell("ours", mode, c)
        if ours is None:
            continue
        parts = []
        for other, label in (("raw-asyncio", "ours/raw asyncio"), ("uvicorn", "ours/uvicorn")):
            x = result.cell(other, mode, c)
            if x is not None:
                parts.append(f"{label} {_ratio(ours.cpu_us_per_event, x.cpu_us_per_event)}")
        x = result.cell("llmock", mode, c)
        if x is not None:
            parts.append(f"llmock/ours {_ratio(x.cpu_us_per_event, ours.cpu_us_per_event)}")
        if parts:
            lines.append(f"CPU per event, {mode} C={c}: " + ", ".join(parts))
    return lines


def _ratio(a: float, b: float) -> str:
    return "-" if not b or math.isnan(a) or math.isnan(b) else f"{a / b:.2f}×"


def _fmt(cell: Any, attr: str, fmt: str) -> str:
    return "-" if cell is None else fmt.format(getattr(cell, attr))
