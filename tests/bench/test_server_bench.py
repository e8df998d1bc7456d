"""``harness bench server`` on tiny counts: every server measured in every cell, the
tables rendered, the JSON written. Timing figures themselves belong to the benchmark,
not to these tests."""

from __future__ import annotations

import io
import json
import math

import pytest
from rich.console import Console

from harness.bench.server import measure_servers
from harness.bench.server_children import SERVER_KINDS
from harness.bench.server_cli import main as run_server_bench
from harness.bench.server_table import render as render_server_table

TINY = {
    "held": 20,
    "runs": 3,
    "streams": 12,
    "concurrency": (6, 12),
    "paced_streams": 5,
    "paced_events": 6,
    "hold_s": 0.3,
}


@pytest.mark.timeout(180)
def test_a_tiny_run_measures_every_server_in_every_cell_and_renders_a_table() -> None:
    result = measure_servers(**TINY)
    assert [f.name for f in result.servers] == list(SERVER_KINDS)
    for fig in result.servers:
        assert fig.held_peak == 20 and fig.held_errors == 0 and fig.peak_rss_mb > 0
    assert {(c.mode, c.concurrency) for c in result.cells} == {
        ("burst", 6),
        ("burst", 12),
        ("paced", 5),
    }
    for cell in result.cells:
        assert cell.errors == 0, cell
        assert len(cell.runs_cpu_us_per_event) == 3
        assert all(x > 0 for x in cell.runs_events_per_s)
        assert cell.cpu_us_min <= cell.cpu_us_per_event <= cell.cpu_us_max
        # every server streamed the same reply shape: 6 deltas + role, finish, [DONE]
        expected = 53 if cell.mode == "burst" else 9
        assert cell.events_per_run == expected * (12 if cell.mode == "burst" else 5)
        assert (cell.lateness_p99_ms is not None) == (cell.mode == "paced")
    ours = result.servers[0]
    assert not math.isnan(ours.timeline_event_p99_ms) and not math.isnan(ours.timeline_drip_p99_ms)
    assert not math.isnan(ours.timeline_hang_end_p99_ms)
    out = io.StringIO()
    render_server_table(result, console=Console(file=out, width=200))
    text = out.getvalue()
    for label in ("fault server", "raw asyncio", "uvicorn+starlette", "llmock", "burst C=12"):
        assert label in text
    assert "llmock/ours" in text and "ours/raw asyncio" in text


@pytest.mark.timeout(120)
def test_json_holds_every_cell_with_cpu_spread_and_load(tmp_path) -> None:
    path = tmp_path / "bench.json"
    args = ["--quick", "--servers", "ours,raw-asyncio", "--concurrency", "5", "--json", str(path)]
    assert run_server_bench(args) == 0
    doc = json.loads(path.read_text())
    assert [s["name"] for s in doc["servers"]] == ["ours", "raw-asyncio"]
    cells = {(c["server"], c["mode"], c["concurrency"]) for c in doc["cells"]}
    assert ("raw-asyncio", "burst", 5) in cells and ("ours", "paced", 20) in cells
    for cell in doc["cells"]:
        assert {"events_per_s", "cpu_us_per_event", "cpu_us_min", "cpu_us_max", "errors"} <= set(
            cell
        )
        assert cell["loadavg_1m"] >= 0
    assert len(doc["loadavg_before"]) == 3 and doc["servers"][0]["peak_rss_mb"] > 0


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--runs", "2"], "--runs"),
        (["--servers", "ours,nginx"], "--servers"),
        (["--concurrency", "10,x"], "--concurrency"),
        (["--paced-streams", "0"], "--paced-streams"),
    ],
)
def test_bad_arguments_exit_2_naming_the_option(
    args: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        run_server_bench(args)
    assert info.value.code == 2 and option in capsys.readouterr().err
