"""A finding's group: one bug is one finding."""

from __future__ import annotations

import pytest

from harness.case_result import CaseResult
from harness.fuzz.findings import ANY_OUTCOME, differs_key, group_key, is_difference
from harness.outcome import Outcome

pytestmark = pytest.mark.timeout(30)


def result(kind: str, *checks: str, error: str | None = None) -> CaseResult:
    return CaseResult(
        scenario="s",
        target="t",
        expected=None,
        outcome=Outcome(kind, error, (error,) if error else ()),
        matched=None,
        time_scale=0.05,
        ceiling_s=3.0,
        verdict="fail" if checks else "pass",
        failed_checks=checks,
    )


def test_a_check_the_outcome_does_not_decide_is_one_group_whatever_the_outcome():
    # no keepalive on the model-call socket: the same bug whether the call raised,
    # returned, or hung
    raised = group_key(result("error", "dead_peer_bound", error="RemoteProtocolError"))
    returned = group_key(result("ok", "dead_peer_bound"))
    assert raised == returned == (ANY_OUTCOME, ("dead_peer_bound",))
    # a hang that also fails the budget is another set of checks: another group
    assert group_key(result("hung", "dead_peer_bound", "bounded")) == (
        ANY_OUTCOME,
        ("bounded", "dead_peer_bound"),
    )


def test_a_check_the_outcome_decides_keeps_the_outcome_in_the_group():
    cut = group_key(result("truncated_as_complete", "honest_reply"))
    wrong = group_key(result("wrong_content", "honest_reply"))
    assert cut == ("truncated_as_complete", ("honest_reply",))
    assert cut != wrong


def test_a_difference_is_its_own_group_and_equal_kinds_are_none():
    mine, theirs = result("error", error="TruncatedStream"), result("truncated_as_complete")
    key = differs_key(mine, theirs)
    assert key == ("differs:error/truncated_as_complete", ()) and is_difference(key)
    assert differs_key(mine, result("error", error="APIError")) is None
    assert not is_difference(group_key(result("ok", "dead_peer_bound")))


def test_a_shrunk_form_that_never_fails_again_hands_over_the_unshrunk_one(tmp_path):
    # the runner is replaced by a table here: which replays fail is the point, and a real
    # client's timing cannot be told to fail once and then never (the search itself runs
    # real cases in test_search.py)
    from harness.fuzz.search import Search, _Found, _Round
    from harness.fuzz.settings import FuzzSettings

    cut = result("truncated_as_complete", "honest_reply")
    first = {"name": "fuzz_chat_first", "summary": "first", "script": {"rules": [{}, {}]}}
    shrunk = {"name": "fuzz_chat_shrunk", "summary": "shrunk", "script": {"rules": []}}
    search = Search(FuzzSettings(target="t", apis=("chat",), confirm=3, reference=None))
    runs: list[str] = []

    def run(data, target=None):
        runs.append(data["name"])
        return cut if data is first else result("ok")

    search._run = run  # type: ignore[method-assign]
    search._cache[first["name"]] = cut
    state = _Round(worker=0, key=group_key(cut), first=first, first_seen_s=1.0)
    search._finish(_Found(group_key(cut), shrunk, cut), state)
    (finding,) = search.report.findings
    assert runs == ["fuzz_chat_shrunk"] * 3 + ["fuzz_chat_first"] * 3
    assert finding.data is first and finding.unshrunk and finding.status == "confirmed"
    assert finding.to_dict()["shrunk_did_not_repeat"] is True
