"""Report renderers over synthetic results: console, JSON + merge, JUnit, Markdown, timeline."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from rich.console import Console

from harness.leaks import Leaks
from harness.outcome import Outcome
from harness.report import (
    merge_json,
    render_console,
    render_junit,
    render_markdown,
    render_timeline,
    timeline_rows,
    write_json,
)
from harness.report.json_report import ReportError, load_json
from harness.report.timeline import relay_story
from harness.runner import CaseResult


def case(
    scenario="chat_mid_stream_stall",
    target="reference",
    kind="error",
    error="StreamIdleTimeout",
    expected="error(StreamIdleTimeout)",
    matched=True,
    **kw,
) -> CaseResult:
    fields = dict(
        scenario=scenario,
        target=target,
        expected=expected,
        outcome=Outcome(
            kind,
            error if kind == "error" else None,
            (error, "StallError") if kind == "error" else (),
        ),
        matched=matched,
        time_scale=0.05,
        ceiling_s=3.0,
        elapsed_s=0.4,
        latency_s=0.26,
        requests=3,
        max_requests=3,
        leaks=Leaks(0, 0, 0, 0),
        message="StreamIdleTimeout: no activity",
        summary="stall",
        timeline=(
            {"t": 100.1, "conn": 1, "request": 1, "kind": "accepted", "detail": {}},
            {
                "t": 100.2,
                "conn": 1,
                "request": 1,
                "kind": "fault",
                "detail": {"action": "hang", "phase": "event:3"},
            },
        ),
        client_events=((100.05, "call", "1 of 1"),),
        t_started=100.0,
    )
    fields.update(kw)
    return CaseResult(**fields)


RESULTS = [
    case(),
    case(target="openai-sdk", kind="hung", expected="hung", latency_s=None, leaks=None),
    case(
        scenario="chat_close_delimited_fin",
        target="openai-sdk",
        kind="truncated_as_complete",
        expected="error",
        matched=False,
        message="returned 7 of 40 characters",
    ),
]


def test_console_table_shows_expected_actual_and_the_mismatch():
    console = Console(record=True, width=220)
    render_console(RESULTS, console=console)
    text = console.export_text()
    assert "chat_mid_stream_stall" in text and "error(StreamIdleTimeout)" in text
    assert "hung" in text and ">3.00 s" in text
    assert "truncated_as_complete ✗" in text
    assert "2/3 cases as expected, 1 mismatched" in text
    assert "MISMATCH chat_close_delimited_fin [openai-sdk]" in text


def test_json_round_trips_and_merges_shards(tmp_path):
    write_json(tmp_path / "a.json", RESULTS[:2], shard="1/2")
    write_json(tmp_path / "b.json", RESULTS[2:], shard="2/2")
    data = json.loads((tmp_path / "a.json").read_text())
    assert data["format"] == 1 and data["shard"] == "1/2" and data["summary"]["cases"] == 2
    assert load_json(tmp_path / "a.json") == RESULTS[:2]
    merged = merge_json([tmp_path / "a.json", tmp_path / "b.json"])
    assert sorted((r.scenario, r.target) for r in merged) == sorted(
        (r.scenario, r.target) for r in RESULTS
    )


def test_merge_refuses_a_case_present_in_two_shards_and_bad_files(tmp_path):
    write_json(tmp_path / "a.json", RESULTS[:1])
    write_json(tmp_path / "b.json", RESULTS[:1])
    with pytest.raises(ReportError, match="also in another shard"):
        merge_json([tmp_path / "a.json", tmp_path / "b.json"])
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ReportError, match="not a harness JSON report"):
        load_json(tmp_path / "bad.json")
    with pytest.raises(ReportError, match="no such file"):
        load_json(tmp_path / "missing.json")


def test_junit_has_a_suite_per_target_and_a_failure_per_mismatch():
    root = ET.fromstring(render_junit(RESULTS).split("\n", 1)[1])
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"transport.reference", "transport.openai-sdk"}
    assert suites["transport.openai-sdk"].get("failures") == "1"
    failure = next(root.iter("failure"))
    assert failure.get("message").startswith("expected error, got truncated_as_complete")


def test_markdown_table_and_mismatch_list():
    md = render_markdown(RESULTS)
    assert "❌ 2/3 cases as expected" in md
    assert (
        "| chat_mid_stream_stall | `error(StreamIdleTimeout)` | `error(StreamIdleTimeout)` | ❌ fail "
        "| 260 ms |" in md
    )
    assert "### Mismatches" in md and "**chat_close_delimited_fin** [openai-sdk]" in md


def test_timeline_merges_server_and_client_events_in_time_order_with_the_fault():
    rows = timeline_rows(RESULTS[0])
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)
    assert ("server", "fault") in [(side, kind) for _, side, kind, _ in rows]
    assert rows[0][1:3] == ("client", "call_started")
    console = Console(record=True, width=200)
    render_timeline(RESULTS[0], console=console)
    assert "⚡ fault" in console.export_text()


def test_timeline_marks_the_ceiling_of_a_hung_case_and_folds_repeats():
    events = tuple(
        {"t": 100.0 + i / 1000, "conn": 1, "request": 1, "kind": "event_sent", "detail": {"n": i}}
        for i in range(50)
    )
    rows = timeline_rows(case(kind="hung", timeline=events, client_events=()))
    assert rows[-1][1:3] == ("runner", "ceiling")
    assert len(rows) < 10 and any(kind == "…" for _, _, kind, _ in rows)


def test_not_applicable_case_reads_as_such_in_every_report():
    na = case(
        scenario="messages_healthy_stream",
        target="openai-sdk",
        kind="not_applicable",
        expected="not_applicable",
        requests=None,
        max_requests=None,
        leaks=None,
        latency_s=None,
        message="openai-sdk does not speak api=messages (speaks chat, responses)",
    )
    console = Console(record=True, width=200)
    render_console([RESULTS[0], na], console=console)
    text = console.export_text()
    assert "n/a ✓" in text and "1 not applicable" in text
    suite = ET.fromstring(render_junit([na]).split("\n", 1)[1]).find("testsuite")
    assert suite.get("skipped") == "1" and suite.get("failures") == "0"
    assert suite.find("testcase/skipped").get("message").startswith("not applicable")
    assert "1 not applicable" in render_markdown([na])


def relay_event(t, kind, *, conn=1, leg="relay", states=None):
    event = {"t": t, "source": "relay", "conn": conn, "leg": leg, "kind": kind}
    if states:
        event["states"] = {k: f"{v} q=0" for k, v in states.items()}
    return event


def test_relay_story_puts_the_upstream_close_wait_and_the_silent_client_leg_together():
    open_legs = {"client": "ESTABLISHED", "relay_client": "ESTABLISHED"}
    timeline = (
        relay_event(100.010, "bytes_down", leg="client"),
        relay_event(100.020, "upstream_fin", leg="upstream"),
        relay_event(100.021, "swallowed", leg="client"),
        relay_event(
            100.030,
            "tcp",
            states={**open_legs, "relay_upstream": "CLOSE_WAIT", "upstream": "FIN_WAIT2"},
        ),
        relay_event(100.520, "client_fin", leg="client"),
    )
    result = case(timeline=timeline)
    (line,) = relay_story(result)
    assert "provider FIN at 20.0 ms" in line
    assert "relay_upstream in CLOSE_WAIT (seen at 30.0 ms)" in line
    assert "client leg ESTABLISHED and silent (no byte sent to the client) for 499.0 ms" in line
    assert "until the client closed it (client_fin) at 520.0 ms" in line
    console = Console(record=True, width=300)
    render_timeline(result, console=console)
    assert "CLOSE_WAIT on relay_upstream" in console.export_text()
    assert relay_story(RESULTS[0]) == []  # no relay: no story


def test_relay_story_says_when_the_runner_killed_a_hung_target():
    timeline = (
        relay_event(100.020, "upstream_fin", leg="upstream"),
        relay_event(100.021, "swallowed", leg="client"),
        relay_event(103.100, "client_fin", leg="client"),
    )
    (line,) = relay_story(case(kind="hung", timeline=timeline, ceiling_s=3.0))
    assert "until the runner killed the hung target (client_fin at 3100.0 ms)" in line
    assert "state not sampled" in line


def test_time_scale_notes_tell_a_scenarios_floor_from_a_targets():
    results = [
        case(),
        case(scenario="chat_healthy_stream", kind="ok", expected="ok"),
        case(scenario="relay_pass_healthy", kind="ok", expected="ok", time_scale=0.5),
        case(target="hermes", kind="ok", expected="ok", time_scale=0.2),
    ]
    console = Console(record=True, width=300)
    render_console(results, console=console)
    text = " ".join(console.export_text().split())
    scenario_note = text.split("except scenarios with a min_time_scale floor", 1)[1]
    scenario_note = scenario_note.split("targets with a time-scale floor", 1)[0]
    assert "relay_pass_healthy (0.5)" in scenario_note
    assert "(0.2)" not in scenario_note  # hermes's case is at its target's floor
    assert (
        "targets with a time-scale floor of their own (every case at least that): hermes (0.2)"
        in text
    )


def test_explain_shows_each_requests_shape_and_lineage():
    def shape(t, request, **detail):
        return {"t": t, "conn": 1, "request": request, "kind": "request_shape", "detail": detail}

    result = case(
        kind="ok",
        error=None,
        expected="ok",
        timeline=(
            shape(
                100.1,
                1,
                stream=True,
                tools=("search",),
                roles=("user",),
                messages=1,
                lineage="new",
                of=None,
                call=1,
                appended=(),
            ),
            shape(
                100.2,
                2,
                stream=True,
                tools=("search",),
                roles=("user",),
                messages=1,
                lineage="retry",
                of=1,
                call=1,
                appended=(),
            ),
            shape(
                100.3,
                3,
                stream=False,
                tools=(),
                roles=("user", "assistant", "tool"),
                messages=3,
                lineage="continuation",
                of=2,
                call=3,
                appended=("assistant:tool_call", "tool:tool_result"),
            ),
        ),
    )
    console = Console(record=True, width=200)
    render_timeline(result, console=console)
    text = console.export_text()
    assert "req 1: stream, tools search, 1 message(s) [user]: new conversation" in text
    assert "req 2: stream, tools search, 1 message(s) [user]: retry of req 1" in text
    assert (
        "req 3: no stream, tools none, 3 message(s) [user assistant tool]: continuation of "
        "req 2 (+ assistant:tool_call, tool:tool_result)" in text
    )


def test_explain_names_the_system_turns_a_continuation_replaced():
    shape = {
        "t": 100.2,
        "conn": 1,
        "request": 2,
        "kind": "request_shape",
        "detail": {
            "stream": False,
            "tools": (),
            "roles": ("system", "user", "assistant", "user"),
            "messages": 4,
            "lineage": "continuation",
            "of": 1,
            "call": 2,
            "appended": ("assistant:text", "user:text"),
            "replaced": ("system:text",),
        },
    }
    console = Console(record=True, width=200)
    render_timeline(case(kind="ok", error=None, expected="ok", timeline=(shape,)), console=console)
    assert (
        "continuation of req 1 (+ assistant:text, user:text; replaced its system:text)"
        in console.export_text()
    )


def test_a_target_that_did_not_start_gets_no_time_axis():
    result = case(kind="did_not_start", error=None, expected="ok", message="ImportError: no x")
    console = Console(record=True, width=200)
    render_timeline(result, console=console)
    text = console.export_text()
    assert "did not start" in text and "ImportError: no x" in text
    assert "request_head" not in text  # the timeline's events are not drawn


def test_explain_names_the_job_call_each_request_belongs_to():
    def shape(t, request, lineage, of):
        detail = {"stream": True, "tools": (), "roles": ("user",), "messages": 1}
        detail.update(lineage=lineage, of=of, call=1, appended=(), replaced=())
        return {"t": t, "conn": 1, "request": request, "kind": "request_shape", "detail": detail}

    result = case(
        kind="ok",
        error=None,
        expected="ok",
        timeline=(shape(100.1, 1, "new", None), shape(100.5, 2, "retry", 1)),
        client_events=((100.0, "call", "1 of 2: api=chat"), (100.4, "call", "2 of 2: api=chat")),
    )
    console = Console(record=True, width=200)
    render_timeline(result, console=console)
    text = console.export_text()
    assert (
        "req 1: stream, tools none, 1 message(s) [user]: new conversation; job call 1 of 2" in text
    )
    # the job's second call sends the same conversation: a retry on the wire, its own call
    assert "retry of req 1 (model call req 1); job call 2 of 2" in text
