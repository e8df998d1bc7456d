"""``harness bench server`` on tiny counts: both servers measured, the table rendered.
Timing figures themselves belong to the benchmark, not to these tests."""

from __future__ import annotations

import io
import math

import pytest
from rich.console import Console

from harness.bench.server import measure_servers, render_server_table, run_server_bench


@pytest.mark.timeout(90)
def test_a_tiny_run_measures_both_servers_without_errors_and_renders_a_table() -> None:
    result = measure_servers(
        held=20, runs=3, streams=12, concurrency=6, paced_streams=5, paced_events=6, hold_s=0.3
    )
    assert [f.name for f in result.servers] == ["ours", "baseline"]
    for fig in result.servers:
        assert fig.held_peak == 20 and fig.held_errors == 0 and fig.throughput_errors == 0
        assert len(fig.runs_events_per_s) == 3 and all(x > 0 for x in fig.runs_events_per_s)
    ours = result.servers[0]
    assert not math.isnan(ours.timeline_event_p99_ms) and not math.isnan(ours.timeline_drip_p99_ms)
    assert not math.isnan(ours.timeline_hang_end_p99_ms)
    out = io.StringIO()
    render_server_table(result, console=Console(file=out, width=160))
    text = out.getvalue()
    assert "fault server" in text and "uvicorn+starlette" in text and "streams held at once" in text


def test_bad_arguments_exit_2_naming_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        run_server_bench(["--runs", "2"])
    assert info.value.code == 2 and "--runs" in capsys.readouterr().err
