"""One counting rule in every report (issue 24): a case that did not run -- a missing
tier (skipped) or an API the target does not speak (not applicable) -- is counted as
not run everywhere, never as expected and never under a verdict. One result set goes
through the run summary, JSON, JUnit, Markdown and the scorecard; every count agrees."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET

from rich.console import Console

from harness.judge import Observed, judge_case
from harness.outcome import Expected
from harness.report.common import summary_counts
from harness.report.console import render_console
from harness.report.json_report import render_json
from harness.report.junit import render_junit
from harness.report.markdown import render_markdown
from harness.report.scorecard import build_scorecard
from harness.scenario import scenario_from_dict
from tests.judging import case_plan

NETNS = "kernel netem needs root (network namespaces and veth pairs): run the tests as root"


def _case(name: str, report: dict, expected: str | None):
    scenario = scenario_from_dict({"name": name, "summary": name})
    return judge_case(
        case_plan(
            scenario,
            "openai-sdk",
            expected=None if expected is None else Expected.parse(expected),
            time_scale=0.05,
            ceiling_s=3.0,
        ),
        Observed(report=report, started_t=0.0),
    )


def results():
    returned = {"status": "returned", "text": "", "t": 0.2}
    raised = {"status": "raised", "error": "ReadError", "mro": ["ReadError"], "t": 0.2}
    return [
        _case("a_ok", returned, "ok"),  # ran, as expected
        _case("b_mismatch", raised, "ok"),  # ran, mismatched
        _case("c_ungated", raised, None),  # ran, judged by verdict only
        *(
            _case(f"d_skipped_{i}", {"status": "skipped", "message": f"skipped: {NETNS}"}, "ok")
            for i in range(3)
        ),
        _case("e_na", {"status": "not_applicable", "message": "no messages"}, "not_applicable"),
        _case("f_na_unexpected", {"status": "not_applicable", "message": "no messages"}, "ok"),
    ]


def test_not_run_cases_are_counted_apart_and_every_report_agrees():
    rs = results()
    counts = summary_counts(rs)
    assert counts["cases"] == 8 and counts["not_run"] == 5
    assert (counts["skipped"], counts["not_applicable"]) == (3, 2)
    assert counts["gated"] == 2 and counts["matched"] == 1 and counts["ungated"] == 1
    assert counts["mismatched"] == 2  # b_mismatch, and the unexpected not_applicable
    assert counts["pass"] + counts["safe"] + counts["fail"] == 3  # only the cases that ran
    assert {r.verdict for r in rs if not r.ran} == {"not_run"} and not any(
        r.failed_checks for r in rs if not r.ran
    )

    # the run summary (console)
    out = io.StringIO()
    render_console(rs, console=Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert f"{counts['matched']}/{counts['gated']} cases as expected" in text
    assert f"{counts['not_run']} not run" in text
    assert f"3 skipped: {NETNS}" in text
    assert "2 not applicable" in text
    verdicts = re.search(r"verdicts: (\d+) pass, (\d+) safe, (\d+) fail", text)
    assert verdicts is not None
    assert tuple(map(int, verdicts.groups())) == (counts["pass"], counts["safe"], counts["fail"])

    # JSON: the same summary, and each not-run case says so
    doc = render_json(rs)
    assert doc["summary"] == counts
    assert [r["verdict"] for r in doc["results"]].count("not_run") == counts["not_run"]

    # JUnit: not-run cases are skipped (where matched) or failures (where not)
    suite = ET.fromstring(render_junit(rs).split("\n", 1)[1]).find("testsuite")
    assert suite is not None
    assert int(suite.get("tests")) == counts["cases"]
    assert int(suite.get("failures")) == counts["mismatched"]
    assert int(suite.get("skipped")) == sum(1 for r in rs if not r.ran and r.matched)

    # Markdown
    md = render_markdown(rs)
    assert f"{counts['matched']}/{counts['gated']} cases as expected" in md
    assert (
        f"Verdicts: {counts['pass']} pass, {counts['safe']} safe, {counts['fail']} fail, "
        f"{counts['not_run']} not run." in md
    )
    assert f"3 skipped: {NETNS}" in md

    # the scorecard
    totals = build_scorecard(rs).totals[0]
    assert totals.not_run == counts["not_run"]
    assert [totals.counts[v] for v in ("pass", "safe", "fail")] == [
        counts["pass"],
        counts["safe"],
        counts["fail"],
    ]


def test_a_run_where_nothing_ran_is_never_green():
    rs = [r for r in results() if not r.ran and r.matched]
    out = io.StringIO()
    render_console(rs, console=Console(file=out, width=200, color_system=None))
    assert "0/0 cases as expected" in out.getvalue()
    assert render_markdown(rs).splitlines()[2].startswith("❌")
