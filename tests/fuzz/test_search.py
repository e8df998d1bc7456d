"""The search against real targets: a seeded short fuzz finds, shrinks, confirms, writes."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest

from harness.fuzz.findings import expected_text, is_difference, write_findings
from harness.fuzz.search import Search
from harness.fuzz.settings import FuzzSettings
from harness.scenario import load_scenario

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

TRUNCATION = ("truncated_as_complete", ("honest_reply",))


def _settings(tmp_path: Path, **overrides: object) -> FuzzSettings:
    values: dict[str, object] = {
        "target": "openai-sdk",
        "apis": ("chat",),
        "actions": ("truncate",),  # no hangs: each would cost the 3 s outer ceiling
        "examples": 15,
        "seed": 1,
        "time_scale": 0.02,
        "database": tmp_path / "db",
        "confirm": 2,
    }
    values.update(overrides)
    return FuzzSettings(**values)  # type: ignore[arg-type]


def test_the_bare_sdk_s_truncation_is_found_shrunk_to_one_rule_and_written(tmp_path):
    report = Search(_settings(tmp_path)).run()
    findings = {f.key: f for f in report.findings}
    assert TRUNCATION in findings, [f.key for f in report.findings]
    finding = findings[TRUNCATION]
    assert finding.rules == 1
    assert finding.status == "confirmed", finding.rate
    # the contract can be met: the reference stack raises on the same stream
    assert finding.satisfiable is True
    assert finding.reference is not None and finding.reference.verdict != "fail"
    # one bug, one finding: no two findings share a group
    assert len(findings) == len(report.findings)

    out = tmp_path / "out"
    write_findings(out, report.findings, target="openai-sdk")
    scenario = load_scenario(out / f"{finding.name}.toml")
    assert scenario.expected["openai-sdk"] == "truncated_as_complete"
    # what the reference did (an error when every attempt was cut, ok when only the
    # first was and it retried): recorded as observed
    assert scenario.expected["reference"] == expected_text(finding.reference)
    assert [r.fault.name for r in scenario.script.rules] == ["truncate"]
    summary = json.loads((out / "findings.json").read_text())
    assert finding.name in {f["name"] for f in summary["findings"]}


def test_a_rerun_tries_the_database_s_past_findings_first(tmp_path):
    first = Search(_settings(tmp_path)).run()
    assert TRUNCATION in {f.key for f in first.findings}
    # a different seed and a budget far too small to find it by generation again
    again = Search(_settings(tmp_path, seed=99, examples=3)).run()
    assert TRUNCATION in {f.key for f in again.findings}


def test_out_of_time_ends_the_search_with_what_it_found(tmp_path):
    ticks = itertools.count()
    # each clock reading is 2 s later: the search's minute is over after 30 readings
    report = Search(
        _settings(tmp_path, examples=None, minutes=1.0, database=None),
        clock=lambda: 2.0 * next(ticks),
    ).run()
    assert report.stopped_by == "minutes"
    assert report.examples < 30


def test_same_as_makes_a_passing_case_with_another_outcome_kind_a_finding(tmp_path):
    # the reference stack passes every truncation (it raises, or retries to a whole
    # answer); the bare SDK hands the cut text over. Judged by the verdict alone the
    # reference has no finding; judged against the SDK, the difference is one
    report = Search(
        _settings(tmp_path, target="reference", same_as="openai-sdk", reference=None)
    ).run()
    assert report.findings, "no difference found"
    for finding in report.findings:
        assert is_difference(finding.key), finding.key
        assert finding.result.verdict != "fail"
        assert finding.reference is not None and finding.reference.target == "openai-sdk"
        mine, theirs = finding.key[0].removeprefix("differs:").split("/")
        assert (mine, theirs) == (finding.result.outcome.kind, finding.reference.outcome.kind)
        assert mine != theirs
    finding = report.findings[0]
    assert finding.status == "confirmed", finding.rate
    assert finding.rules == 1
    write_findings(tmp_path / "out", report.findings, target="reference")
    scenario = load_scenario(tmp_path / "out" / f"{finding.name}.toml")
    # both sides' outcomes are written: the file documents the difference
    assert scenario.expected["openai-sdk"] == expected_text(finding.reference)
    assert scenario.expected["reference"] == expected_text(finding.result)


TWIN = '''
from harness.targets.clients.openai_sdk import OpenAISDKTarget


class Twin(OpenAISDKTarget):
    """The bare SDK under another name: a reference that fails what it fails."""

    name = "openai-sdk-twin"
    apis = ("chat",)
'''


def _target_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str):
    """A target class in a package the runner's children can import too."""
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "target.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    paths = (str(tmp_path), os.environ.get("PYTHONPATH"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))


def test_a_contract_the_reference_fails_too_is_kept_apart_not_a_finding(tmp_path, monkeypatch):
    # the bare SDK judged against its own twin as the reference: its truncation is a
    # contract the reference fails too, so the search keeps it apart instead of handing
    # it over as the client's bug (the catalog's real unsatisfiable groups are fixed as
    # they are found, so none is stable enough to pin here)
    _target_package(tmp_path, monkeypatch, "twinpkg", TWIN)
    report = Search(_settings(tmp_path, reference="twinpkg.target:Twin")).run()
    assert report.unsatisfiable, [f.key for f in report.findings]
    assert TRUNCATION in report.unsatisfiable
    for _data, result, reference in report.unsatisfiable.values():
        assert result.verdict == "fail" and reference.verdict == "fail"
    for finding in report.findings:
        assert finding.reference is not None and finding.reference.verdict != "fail"


FLAKY = '''
import os
from pathlib import Path

from harness.targets.base import CallResult
from harness.targets.clients.openai_sdk import OpenAISDKTarget


class Flaky(OpenAISDKTarget):
    """The bare SDK, but every other job (counted in a file) returns nothing."""

    name = "flaky-sdk"
    apis = ("chat",)

    def call(self, job, log):
        result = super().call(job, log)
        counter = Path(os.environ["FLAKY_COUNTER"])
        n = int(counter.read_text() or "0") if counter.exists() else 0
        counter.write_text(str(n + 1))
        return CallResult(text="", texts=("",)) if n % 2 == 0 else result
'''


def test_a_failure_that_does_not_repeat_is_kept_apart_not_shrunk(tmp_path, monkeypatch):
    _target_package(tmp_path, monkeypatch, "flakypkg", FLAKY)
    monkeypatch.setenv("FLAKY_COUNTER", str(tmp_path / "counter"))
    settings = _settings(
        tmp_path,
        target="flakypkg.target:Flaky",
        actions=("comment",),  # harmless: a correct client passes every example
        examples=2,
        database=None,
        reference=None,
    )
    report = Search(settings).run()
    assert report.findings == []  # each failure passed when replayed: nothing claimed
    assert report.timing_sensitive, "the first failure is kept, as timing"
    ((outcome, _checks),) = report.timing_sensitive
    assert outcome in ("truncated_as_complete", "wrong_content")
