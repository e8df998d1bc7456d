"""``harness report diff``: quiet on a build's own variance, the cause under each change,
and ``harness report noise`` over several runs of one build.

The real reports in ``diff_runs/`` are small runs trimmed of their timelines:
``mutant_*.json`` are ``harness run -t mutant:none`` (``mutant:closed-transport-reuse``,
``mutant:no-keepalive``) ``sequential_calls_across_rebuild chat_healthy_stream
chat_rst_mid_stream --json`` (time scale 0.05, 2026-12-04); ``hermes_same_build_*.json``
are four cases of two whole-catalog runs of one hermes-agent 0.19.0 build (``harness run -t
hermes -j 2 --json``, 2026-12-04, load ~8 on 2 cores).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from harness.cli import main
from harness.outcome import Outcome
from harness.report import write_json
from harness.report.diff import diff_files, diff_reports, load_report
from harness.report.diff_markdown import render_diff_markdown
from harness.runner import CaseResult

pytestmark = pytest.mark.timeout(30)

RUNS = Path(__file__).parent / "diff_runs"
CLOSED = "RuntimeError: Cannot send a request, as the client has been closed."


def case(scenario, *, kind="ok", verdict="pass", checks=(), **kw):
    fields = dict(
        scenario=scenario,
        target="hermes",
        expected="ok",
        outcome=Outcome(kind, None, ()),
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


def write(tmp_path, name, results):
    path = tmp_path / name
    write_json(path, results)
    return path


# ------------------------------------------------------------------ real runs


def test_closed_client_reuse_names_its_root_cause_in_one_summary_line(tmp_path, capsys):
    base, head = RUNS / "mutant_none.json", RUNS / "mutant_closed_transport_reuse.json"
    out = tmp_path / "diff.json"
    assert main(["report", "diff", str(base), str(head), "--json", str(out)]) == 1
    text = capsys.readouterr().out
    assert f"- 2 cases: new {CLOSED}" in text
    assert "`sequential_calls_across_rebuild`: new cause: " + CLOSED in text
    # the evidence of the newly failed check, as the judge wrote it
    assert "`accounting`: claims 3 attempts, 2 reached the wire" in text
    doc = json.loads(out.read_text())
    assert doc["causes"][0] == {
        "cause": f"new {CLOSED}",
        "cases": 2,
        "scenarios": ["chat_rst_mid_stream", "sequential_calls_across_rebuild"],
    }
    rebuilt = next(r for r in doc["regressions"] if r["scenario"].startswith("sequential"))
    assert rebuilt["underneath"]["root_cause"] == {"base": None, "head": CLOSED}


def test_a_stack_without_keepalive_shows_the_socket_options_that_went(capsys):
    base, head = RUNS / "mutant_none.json", RUNS / "mutant_no_keepalive.json"
    assert main(["report", "diff", str(base), str(head)]) == 1
    text = capsys.readouterr().out
    assert "sockets: keepalive 30/10x3 user-timeout 60 → keepalive off user-timeout off" in text


def test_two_runs_of_one_hermes_build_exit_0_with_the_swap_as_an_accepted_variation(capsys):
    base, head = RUNS / "hermes_same_build_1.json", RUNS / "hermes_same_build_2.json"
    diff = diff_files(base, head)
    groups = {d.scenario: d.group for d in diff.deltas}
    # executed_truncated_tool_call -> wrong_content: both in hermes's expectation
    assert groups["messages_tool_call_swapped_events"] == "variation"
    # nonstream_healthy: 1 -> 2 requests (hermes re-asked under load): noise, not listed
    assert "nonstream_healthy" not in groups
    assert groups.get("chat_tool_call_duplicated_event") == "change"  # 2 -> 5 requests
    assert not diff.fails() and diff.counts()["regression"] == 0
    assert main(["report", "diff", str(base), str(head)]) == 0
    text = capsys.readouterr().out
    assert "### Accepted variations" in text
    assert "both accepted by `wrong_content\\|executed_truncated_tool_call`" in text


# ------------------------------------------------------------------ hand-made


def test_a_move_between_accepted_outcomes_exits_0_and_one_outside_exits_1(tmp_path):
    expected = "ok|false_kill"
    base = [case("slow", expected=expected)]
    moved = [
        case(
            "slow",
            expected=expected,
            kind="false_kill",
            verdict="fail",
            checks=["no_false_kill"],
            requests=2,
        )
    ]
    b, h = write(tmp_path, "b.json", base), write(tmp_path, "h.json", moved)
    (delta,) = diff_files(b, h).deltas
    assert delta.group == "variation" and "both accepted by `ok|false_kill`" in delta.what
    assert main(["report", "diff", str(b), str(h)]) == 0
    # the same move, not accepted by the head's expectation: a regression
    outside = [replace(moved[0], outcome=Outcome("hung", None, ()), matched=False)]
    h2 = write(tmp_path, "h2.json", outside)
    assert diff_files(b, h2).deltas[0].group == "regression"
    assert main(["report", "diff", str(b), str(h2)]) == 1


def test_an_accepted_move_names_the_checks_the_outcome_does_not_decide(tmp_path):
    """hermes leaves two sockets open on its executed-tool path and none on its
    wrong_content path: the move is its own variance, and the leak is named with it."""
    expected = "wrong_content|executed_truncated_tool_call"
    base = [
        case(
            "swap", expected=expected, kind="wrong_content", verdict="fail", checks=["honest_reply"]
        )
    ]
    head = [
        case(
            "swap",
            expected=expected,
            kind="executed_truncated_tool_call",
            verdict="fail",
            checks=["no_truncated_tool_execution", "no_leaks"],
            evidence={"no_leaks": "2 thread(s)/socket(s) left open after the call"},
        )
    ]
    b, h = write(tmp_path, "b.json", base), write(tmp_path, "h.json", head)
    (delta,) = diff_files(b, h).deltas
    assert delta.group == "variation"
    assert delta.what[-1] == (
        "both accepted by `wrong_content|executed_truncated_tool_call`; "
        "with `no_leaks` (not decided by the outcome)"
    )
    assert ("no_leaks", "2 thread(s)/socket(s) left open after the call") in (
        delta.underneath.evidence
    )
    assert main(["report", "diff", str(b), str(h)]) == 0


def test_a_check_the_target_s_overlay_records_as_varying_is_a_variation_alone(tmp_path):
    """hermes's abandoned Codex worker leaks its socket in some runs of one build (the
    shipped hermes overlay's [varies]): that flip alone is quiet; with anything else
    changed, or another check, or on another target, it is not."""
    inband = "responses_inband_overloaded_then_success"
    leak = dict(verdict="fail", checks=["no_leaks"])
    b = write(tmp_path, "b.json", [case(inband), case("other")])
    h = write(tmp_path, "h.json", [case(inband, **leak), case("other", **leak)])
    deltas = {d.scenario: d for d in diff_files(b, h).deltas}
    assert deltas[inband].group == "variation"
    assert "`no_leaks` varies (3 of 18 runs" in deltas[inband].what[-1]
    assert deltas["other"].group == "regression"  # nothing recorded for that case
    # the reverse flip is the same variation
    assert {d.group for d in diff_files(h, b).deltas if d.scenario == inband} == {"variation"}
    # a flip that came with another change is not hidden
    alone = write(tmp_path, "a.json", [case(inband)])
    moved = write(tmp_path, "m.json", [case(inband, requests=5, **leak)])
    assert diff_files(alone, moved).deltas[0].group == "regression"
    two = write(tmp_path, "t.json", [case(inband, verdict="fail", checks=["no_leaks", "bounded"])])
    assert diff_files(alone, two).deltas[0].group == "regression"
    other_target = [case(inband, target="reference")]
    ob = write(tmp_path, "ob.json", other_target)
    oh = write(tmp_path, "oh.json", [case(inband, target="reference", **leak)])
    assert diff_files(ob, oh).deltas[0].group == "regression"
    assert main(["report", "diff", str(b), str(h)]) == 1  # "other" still regressed


def test_repeat_rates_are_shown_on_an_accepted_variation(tmp_path):
    expected = "ok|false_kill"
    base = [case("slow", expected=expected)]
    head = [
        case(
            "slow",
            expected=expected,
            kind="false_kill",
            verdict="fail",
            checks=["no_false_kill"],
            repeats={"runs": 5, "matched": 5, "outcomes": {"ok": 3, "false_kill": 2}},
        )
    ]
    diff = diff_files(write(tmp_path, "b.json", base), write(tmp_path, "h.json", head))
    assert diff.deltas[0].what[-1] == "both accepted by `ok|false_kill` (3/5 ok, 2/5 false_kill)"


def test_request_counts_within_noise_are_quiet_and_beyond_it_a_change(tmp_path):
    base = [case("a", requests=4), case("b", requests=2), case("c", requests=1)]
    head = [
        case("a", requests=5),  # one more: hermes's own retry under load
        case("b", requests=5),
        case("c", requests=2, kind="error", verdict="safe", expected="ok|error"),
    ]
    b, h = write(tmp_path, "b.json", base), write(tmp_path, "h.json", head)
    groups = {d.scenario: d for d in diff_files(b, h).deltas}
    assert set(groups) == {"b", "c"}
    assert groups["b"].group == "change" and "requests 2 → 5" in groups["b"].what
    assert "requests 1 → 2" in groups["c"].what  # shown with the outcome that moved
    strict = diff_files(b, h, requests_noise=0)
    assert {d.scenario for d in strict.deltas} == {"a", "b", "c"}
    assert main(["report", "diff", str(b), str(h), "--requests-noise", "-1"]) == 2


def test_a_transport_setting_that_differs_is_a_change_with_its_cause_line(tmp_path):
    stock = {"timeout": {"connect": 15.0, "read": None, "write": 15.0, "pool": 10.0}}
    dropped = {"timeout": {"connect": 5.0, "read": 600.0, "write": 600.0, "pool": 600.0}}
    base = [case(f"s{i}", details={"transport": stock}) for i in range(3)]
    head = [case(f"s{i}", details={"transport": dropped}) for i in range(3)]
    diff = diff_files(write(tmp_path, "b.json", base), write(tmp_path, "h.json", head))
    assert [d.group for d in diff.deltas] == ["change"] * 3
    assert diff.deltas[0].what == ("transport settings",)
    lines = [c.line() for c in diff.causes]
    assert "3 cases: transport timeout.read: none → 600.0" in lines
    assert "3 cases: transport timeout.connect: 15.0 → 5.0" in lines
    text = render_diff_markdown(diff)
    assert "- 3 cases: transport timeout.read: none → 600.0" in text
    assert "`s0`: transport timeout.connect: 15.0 → 5.0; transport timeout.pool" in text


def test_root_causes_differing_only_in_ports_or_cut_values_are_the_same(tmp_path):
    def raised(message):
        chain = ({"type": "Boom", "message": message, "via": "raised"},)
        return case("x", kind="error", verdict="fail", checks=["complete_reply"], chain=chain)

    base = [raised("no route to 127.0.0.1:43319 for {'path': 'a'}")]
    same = [replace(raised("no route to 127.0.0.1:51002 for {'path': 'zz'}"), requests=4)]
    other = [replace(raised("refused by 127.0.0.1:51002"), requests=4)]
    b = write(tmp_path, "b.json", base)
    assert diff_files(b, write(tmp_path, "s.json", same)).deltas[0].underneath.root is None
    root = diff_files(b, write(tmp_path, "o.json", other)).deltas[0].underneath.root
    assert root == (
        "Boom: no route to 127.0.0.1:43319 for {'path': 'a'}",
        "Boom: refused by 127.0.0.1:51002",
    )


def test_reports_without_expectations_chains_or_details_still_compare(tmp_path):
    """An older report (before expected/matched, chain, details.transport): no variation
    is claimed, no cause invented."""
    base = write(tmp_path, "b.json", [case("a", expected="ok|false_kill")])
    doc = load_report(base)
    head = json.loads(json.dumps(doc))
    for d in (doc, head):
        for entry in d["results"]:
            for key in ("expected", "matched", "chain", "details", "evidence", "posture"):
                entry.pop(key, None)
    head["results"][0].update(actual="false_kill", verdict="fail", failed_checks=["no_false_kill"])
    (delta,) = diff_reports(doc, head).deltas
    assert delta.group == "regression" and delta.underneath.lines() == []


# ------------------------------------------------------------------ noise over pairs


def test_noise_counts_quiet_pairs_and_names_what_made_one_loud(tmp_path, capsys):
    runs = [
        write(tmp_path, "r1.json", [case("a"), case("b", requests=3)]),
        write(tmp_path, "r2.json", [case("a"), case("b", requests=4)]),
        write(
            tmp_path,
            "r3.json",
            [
                case("a", kind="hung", verdict="fail", checks=["bounded"], matched=False),
                case("b", requests=3),
            ],
        ),
    ]
    assert main(["report", "noise", str(runs[0]), str(runs[1])]) == 0
    assert "1 of 1 pairs quiet" in capsys.readouterr().out
    out = tmp_path / "noise.json"
    assert main(["report", "noise", *map(str, runs), "--json", str(out)]) == 1
    text = capsys.readouterr().out
    assert "1 of 2 pairs quiet" in text
    assert "hermes/a: regression in 1 of 2 pairs" in text
    doc = json.loads(out.read_text())
    assert doc["pairs"] == 2 and doc["quiet"] == 1 and doc["cases"]["regression"] == {"hermes/a": 1}


def test_noise_needs_two_reports(tmp_path, capsys):
    one = write(tmp_path, "r1.json", [case("a")])
    assert main(["report", "noise", str(one)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "at least two reports" in err[0]


def test_the_summary_folds_causes_that_differ_only_in_numbers():
    from harness.report.diff_causes import Underneath, summarise

    cut = "RemoteProtocolError: peer closed connection (received {} bytes, expected {})"
    changed = [
        ("a", Underneath(root=(cut.format(842, 2280), None))),
        ("b", Underneath(root=(cut.format(17556, 28281), None))),
        ("c", Underneath(root=(None, "RateLimitError: Error code: 429"))),
    ]
    lines = [c.line() for c in summarise(changed)]
    assert lines == [
        f"2 cases: gone {cut.format(842, 2280)}",
        "1 case: new RateLimitError: Error code: 429",
    ]


def test_a_case_flaky_on_both_sides_with_the_same_verdicts_is_a_variation(tmp_path):
    spread = {"runs": 3, "matched": 3, "outcomes": {"ok": 3}}
    base = [case("leaky", repeats={**spread, "verdicts": {"pass": 2, "fail": 1}})]
    head = [
        case(
            "leaky",
            verdict="fail",
            checks=["no_leaks"],
            repeats={**spread, "verdicts": {"fail": 2, "pass": 1}},
        )
    ]
    b, h = write(tmp_path, "b.json", base), write(tmp_path, "h.json", head)
    (delta,) = diff_files(b, h).deltas
    assert delta.group == "variation"
    assert delta.what[-1] == "flaky on both sides: pass 2/3, fail 1/3 → fail 2/3, pass 1/3"
    # flaky on one side only: the newly failed check is a regression
    steady = [replace(head[0], repeats=None)]
    assert diff_files(b, write(tmp_path, "s.json", steady)).deltas[0].group == "regression"
