"""``harness run --repeat N``: every case N times, the spread of outcomes and verdicts per
case, ``flaky`` in every report where the verdict varied, and expectations written from
the outcomes actually seen, with their counts."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.case_result import CaseResult
from harness.cli import EXIT_MISMATCH, main
from harness.expectations import load_overlay, render_overlay
from harness.outcome import Expected, Outcome
from harness.repeats import fold, repeat_cases
from harness.report.console import results_table
from harness.report.json_report import render_json
from harness.report.junit import render_junit
from harness.report.markdown import render_markdown

TESTS_DIR = Path(__file__).resolve().parent
FLIP = "runner.repeat_targets:FlipFlopTarget"


def result(outcome: Outcome, verdict: str, *, scenario: str = "s", matched: bool = True):
    return CaseResult(
        scenario=scenario,
        target="t",
        expected="ok|false_kill",
        outcome=outcome,
        matched=matched,
        time_scale=0.05,
        ceiling_s=3.0,
        verdict=verdict,
        failed_checks=() if verdict != "fail" else ("no_false_kill",),
    )


OK = Outcome("ok")
KILLED = Outcome("false_kill", "StreamIdleTimeout", ("StreamIdleTimeout",))


def test_repeat_cases_runs_each_case_n_times_side_by_side():
    assert repeat_cases(["a", "b"], 3) == ["a", "a", "a", "b", "b", "b"]
    with pytest.raises(ValueError, match=">= 1"):
        repeat_cases(["a"], 0)


def test_fold_counts_outcomes_and_verdicts_and_keeps_the_run_that_speaks_against_it():
    runs = [result(OK, "pass"), result(KILLED, "fail"), result(OK, "pass"), result(OK, "pass")]
    steady = [result(OK, "pass", scenario="u"), result(OK, "pass", scenario="u")]
    once = [result(OK, "pass", scenario="v")]
    folded = fold(runs + steady + once)
    assert [r.scenario for r in folded] == ["s", "u", "v"]
    s, u, v = folded
    assert s.repeats == {
        "runs": 4,
        "matched": 4,
        "outcomes": {"ok": 3, "false_kill(StreamIdleTimeout)": 1},
        "verdicts": {"pass": 3, "fail": 1},
    }
    assert s.flaky and s.verdict == "fail"  # the failing run is the one shown
    assert not u.flaky and u.repeats["runs"] == 2
    assert v.repeats is None and not v.flaky
    # a mismatched run makes the whole case mismatched
    mixed = fold([result(OK, "pass"), result(OK, "pass", matched=False)])
    assert not mixed[0].matched
    # the JSON form carries the spread and the flag, and reads back
    back = CaseResult.from_dict(json.loads(json.dumps(s.to_dict())))
    assert back.repeats == s.repeats and back.flaky and s.to_dict()["flaky"] is True


def test_every_report_flags_a_flaky_case_and_counts_it():
    folded = fold([result(OK, "pass"), result(KILLED, "fail"), result(OK, "pass", scenario="u")])
    flaky_text = "flaky: 1 pass, 1 fail of 2 runs"
    doc = render_json(folded)
    assert doc["summary"]["flaky"] == 1 and doc["results"][0]["flaky"] is True
    markdown = render_markdown(folded)
    assert flaky_text in markdown and "1 flaky" in markdown
    case = ET.fromstring(render_junit(folded)).find(".//testcase[@name='s']")
    assert case is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert flaky_text in props["flaky"] and flaky_text in (case.findtext("system-out") or "")
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(results_table(folded))
    assert flaky_text in console.export_text()


def test_overlay_from_repeats_writes_only_the_outcomes_seen_with_their_counts(tmp_path):
    runs = [result(OK, "pass")] * 3 + [result(KILLED, "fail")]
    errors = [
        result(Outcome("error", "ReadError", ("ReadError",)), "safe", scenario="e"),
        result(
            Outcome("error", "APIConnectionError", ("APIConnectionError",)), "safe", scenario="e"
        ),
    ]
    mixed = [
        result(Outcome("error", "ReadError", ("ReadError",)), "safe", scenario="m"),
        result(OK, "pass", scenario="m"),
        result(OK, "pass", scenario="m"),
    ]
    once = [result(OK, "pass", scenario="o")]
    text = render_overlay("t", runs + errors + mixed + once)
    assert 's = "ok|false_kill"  # 3/4 ok, 1/4 false_kill' in text
    assert 'e = "error:ReadError|APIConnectionError"  # 1/2 error:ReadError' in text
    assert 'm = "ok|error:ReadError"  # 2/3 ok, 1/3 error:ReadError' in text
    assert 'o = "ok"\n' in text  # one run: no alternatives, no comment
    path = tmp_path / "t.toml"
    path.write_text(text)
    overlay = load_overlay(path, scenarios=["s", "e", "m", "o"])
    for r in runs + errors + mixed + once:  # every outcome seen matches what was written
        assert Expected.parse(overlay.expected[r.scenario]).matches(r.outcome), r


@pytest.mark.timeout(180)
def test_run_repeat_measures_a_varying_target_in_every_report(tmp_path, monkeypatch, capsys):
    # A real run: a target that answers on even runs and raises on odd ones, 4 runs.
    monkeypatch.setenv("PYTHONPATH", str(TESTS_DIR))
    monkeypatch.setenv("HARNESS_TEST_FLIP_FILE", str(tmp_path / "count"))
    out = {k: tmp_path / f"r.{k}" for k in ("json", "md", "xml", "toml")}
    code = main(
        ["run", "chat_healthy_stream", "-t", FLIP, "--repeat", "4", "-j", "1", "--quiet"]
        + ["--time-scale", "0.05", "--json", str(out["json"]), "--markdown", str(out["md"])]
        + ["--junit", str(out["xml"]), "--write-expectations", str(out["toml"])]
    )
    console = capsys.readouterr().out
    assert code != EXIT_MISMATCH  # no expectation for this target: judged by verdict only
    assert "flaky: 2 pass, 2 fail of 4 runs" in console and "1 flaky" in console
    (entry,) = json.loads(out["json"].read_text())["results"]
    assert entry["flaky"] is True and entry["repeats"]["runs"] == 4
    assert entry["repeats"]["verdicts"] == {"pass": 2, "fail": 2}
    assert "flaky" in out["md"].read_text() and "flaky" in out["xml"].read_text()
    overlay = out["toml"].read_text()
    assert 'chat_healthy_stream = "ok|error:ConnectionError"  # 2/4 ok, 2/4' in overlay


def test_repeat_must_be_a_whole_number_of_at_least_one(capsys):
    with pytest.raises(SystemExit) as info:
        main(["run", "--repeat", "0"])
    assert info.value.code == 2 and "--repeat" in capsys.readouterr().err
