"""Verdicts in every report, and the scorecard (Markdown, PNG, self-contained HTML).

Results are synthetic; the PNG is decoded by matplotlib's own reader (an independent
check that it is a real image of the promised size, not just bytes with a header)."""

from __future__ import annotations

import base64
import copy
import dataclasses
import io
import re
import xml.etree.ElementTree as ET

import pytest
from rich.console import Console

from harness.report import render_console, render_junit, render_markdown, write_json
from harness.report.json_report import load_json, load_wall_times
from harness.report.scorecard import build_scorecard, cell_text
from harness.report.scorecard.write import write_scorecard
from tests.report.test_reports import case


def with_verdict(result, verdict, checks=()):
    """``result`` with a contract verdict."""
    return dataclasses.replace(result, verdict=verdict, failed_checks=tuple(checks))


def without_verdict(result):
    """``result`` as read from a report written before verdicts existed (no verdict)."""
    clone = copy.copy(result)
    object.__setattr__(clone, "verdict", None)
    object.__setattr__(clone, "failed_checks", ())
    return clone


JUDGED = [
    with_verdict(case(), "safe"),
    with_verdict(
        case(target="openai-sdk", kind="hung", expected="hung", latency_s=None, elapsed_s=None),
        "fail",
        ("bound", "alive_after"),
    ),
    with_verdict(
        case(scenario="chat_healthy_stream", kind="ok", expected="ok", error=None), "pass"
    ),
    with_verdict(
        case(
            scenario="chat_healthy_stream",
            target="openai-sdk",
            kind="ok",
            expected="ok",
            error=None,
        ),
        "pass",
    ),
    with_verdict(
        case(
            scenario="messages_healthy_stream",
            target="openai-sdk",
            kind="not_applicable",
            expected="not_applicable",
            error=None,
        ),
        "not_run",  # the contract's verdict on a case that did not run (issue 24)
    ),
]


def test_console_shows_the_verdict_and_failed_checks_next_to_the_outcome():
    console = Console(record=True, width=260)
    render_console(JUDGED, console=console)
    text = console.export_text()
    assert "verdict" in text
    assert "alive_after" in text and "bound" in text
    assert "verdicts: 2 pass, 1 safe, 1 fail" in text
    # a failing verdict is visible, but the expectation (hung, as expected) decides the run;
    # the case that did not run is counted apart, never as expected
    assert "4/4 cases as expected, 0 mismatched" in text and "1 not run" in text


def test_console_without_verdicts_has_no_verdict_column():
    console = Console(record=True, width=220)
    render_console([without_verdict(case())], console=console)
    assert "verdict" not in console.export_text()


def test_markdown_has_a_verdict_column_and_lists_failing_verdicts():
    md = render_markdown(JUDGED)
    assert "openai-sdk verdict" not in md  # one header per target: "<t> expected | ..."
    assert "| verdict |" in md
    assert "❌ fail (bound, alive_after)" in md
    assert "Verdicts: 2 pass, 1 safe, 1 fail, 1 not run." in md
    assert "### Failing verdicts" in md and "`bound`, `alive_after`" in md
    assert md.startswith("## ") and "✅ 4/4 cases as expected" in md


def test_junit_carries_the_verdict_without_failing_the_case():
    root = ET.fromstring(render_junit(JUDGED).split("\n", 1)[1])
    hung = next(
        c
        for c in root.iter("testcase")
        if c.get("name") == "chat_mid_stream_stall" and c.get("classname").endswith("openai-sdk")
    )
    props = {p.get("name"): p.get("value") for p in hung.iter("property")}
    assert props == {"verdict": "fail", "failed_checks": "bound,alive_after"}
    assert hung.find("failure") is None  # the expectation matched: not a CI failure
    assert "verdict fail: failed checks bound, alive_after" in hung.find("system-err").text
    assert hung.find("system-out").text.startswith("verdict: fail (bound, alive_after)")


def test_junit_mismatch_message_names_the_verdict():
    bad = with_verdict(case(kind="hung", expected="error", matched=False), "fail", ("bound",))
    root = ET.fromstring(render_junit([bad]).split("\n", 1)[1])
    assert next(root.iter("failure")).get("message") == (
        "expected error, got hung (verdict fail (bound))"
    )


def test_scorecard_counts_verdicts_per_target_and_marks_cells_without_one():
    card = build_scorecard(JUDGED, wall_s={"reference": 12.5})
    totals = {t.target: t for t in card.totals}
    assert totals["reference"].counts["pass"] == 1 and totals["reference"].counts["safe"] == 1
    assert totals["reference"].run_s == 12.5 and totals["reference"].run_time_kind == "wall"
    sdk = totals["openai-sdk"]
    assert (sdk.counts["pass"], sdk.counts["fail"], sdk.counts["n/a"]) == (1, 1, 1)
    # no measured wall time: the sum of case times, a hung case counting its ceiling
    assert sdk.run_time_kind == "cases" and sdk.run_s == pytest.approx(0.4 + 3.0)
    hung = card.cell("chat_mid_stream_stall", "openai-sdk")
    assert cell_text(hung) == "hung · bound +1"
    assert cell_text(card.cell("chat_mid_stream_stall", "reference")) == "StreamIdleTimeout"
    old = build_scorecard([without_verdict(case())])  # a report from before verdicts
    assert old.cell("chat_mid_stream_stall", "reference").verdict == "?"


def test_scorecard_writes_markdown_a_real_png_and_self_contained_html(tmp_path):
    from matplotlib.image import imread

    paths = write_scorecard(tmp_path / "out", build_scorecard(JUDGED, title="Judged"))
    md = paths["md"].read_text()
    assert "| reference | 1 | 1 | 0 | 0 |" in md
    assert (
        "| chat_mid_stream_stall | 🟡 `error(StreamIdleTimeout)` | ❌ `hung` (bound, alive_after) |"
        in md
    )
    assert "![Judged](scorecard.png)" in md
    image = imread(io.BytesIO(paths["png"].read_bytes()), format="png")
    height, width = image.shape[:2]
    assert width > 400 and height > 300
    page = paths["html"].read_text()
    assert "<style>" in page and 'class="v fail"' in page
    assert not re.search(r"""(src|href)=["'](?!data:)""", page)  # nothing fetched from outside
    embedded = re.search(r'src="data:image/png;base64,([^"]+)"', page).group(1)
    assert base64.b64decode(embedded) == paths["png"].read_bytes()


def test_json_keeps_wall_times_for_a_later_scorecard(tmp_path):
    write_json(tmp_path / "r.json", JUDGED, wall_s={"reference": 1.23456})
    assert load_wall_times(tmp_path / "r.json") == {"reference": 1.235}
    assert len(load_json(tmp_path / "r.json")) == len(JUDGED)


def test_an_executed_cut_tool_call_names_its_failed_check_in_console_and_markdown():
    executed = with_verdict(
        case(
            scenario="messages_tool_call_cut_mid_arguments",
            target="hermes",
            kind="executed_truncated_tool_call",
            expected="executed_truncated_tool_call",
        ),
        "fail",
        ("no_truncated_tool_execution",),
    )
    console = Console(record=True, width=260)
    render_console([executed], console=console)
    text = console.export_text()
    assert "executed_truncated_tool_call" in text and "no_truncated_tool_execution" in text
    md = render_markdown([executed])
    assert "`executed_truncated_tool_call`, failed checks: `no_truncated_tool_execution`" in md


def test_a_target_that_did_not_start_gets_a_cell_of_its_own_counted_as_not_run(tmp_path):
    # It showed "?" (no verdict in the report), as if the report were an old one.
    never = with_verdict(
        case(kind="did_not_start", expected="", error=None, elapsed_s=None, latency_s=None),
        "not_run",
    )
    card = build_scorecard([never])
    cell = card.cell("chat_mid_stream_stall", "reference")
    assert cell.verdict == "did_not_start" and cell_text(cell) == "did not start"
    (totals,) = card.totals
    assert totals.counts["did_not_start"] == 1 and totals.counts["?"] == 0
    assert totals.not_run == 1
    paths = write_scorecard(tmp_path / "out", card)
    assert "⛔ did not start: the target never reached the wire" in paths["md"].read_text()
    assert 'class="v did_not_start"' in paths["html"].read_text()
