"""``harness bench watchdog`` on a handful of runs: both stacks measured, table rendered.
Timing figures themselves belong to the benchmark, not to these tests."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from harness.bench.watchdog import (
    DeadlineFigures,
    measure_watchdog,
    render_watchdog_table,
    run_watchdog_bench,
)
from harness.server import FaultServer


@pytest.mark.timeout(60)
def test_a_tiny_run_measures_both_stacks_for_every_deadline_and_renders_a_table() -> None:
    with FaultServer() as srv:
        result = measure_watchdog(
            runs=3, concurrency=3, poll_s=0.05, base_s=0.02, base_url=srv.base_url
        )
    assert [f.deadline for f in result.figures] == [
        "first_byte_s",
        "stream_idle_s",
        "stale_call_s",
        "hard_ceiling_s",
    ]
    for fig in result.figures:
        assert len(fig.ours) == len(fig.polling) == 3
        assert all(v >= 0 for v in fig.ours + fig.polling)  # errors come after their deadline
    out = io.StringIO()
    render_watchdog_table(result, Console(file=out, width=140))
    text = out.getvalue()
    assert "stale_call_s" in text and "ratio p99" in text and "join(timeout=0.05)" in text
    assert set(result.to_dict()["deadlines"]) == {f.deadline for f in result.figures}


def test_percentiles_use_nearest_rank() -> None:
    values = [float(i) for i in range(1, 101)]
    assert DeadlineFigures.pct(values, 50) == 50.0
    assert DeadlineFigures.pct(values, 99) == 99.0
    assert DeadlineFigures.pct([3.0], 99) == 3.0


def test_bad_arguments_are_rejected_with_the_option_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        run_watchdog_bench(["--runs", "0"])
    assert "--runs" in capsys.readouterr().err
