"""``harness bench guard`` on a tiny run: both configurations measured, the isolated
path measured, the table rendered, bad options refused. Figures belong to the benchmark."""

from __future__ import annotations

import os

import pytest

from harness.bench.guard import CONFIGS, main, measure, render


@pytest.mark.timeout(120)
def test_a_tiny_run_measures_both_configurations_and_renders_a_table() -> None:
    affinity = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    try:
        result = measure(rounds=2, calls=1, events=20)
    finally:
        if affinity is not None:
            os.sched_setaffinity(0, affinity)  # the bench pins its process; undo it here
    for config in CONFIGS:
        assert len(result.cpu_us[config]) == 2 and all(v > 0 for v in result.cpu_us[config])
        assert len(result.first_ms[config]) == 2
    assert len(result.isolated_us) == 2 and all(v > 0 for v in result.isolated_us)
    table = render(result)
    assert "CPU per event" in table and "first-event latency p50" in table
    assert result.to_dict()["overhead_us_per_event"] == pytest.approx(result.overhead_us)


def test_a_non_positive_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--events", "0"])
    assert info.value.code == 2
    assert "--events: 0 is not valid; allowed: a whole number >= 1" in capsys.readouterr().err
