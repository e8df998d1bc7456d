"""Posture in the reports: a compact note per target (console, Markdown, scorecard) and
one line per connection in ``harness explain``, unknown kept unknown."""

from __future__ import annotations

import dataclasses
import io

from rich.console import Console

from harness.case_result import CaseResult
from harness.outcome import Outcome
from harness.posture.facts import UNKNOWN, Keepalive, SocketPosture
from harness.report import render_console, render_markdown, render_timeline
from harness.report.posture import connection_lines, target_postures
from harness.report.scorecard import build_scorecard


def conn(enabled, idle=30.0, intvl=10.0, cnt=3, user=60.0, source="getsockopt") -> dict:
    return SocketPosture(
        conn=1,
        pid=7,
        local="127.0.0.1:40000",
        remote="127.0.0.1:5000",
        source=source,
        keepalive=Keepalive(enabled=enabled, idle_s=idle, interval_s=intvl, count=cnt),
        user_timeout_s=user,
        nodelay=True,
        state="ESTABLISHED",
        timer="keepalive" if enabled is True else "off",
        timer_s=29.5,
        retransmits=0,
        probes=0,
    ).to_dict()


def result(target: str, *posture: dict, kind: str = "hung") -> CaseResult:
    return CaseResult(
        scenario="chat_mid_stream_stall",
        target=target,
        expected="",
        outcome=Outcome(kind),
        matched=True,
        time_scale=0.05,
        ceiling_s=3.0,
        verdict="fail",
        failed_checks=("bounded", "dead_peer_bound"),
        posture=posture,
        dead_peer={"status": "fail", "reason": "a dead peer while waiting is never noticed"},
    )


def text_of(render, *args) -> str:
    out = io.StringIO()
    render(*args, console=Console(file=out, width=200))
    return out.getvalue()


def test_each_target_gets_one_compact_note_in_console_markdown_and_scorecard():
    results = [
        result("reference", conn(True)),
        result("openai-sdk", conn(False, idle=7200.0, intvl=75.0, cnt=9, user=None)),
    ]
    notes = target_postures(results)
    assert notes["reference"] == (
        "keepalive 30/10x3 user-timeout 60s nodelay, dead peer noticed: <= 60s"
    )
    assert notes["openai-sdk"].startswith("keepalive off user-timeout off")
    assert notes["openai-sdk"].endswith("dead peer noticed: never")
    console = text_of(render_console, results)
    assert f"posture reference: {notes['reference']}" in console
    assert f"Posture of openai-sdk: {notes['openai-sdk']}." in render_markdown(results)
    assert f"Posture of reference: {notes['reference']}." in build_scorecard(results).notes


def test_explain_shows_each_socket_beside_the_hung_client():
    r = result("openai-sdk", conn(False, user=None))
    lines = connection_lines(r)
    assert lines[0] == (
        "conn 1 127.0.0.1:40000->127.0.0.1:5000: ESTABLISHED keepalive off user-timeout off "
        "nodelay [getsockopt]"
    )
    assert lines[1].startswith("dead_peer_bound: fail: a dead peer while waiting is never")
    assert "posture: conn 1 127.0.0.1:40000->127.0.0.1:5000" in text_of(render_timeline, r)


def test_unknown_posture_is_shown_as_unknown():
    unknown = conn(UNKNOWN, idle=UNKNOWN, intvl=UNKNOWN, cnt=UNKNOWN, user=UNKNOWN, source="proc")
    note = target_postures([result("x", unknown)])["x"]
    assert "keepalive unknown" in note and note.endswith("dead peer noticed: unknown")
    assert "off" not in note
    assert target_postures([result("y")]) == {}


def test_probe_summary_of_a_target_with_no_sampled_connection_is_unknown_not_never():
    from harness.report.posture import probe_summary

    healthy = result("gateway-client", kind="ok")
    silent = result("gateway-client")
    s = probe_summary(healthy, silent, hold_s=10.0)
    assert (s["known"], s["in_flight_known"]) == (False, False)
    assert s["dead_peer_bound_s"] is None and s["posture"] == "unknown"


def test_probe_summary_of_a_failed_healthy_call_shows_the_failure_not_reuse():
    from harness.report.posture import probe_summary

    healthy = result("hermes", conn(False, user=None), kind="error_as_reply")
    # two model calls on one connection would read as reuse, had the call not failed
    healthy = dataclasses.replace(
        healthy,
        timeline=tuple(
            {
                "t": float(i),
                "conn": 1,
                "request": i,
                "kind": "request_head",
                "detail": {"path": "/v1/chat/completions"},
            }
            for i in (1, 2)
        ),
    )
    s = probe_summary(healthy, result("hermes", conn(False, user=None)), hold_s=10.0)
    assert s["reuse"] is None and s["healthy_failed"] == "error_as_reply"
    ok = dataclasses.replace(healthy, outcome=Outcome("ok"))
    assert probe_summary(ok, result("hermes"), hold_s=10.0)["reuse"] is True


def test_probe_summary_line_agrees_with_the_table_on_a_program_that_gives_up_itself():
    # keepalive off, but the silent call ended after 2 s by the client's own deadline:
    # the table's bound and the summary line both say so (issue 35: "2 s" vs "never")
    from dataclasses import replace

    from harness.cli.posture import _bound
    from harness.report.posture import probe_summary

    healthy = result("command:prog", conn(False, user=None), kind="ok")
    silent = replace(
        result("command:prog", conn(False, user=None), kind="error"),
        outcome=Outcome("error", "StreamIdleTimeout"),
        latency_s=2.0,
    )
    s = probe_summary(healthy, silent, hold_s=10.0)
    table = _bound(s["known"], s["dead_peer_bound_s"], s["dead_peer_bound_by"], s["reason"])
    assert table == "2 s (its own deadline)"
    assert s["posture"].endswith("dead peer noticed: <= 2s"), s["posture"]
