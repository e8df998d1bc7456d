"""harness.bench.netem: the tables render from a result, and a tiny real Toxiproxy-hop run
works end to end (the dead-peer part is covered by test_kernel.py; it is too slow here)."""

from __future__ import annotations

import pytest
from rich.console import Console

from harness.bench.netem import (
    DeadPeerRow,
    HopRow,
    NetemBenchResult,
    render_netem_tables,
    run_netem_bench,
)
from harness.netem.prereq import require_toxiproxy


def rendered(result: NetemBenchResult) -> str:
    console = Console(record=True, width=140)
    render_netem_tables(result, console=console)
    return console.export_text()


def test_tables_show_bound_measured_overshoot_and_hung_rows() -> None:
    result = NetemBenchResult(
        dead_peer=(
            DeadPeerRow(
                "keepalive 1/1/2", "waiting", 3.0, (3.05, 3.07, 3.10), 0, 7.0, (110, 110, 110)
            ),
            DeadPeerRow("bare (no keepalive)", "waiting", None, (), 3, 7.0),
        ),
        hops=(
            HopRow("direct", (0.001, 0.001), (0.003, 0.004)),
            HopRow("through Toxiproxy", (0.002, 0.002), (0.004, 0.005)),
        ),
        skipped=("something: not installed",),
        load=(0.5, 0.4, 0.3),
    )
    text = rendered(result)
    assert "3.07" in text and "+0.07" in text and "110" in text
    assert "3/3 >7s" in text
    assert "+1.00" in text  # first event: 2 ms through the hop vs 1 ms direct
    assert "skipped something: not installed" in text and "load average: 0.50" in text


@pytest.mark.toxiproxy
@pytest.mark.timeout(30)
def test_toxiproxy_hop_part_measures_both_paths() -> None:
    require_toxiproxy()
    result = run_netem_bench(kernel=False, calls=3, events=5)
    assert [h.path for h in result.hops] == ["direct", "through Toxiproxy"]
    assert all(len(h.total_s) == 3 and min(h.total_s) > 0 for h in result.hops)
    assert "through Toxiproxy" in rendered(result)
