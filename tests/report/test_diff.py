"""``harness report diff`` over JSON reports written by the real writer (``write_json``):
grouping, noise, defensive reading of unknown and missing fields, exit statuses."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from harness.cli import main
from harness.outcome import Outcome
from harness.report import write_json
from harness.report.diff import diff_files, diff_reports, load_report
from harness.report.diff_markdown import render_diff_markdown
from harness.report.json_report import ReportError
from harness.runner import CaseResult

pytestmark = pytest.mark.timeout(30)


def case(scenario, *, kind="ok", error=None, verdict="pass", checks=(), target="hermes", **kw):
    outcome = Outcome(kind, error, (error, "Exception") if error else ())
    fields = dict(
        scenario=scenario,
        target=target,
        expected="",
        outcome=outcome,
        matched=True,
        time_scale=0.2,
        ceiling_s=60.0,
        latency_s=1.0,
        requests=1,
        verdict=verdict,
        failed_checks=tuple(checks),
    )
    fields.update(kw)
    return CaseResult(**fields)


BASE = [
    case("chat_healthy_stream"),
    case("chat_mid_stream_stall", kind="error", error="StallError", verdict="safe", requests=3),
    case(
        "chat_truncated_no_terminal", kind="wrong_content", verdict="fail", checks=["honest_reply"]
    ),
    case("nonstream_healthy", latency_s=0.4),
    case("rate_limited_forever", kind="error", error="RateLimitError", verdict="safe", requests=3),
]


def write(tmp_path, name, results, **extra):
    path = tmp_path / name
    write_json(path, results)
    if extra:
        doc = json.loads(path.read_text())
        doc.update(extra)
        path.write_text(json.dumps(doc))
    return path


def test_the_same_report_twice_is_no_change_and_exit_0(tmp_path, capsys):
    base = write(tmp_path, "base.json", BASE)
    # a second run: latencies moved by noise, requests and outcomes the same
    again = [replace(r, latency_s=(r.latency_s or 0) * 1.3) for r in BASE]
    head = write(tmp_path, "head.json", again)
    diff = diff_files(base, head)
    assert diff.deltas == () and diff.unchanged == len(BASE)
    assert main(["report", "diff", str(base), str(head)]) == 0
    assert "0 regressions, 0 fixes, 0 other changes" in capsys.readouterr().out


def test_regressions_fixes_and_changes_are_grouped_and_only_regressions_fail(tmp_path):
    head = list(BASE)
    head[0] = case(
        "chat_healthy_stream", kind="hung", verdict="fail", checks=["bounded"], requests=1
    )
    head[1] = case("chat_mid_stream_stall", kind="ok", requests=2)  # safe -> pass
    head[3] = case("nonstream_healthy", latency_s=4.0)  # beyond noise
    head[4] = replace(BASE[4], requests=5)  # same verdict, more requests
    diff = diff_files(write(tmp_path, "b.json", BASE), write(tmp_path, "h.json", head))
    groups = {d.scenario: d.group for d in diff.deltas}
    assert groups == {
        "chat_healthy_stream": "regression",
        "chat_mid_stream_stall": "fix",
        "nonstream_healthy": "change",
        "rate_limited_forever": "change",
    }
    regression = diff.group("regression")[0]
    assert regression.newly_failed == ("bounded",)
    assert "verdict pass → fail" in regression.what
    assert "outcome `ok` → `hung`" in regression.what
    assert diff.fails("regression") and diff.fails("change") and not diff.fails("never")
    text = render_diff_markdown(diff)
    assert "### Regressions" in text and "`chat_healthy_stream`" in text and "`bounded`" in text
    assert "### Fixes" in text and "### Other changes" in text
    assert "latency 400 ms → 4.00 s" in text and "requests 3 → 5" in text


def test_a_newly_failed_check_under_the_same_verdict_is_a_regression(tmp_path):
    head = list(BASE)
    head[2] = replace(BASE[2], failed_checks=("honest_reply", "request_budget"), requests=6)
    diff = diff_files(write(tmp_path, "b.json", BASE), write(tmp_path, "h.json", head))
    (delta,) = diff.deltas
    assert delta.group == "regression" and delta.newly_failed == ("request_budget",)


def test_only_fixes_exit_0_unless_fail_on_any(tmp_path):
    head = list(BASE)
    head[2] = case(
        "chat_truncated_no_terminal", kind="error", error="TruncatedStream", verdict="safe"
    )
    b, h = write(tmp_path, "b.json", BASE), write(tmp_path, "h.json", head)
    out = tmp_path / "diff.json"
    assert main(["report", "diff", str(b), str(h), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert (
        doc["summary"]["fix"] == 1 and doc["fixes"][0]["scenario"] == "chat_truncated_no_terminal"
    )
    assert main(["report", "diff", str(b), str(h), "--fail-on", "any"]) == 1


def test_unknown_fields_are_ignored_and_missing_ones_are_unknown(tmp_path):
    base = write(tmp_path, "b.json", BASE, posture={"anything": 1})
    doc = json.loads(base.read_text())
    for entry in doc["results"]:
        entry["exception_chain"] = [{"error": "X"}]  # a field another slice adds
        entry["posture"] = {"keepalive": True}
        del entry["latency_s"], entry["requests"]
    head = tmp_path / "h.json"
    head.write_text(json.dumps(doc))
    assert diff_files(base, head).deltas == ()


def test_flaky_cases_keep_verdicts_but_not_outcome_or_latency_noise(tmp_path):
    base = write(tmp_path, "b.json", BASE)
    doc = load_report(base)
    entry = doc["results"][1]
    entry["flaky"] = True
    entry["actual"] = "error(HardCeiling)"
    entry["latency_s"] = 30.0
    assert diff_reports(load_report(base), doc).deltas == ()
    entry["verdict"] = "fail"
    entry["failed_checks"] = ["bounded"]
    (delta,) = diff_reports(load_report(base), doc).deltas
    assert delta.group == "regression" and "flaky" in delta.what


def test_two_single_target_reports_pair_by_scenario(tmp_path):
    guarded = [replace(r, target="hermes+guard") for r in BASE]
    guarded[2] = replace(
        guarded[2],
        verdict="safe",
        failed_checks=(),
        outcome=Outcome("error", "TruncatedStream", ("TruncatedStream",)),
    )
    diff = diff_files(write(tmp_path, "b.json", BASE), write(tmp_path, "h.json", guarded))
    assert diff.targets == ("hermes → hermes+guard",)
    assert [(d.scenario, d.group) for d in diff.deltas] == [("chat_truncated_no_terminal", "fix")]


def test_skipped_and_one_sided_cases_are_changes_not_regressions(tmp_path):
    head = [case("chat_healthy_stream", kind="skipped", verdict="fail"), *BASE[1:4]]
    diff = diff_files(write(tmp_path, "b.json", BASE), write(tmp_path, "h.json", head))
    assert {d.scenario: (d.group, d.what[0]) for d in diff.deltas} == {
        "chat_healthy_stream": ("change", "not run: `ok` → `skipped`"),
        "rate_limited_forever": ("change", "only in base"),
    }
    assert not diff.fails()


def test_different_time_scales_do_not_compare_latency(tmp_path):
    head = [replace(r, time_scale=1.0, latency_s=20.0) for r in BASE]
    diff = diff_files(write(tmp_path, "b.json", BASE), write(tmp_path, "h.json", head))
    assert diff.deltas == () and "latency not compared" in diff.notes[0]


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "no such file"),
        ("{not json", "not a JSON report"),
        ('{"format": 1}', "not a harness JSON report"),
        ('{"format": 1, "results": [{"scenario": 3}]}', "results[0] has no scenario"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, content, needle):
    good = write(tmp_path, "good.json", BASE)
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)
    with pytest.raises(ReportError, match=re.escape(needle)):
        load_report(bad)
    assert main(["report", "diff", str(good), str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and str(bad) in err[0]
    assert main(["report", "diff", str(good), str(good), "--latency-noise", "-1"]) == 2
