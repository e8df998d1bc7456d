"""``harness bench proxy`` on tiny counts: both paths measured, the table rendered.
The figures themselves belong to the benchmark (README), not to these tests."""

from __future__ import annotations

import io
import math

import pytest
from rich.console import Console

from harness.bench.proxy import QUICK, main, measure_proxy, render_proxy_table


@pytest.mark.timeout(120)
def test_a_tiny_run_measures_direct_and_proxied_without_errors() -> None:
    result = measure_proxy(**QUICK, realtime=False)
    for fig in (result.direct, result.proxied):
        assert fig.errors == 0
        assert not math.isnan(fig.first_event_p50_ms) and fig.events_per_s > 0
    assert result.direct.proxy_cpu_us_per_event is None
    assert (
        result.proxied.proxy_cpu_us_per_event is not None
        and result.proxied.proxy_cpu_us_per_event > 0
    )
    out = io.StringIO()
    render_proxy_table(result, console=Console(file=out, width=160))
    assert "via harness proxy" in out.getvalue() and "first-event latency" in out.getvalue()


def test_bad_arguments_exit_2_naming_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--runs", "2"])
    assert info.value.code == 2 and "--runs" in capsys.readouterr().err
