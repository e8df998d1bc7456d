"""``harness bench fuzz`` on a tiny run: both rates measured for a target, the table
rendered, bad options refused. Figures belong to the benchmark."""

from __future__ import annotations

import pytest

from harness.bench.fuzz import catalog_cases, main, measure, render
from harness.scenario import load_catalog, select


def test_the_catalog_side_is_the_api_s_server_only_scenarios() -> None:
    cases = catalog_cases("chat")
    assert cases and all(s.api == "chat" and s.backend == "server" for s in cases)
    assert len(cases) < len([s for s in load_catalog() if s.api == "chat"])  # relays left out


@pytest.mark.timeout(180)
def test_a_tiny_run_measures_fuzz_and_catalog_and_renders(
    capsys: pytest.CaptureFixture[str],
) -> None:
    scenarios = select(load_catalog(), ["chat_healthy_stream", "chat_tool_call"])
    result = measure(("reference",), seconds=3, jobs=1, scenarios=scenarios)
    rates = result.rates["reference"]
    assert rates["fuzz"].cases >= 1 and rates["fuzz"].per_minute > 0
    assert rates["catalog"].cases == 2 and rates["catalog"].per_minute > 0
    render(result)
    out = capsys.readouterr().out
    assert "fuzz cases/min" in out and "reference" in out
    data = result.to_dict()
    assert data["ratio"]["reference"] == pytest.approx(result.ratio("reference"), abs=0.01)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seconds", "0"], "--seconds: 0 is not valid; allowed: a whole number >= 1"),
        (["-t", "no-such-target"], "--target 'no-such-target'"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err
