"""Outcome classification, from synthetic reports and timelines (no sockets)."""

from __future__ import annotations

import json

import pytest

from harness.outcome import (
    EXECUTED_TRUNCATED,
    Expected,
    Outcome,
    classify,
    detection_latency,
    fault_onset,
)
from harness.replies import render_tool_call, tool_arguments
from harness.targets.base import ExecutedTruncatedToolCall
from harness.targets.clients.openai_agents import _raise_if_cut
from harness.targets.hermes.in_venv.hermes_driver import tool as hermes_tool

FULL = "the stream keeps flowing."


def returned(text, **extra):
    return {"status": "returned", "text": text, **extra}


def raised(error, mro, **extra):
    return {"status": "raised", "error": error, "mro": list(mro), "message": "boom", **extra}


def test_no_report_means_hung_at_the_ceiling():
    assert classify(None, expected_text=FULL, alive=False).kind == "hung"


def test_full_reply_is_ok_and_a_prefix_is_truncated_as_complete():
    assert classify(returned(FULL), expected_text=FULL, alive=True).kind == "ok"
    out = classify(returned(FULL[:7]), expected_text=FULL, alive=False)
    assert out.kind == "truncated_as_complete"
    assert "7 of 25" in out.detail


def test_empty_reply_is_truncated_as_complete():
    assert classify(returned(""), expected_text=FULL, alive=False).kind == "truncated_as_complete"


def test_different_text_is_wrong_content_with_the_first_difference():
    out = classify(returned("the stream keeps FLOWING."), expected_text=FULL, alive=True)
    assert out.kind == "wrong_content"
    assert "character 17" in out.detail


SENT = render_tool_call("record_note", '{"path": "notes/a.txt", "text": "keeps flowing"}')


@pytest.mark.parametrize(
    ("arguments", "kind"),
    [
        # a fragment replayed across a string boundary: the key twice, the last one kept
        ('{"path": "notes/a.txt", "text": "t", "text": "keeps flowing"}', "ok"),
        ('{"text":"keeps flowing","path":"notes/a.txt"}', "ok"),  # re-serialised
        # replayed inside a key: not JSON, the call is corrupt
        ('{"path": "notes/a.txt", "texttext": "keeps flowing"}', "wrong_content"),
        ('{"path": "notes/a.txt", "text", "text": "keeps flowing"}', "wrong_content"),
        ('{"path": "notes/a.txt", "text": "keeps keeps flowing"}', "wrong_content"),
        ('{"path": "notes/a.txt", "text": "keeps flowing", "extra": 1}', "wrong_content"),
        ('{"path": "notes/a.txt", "text": "kee', "truncated_as_complete"),
        ('["notes/a.txt", "keeps flowing"]', "wrong_content"),
    ],
)
def test_tool_call_arguments_are_judged_as_the_object_a_tool_runs_with(arguments, kind):
    """smolagents hands on the parsed arguments: a repeated key that its JSON reader folds
    into the sent call is that call, not wrong content (the smolagents audit's W)."""
    text = render_tool_call("record_note", arguments)
    assert classify(returned(text), expected_text=SENT, alive=False).kind == kind


def test_a_call_of_another_tool_or_other_text_before_it_is_wrong_content():
    other = render_tool_call("other", '{"path": "notes/a.txt", "text": "keeps flowing"}')
    assert classify(returned(other), expected_text=SENT, alive=False).kind == "wrong_content"
    assert (
        classify(returned("so: " + SENT), expected_text=SENT, alive=False).kind == "wrong_content"
    )
    two = SENT + SENT
    assert classify(returned(SENT), expected_text=two, alive=False).kind == "truncated_as_complete"


def test_sentinel_in_the_reply_is_error_as_reply_even_when_it_is_the_expected_text():
    text = "API call failed after 3 retries: Connection error."
    out = classify(
        returned(text), expected_text=text, alive=True, find_sentinel=lambda t: "api_call_failed"
    )
    assert out.kind == "error_as_reply"
    assert "api_call_failed" in out.detail


def test_error_keeps_class_and_mro_and_matches_a_base_class():
    out = classify(
        raised("StreamIdleTimeout", ["StreamIdleTimeout", "StallError", "HarnessError"]),
        expected_text=FULL,
        alive=False,
    )
    assert out.label == "error(StreamIdleTimeout)"
    assert Expected.parse("error:StallError").matches(out)
    assert Expected.parse("error(StreamIdleTimeout)").matches(out)
    assert Expected.parse("error").matches(out)
    assert not Expected.parse("error:PeerReset").matches(out)
    assert not Expected.parse("ok").matches(out)


def test_deadline_firing_on_a_live_stream_is_a_false_kill():
    report = raised("HardCeiling", ["HardCeiling", "StallError"], deadline="hard_ceiling_s")
    assert classify(report, expected_text=FULL, alive=True).kind == "false_kill"
    assert classify(report, expected_text=FULL, alive=False).kind == "error"


def test_non_deadline_error_on_a_live_stream_is_an_error_not_a_false_kill():
    report = raised("MalformedEvent", ["MalformedEvent", "ProtocolError"])
    assert classify(report, expected_text=FULL, alive=True).kind == "error"


def test_sequential_calls_are_judged_call_by_call():
    out = classify(returned(FULL[:5], texts=[FULL, FULL[:5]]), expected_text=FULL, alive=True)
    assert out.kind == "truncated_as_complete"
    assert out.detail.startswith("call 2 of 2")
    assert classify(returned(FULL, texts=[FULL, FULL]), expected_text=FULL, alive=True).kind == "ok"


def test_skipped_and_crashed_reports():
    assert (
        classify({"status": "skipped", "message": "no"}, expected_text=None, alive=True).kind
        == "skipped"
    )
    crashed = classify({"status": "crashed", "message": "died"}, expected_text=None, alive=False)
    assert crashed.label == "error(TargetCrashed)"


def test_not_applicable_report_is_its_own_outcome_and_matches_only_its_expectation():
    out = classify(
        {"status": "not_applicable", "message": "no api"}, expected_text=None, alive=True
    )
    assert out.kind == "not_applicable" and out.detail == "no api"
    assert Expected.parse("not_applicable").matches(out)
    assert not Expected.parse("skipped").matches(out)
    assert not Expected.parse("ok").matches(out)


@pytest.mark.parametrize(
    "mro", [(EXECUTED_TRUNCATED, "Exception"), ("AgentToolError", EXECUTED_TRUNCATED)]
)
@pytest.mark.parametrize("alive", [True, False])
def test_a_raised_executed_truncated_tool_call_is_its_own_outcome(mro, alive):
    report = raised(mro[0], mro, message="ran record_note with {}", deadline=None)
    out = classify(report, expected_text=FULL, alive=alive)
    assert out.kind == "executed_truncated_tool_call" and out.detail == "ran record_note with {}"
    assert out.label == "executed_truncated_tool_call"
    assert Expected.parse("executed_truncated_tool_call").matches(out)
    assert not Expected.parse("error").matches(out)
    assert Outcome.from_dict(out.to_dict()) == out


def test_the_old_error_spelling_of_the_outcome_is_rejected_naming_the_new_one():
    with pytest.raises(ValueError, match="executed_truncated_tool_call.*allowed"):
        Expected.parse(f"error:{EXECUTED_TRUNCATED}")


def test_the_hermes_tool_reports_the_name_classification_maps():
    """hermes_tool runs inside hermes's venv without harness: its copy of the name."""
    assert hermes_tool.EXECUTED_TRUNCATED_MRO[0] == EXECUTED_TRUNCATED
    assert ExecutedTruncatedToolCall.__name__ == EXECUTED_TRUNCATED


def test_openai_agents_raises_it_for_a_recorded_call_with_cut_arguments():
    full = json.loads(tool_arguments("s", 0, words=3))
    _raise_if_cut([full])  # complete arguments: nothing to report
    with pytest.raises(ExecutedTruncatedToolCall, match="notes/ca"):
        _raise_if_cut([full, {"path": "notes/ca", "text": ""}])


def test_unknown_status_is_rejected():
    with pytest.raises(ValueError, match="returned, raised"):
        classify({"status": "weird"}, expected_text=None, alive=True)


@pytest.mark.parametrize("text", ["stuck", "error:", "error(1x)", ""])
def test_expected_rejects_unknown_outcomes(text):
    with pytest.raises(ValueError, match="allowed"):
        Expected.parse(text)


def test_outcome_round_trips_through_dict():
    out = Outcome("error", "PeerReset", ("PeerReset", "TransportError"), "reset")
    assert Outcome.from_dict(out.to_dict()) == out


def test_detection_latency_uses_the_last_fault_before_the_error():
    timeline = [
        {"t": 10.0, "kind": "accepted"},
        {"t": 10.5, "kind": "fault"},
        {"t": 11.5, "kind": "fault"},
        {"t": 13.0, "kind": "fault"},  # after the error: a request the client abandoned
    ]
    assert fault_onset(timeline) == 10.5
    assert detection_latency(timeline, 12.0) == pytest.approx(0.5)
    assert detection_latency(timeline, None) is None
    assert detection_latency([{"t": 1.0, "kind": "accepted"}], 2.0) is None


def test_expected_error_alternatives_match_either_class():
    expected = Expected.parse("error:RemoteProtocolError|APIConnectionError")
    assert expected.errors == ("RemoteProtocolError", "APIConnectionError")
    wrapped = Outcome("error", "APIConnectionError", ("APIConnectionError", "APIError"))
    bare = Outcome("error", "RemoteProtocolError", ("RemoteProtocolError", "ProtocolError"))
    assert expected.matches(wrapped) and expected.matches(bare)
    assert not expected.matches(Outcome("error", "ReadError", ("ReadError",)))
    assert str(expected) == "error(RemoteProtocolError|APIConnectionError)"


def test_outcome_alternatives_match_any_of_them() -> None:
    expected = Expected.parse("ok|false_kill")
    assert expected.matches(Outcome("ok"))
    assert expected.matches(Outcome("false_kill", "StaleCall"))
    assert not expected.matches(Outcome("hung"))
    assert str(expected) == "ok|false_kill"
    mixed = Expected.parse("wrong_content|error:PeerClosed")
    assert mixed.matches(Outcome("error", "PeerClosed", ("PeerClosed",)))
    assert not mixed.matches(Outcome("error", "PeerReset", ("PeerReset",)))


def test_an_unknown_alternative_is_rejected_naming_it() -> None:
    with pytest.raises(ValueError, match="'bogus' is not an outcome"):
        Expected.parse("ok|bogus")


def test_a_fault_set_up_before_the_call_counts_from_the_case_own_clock():
    # A toxic added with the network path 42 s before the child said "started" (issue 24:
    # 42.35 s reported for a 0.39 s case): its onset is the last request start.
    timeline = [{"t": 100.0, "kind": "toxic_added"}]
    got = detection_latency(timeline, 142.74, started_t=142.35, request_starts=[142.40, 142.60])
    assert got == pytest.approx(0.14)
    assert detection_latency(timeline, 142.74, started_t=142.35) == pytest.approx(0.39)
    # a fault that fired during the call keeps its own onset
    during = [*timeline, {"t": 142.70, "kind": "fault"}]
    assert detection_latency(during, 142.74, started_t=142.35) == pytest.approx(0.04)
