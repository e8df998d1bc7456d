"""The judge step: what one case amounted to, built into a :class:`CaseResult` once.

Pure: it takes what the child lifecycle (``harness.lifecycle``) observed -- the target's
report (None: stopped at the ceiling), the server's LLM request records and timeline,
the leaks -- and returns the result with both judgements: the outcome against the
target's expectation (``matched``, the regression gate) and the scenario's contract
(``verdict``, ``failed_checks``). A case that never ran (``not_applicable``, a missing
tier) goes through the same function with a synthetic report, so no second place
builds a ``CaseResult``.

Accounting: the server's count of LLM API requests (``requests``, judged against the
budget), the client's own view (``attempts``), and the requests that arrived after the
call had returned (``late_requests``).

Not here: running anything (``harness.lifecycle``), the outcome rules (``harness.outcome``)
or the contract rules (``harness.contract``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from harness.case_result import CaseResult
from harness.contract import Facts, contract_for, judge
from harness.contract.causes import cause_chain, cut_by_peer, reply_text, wire_attempts
from harness.contract.dead_peer import judge_dead_peer
from harness.contract.evidence import contract_facts, evidence_for
from harness.contract.reach import rule_firings, unreached
from harness.lifecycle import Observed
from harness.outcome import Expected, Outcome, classify, detection_latency
from harness.planning import CasePlan
from harness.scenario import Scenario
from harness.vocab.apis import APIS

__all__ = ["NO_FALSE_KILL_TAG", "Observed", "judge_case"]

#: Scenarios with this tag (or ``alive = true``) are slow but alive: an attempt killed and
#: retried there is a ``false_kill`` even when the retry returns the full reply.
NO_FALSE_KILL_TAG = "no-false-kill"


def judge_case(
    plan: CasePlan,
    observed: Observed,
    *,
    keep_timeline: bool = True,
    find_sentinel: Callable[[str], str | None] | None = None,
) -> CaseResult:
    """The :class:`CaseResult` of one case: outcome, accounting, expectation, verdict;
    what it is judged by (scenario, expectation, budget, time scale, ceiling) is the
    case's plan, decided once in ``harness.planning``."""
    scenario, target, expected = plan.scenario, plan.target, plan.expected
    time_scale, ceiling_s = plan.time_scale, plan.ceiling_s
    report = observed.report
    records = [r for r in observed.records if getattr(r, "api", None) in APIS]
    ran = not (report and report.get("status") in ("skipped", "not_applicable", "did_not_start"))
    outcome = classify(
        report,
        expected_text=_expected_text(records),
        alive=scenario.is_alive,
        find_sentinel=find_sentinel,
    )
    attempts = _client_attempts(report, calls=scenario.request.calls)
    outcome = _hidden_false_kill(outcome, scenario, records, observed.timeline, attempts)
    follow_up = ((report or {}).get("details") or {}).get("follow_up")
    follow_up = follow_up if isinstance(follow_up, Mapping) else None
    # The job's own calls ended where the follow-up call started.
    end_t = (follow_up or {}).get("t") or (report.get("t") if report else None)
    error_t = end_t if report and report.get("status") == "raised" else None
    started_t = observed.started_t
    elapsed = None if (end_t is None or started_t is None) else float(end_t) - started_t
    late = _late_requests(records, end_t) if ran else None
    contract = contract_for(scenario)
    dead_peer = judge_dead_peer(contract, observed.posture) if ran else None
    # A fault that never fired (or calls never made) judges nothing: read from the
    # server's records and the timeline, never from what the target says it did.
    not_exercised = (
        unreached(scenario, records, observed.timeline, outcome_kind=outcome.kind) if ran else None
    )
    facts = Facts(
        outcome=outcome,
        time_scale=time_scale,
        ceiling_s=ceiling_s,
        elapsed_s=elapsed,
        requests=len(records) if ran else None,
        request_log=[
            (float(getattr(r, "t_start", 0.0)), getattr(r, "fault", None)) for r in records
        ],
        leaks=None if observed.leaks is None else observed.leaks.total,
        late_requests=late,
        follow_up_ok=None if follow_up is None else bool(follow_up.get("ok")),
        dead_peer=dead_peer,
        claimed_attempts=attempts if ran else None,
        # only where every attempt meets the server itself: a relay, proxy or kernel
        # path can keep one off its wire
        wire_attempts=(
            wire_attempts(records, observed.timeline)
            if ran and scenario.backend == "server"
            else None
        ),
        unreached=not_exercised,
    )
    verdict = judge(contract, facts)
    result = CaseResult(
        scenario=scenario.name,
        target=target,
        expected="" if expected is None else str(expected),
        outcome=outcome,
        matched=False,
        time_scale=time_scale,
        ceiling_s=ceiling_s,
        elapsed_s=elapsed,
        latency_s=detection_latency(
            observed.timeline,
            error_t,
            started_t=started_t,
            request_starts=[float(getattr(r, "t_start", 0.0)) for r in records],
        ),
        requests=len(records) if ran else None,
        max_requests=plan.max_requests,
        leaks=observed.leaks,
        attempts=attempts,
        late_requests=late,
        finish_reason=(report or {}).get("finish_reason"),
        message=_message(report, outcome) + (f"\n{observed.stacks}" if observed.stacks else ""),
        summary=scenario.summary,
        timeline=tuple(observed.timeline) if keep_timeline else (),
        client_events=tuple(tuple(e) for e in (report or {}).get("events") or ()),
        t_started=started_t,
        details=dict((report or {}).get("details") or {}),
        verdict=verdict.verdict,
        failed_checks=verdict.failed_checks,
        contract=contract_facts(contract, facts) if ran else {},
        evidence=evidence_for(contract, facts, verdict.failed_checks),
        chain=cause_chain(report) if outcome.kind != "ok" else (),
        reply=reply_text(report),
        posture=tuple(observed.posture.to_list()) if observed.posture is not None else (),
        posture_unreadable=_unreadable(observed.posture),
        dead_peer=None if dead_peer is None else dead_peer.to_dict(),
        not_exercised=not_exercised or "",
        rules=tuple(rule_firings(scenario.script.rules, records, observed.timeline)) if ran else (),
    )
    return _with_match(result, expected, observed)


# --------------------------------------------------------------------------- helpers


def _with_match(result: CaseResult, expected: Expected | None, observed: Observed) -> CaseResult:
    if result.outcome.kind == "skipped":
        return replace(result, matched=not observed.not_run_is_mismatch)
    if expected is None:  # nothing to regress against: the verdict alone judges it
        return replace(result, matched=True)
    return replace(result, matched=expected.matches(result.outcome) and not result.over_budget)


def _unreadable(posture: Any) -> str:
    """Why the case's posture could not be read ("" when it was, or was never tried)."""
    return "" if posture is None or posture.readable else str(posture.reason)


def _hidden_false_kill(
    outcome: Outcome,
    scenario: Scenario,
    records: Sequence[Any],
    timeline: Sequence[Mapping[str, Any]],
    attempts: int | None,
) -> Outcome:
    """An ``ok`` on a slow-but-alive scenario (``alive = true``, or tagged
    ``no-false-kill``) that took more requests than calls, where some attempt was
    killed (and retried) although the stream was alive -- a false kill the final reply
    would otherwise hide. Killed: the client says it made more attempts than calls, or
    the server saw a request's connection closed by the client before its response was
    done (:func:`~harness.contract.causes.cut_by_peer`) and a later request asked again.
    More requests with neither (the client counts one attempt; every response went out
    whole, or only a later duplicate was cancelled once an earlier one had answered) are
    not a kill: a gateway's hedge or duplicate, judged by the request budget. A client
    that does not count its attempts cannot rule a kill out: still a false kill.
    Not applied to scenarios that are merely fault-free: there a retry is judged by
    the request budget."""
    calls = scenario.request.calls
    slow_but_alive = scenario.is_alive and (
        scenario.alive is True or NO_FALSE_KILL_TAG in scenario.tags
    )
    # Only where the script is the whole story: a relay / proxy / kernel fault is not in
    # the script, so such a scenario's "alive" cannot rule out a legitimate retry.
    if outcome.kind != "ok" or not slow_but_alive or scenario.backend != "server":
        return outcome
    if len(records) <= calls:
        return outcome
    # A request the client closed mid-way and then took up again with a later one: a
    # hedge the client cancels once an earlier request answered in full is not a kill.
    # "Later" is the server's own order (requests are numbered as their heads are read):
    # two requests' arrival stamps are a kernel tick coarse and can swap near-ties.
    last = max(int(getattr(r, "index", 0)) for r in records)
    killed = [i for i in cut_by_peer(records, timeline) if i is not None and int(i) < last]
    said = attempts is not None and attempts > calls
    if not killed and not said and attempts is not None:
        return outcome
    if killed:
        how = (
            f"request {killed[0]} was closed by the client before its response was done, "
            "and asked again"
        )
    elif said:
        how = f"the client made {attempts} attempts"
    else:
        how = "the client does not say how many attempts it made"
    return Outcome(
        "false_kill",
        detail=f"the full reply came back, but only after {len(records)} requests for {calls} "
        f"call(s): an attempt on a live stream was killed and retried ({how})",
    )


def _client_attempts(report: Mapping[str, Any] | None, *, calls: int) -> int | None:
    """How many requests the client says it made: a returned result's ``attempts`` (for
    several calls, the sum the target reports), a raised one's list of attempt errors
    (``RetriesExhausted``) or the attempt number of the error. None when it does not say,
    or when a raised call was not the first of several (the earlier calls are unknown)."""
    if not report:
        return None
    attempts = report.get("attempts")
    if report.get("status") == "returned":
        return attempts if isinstance(attempts, int) and not isinstance(attempts, bool) else None
    if report.get("status") != "raised" or calls > 1:
        return None
    errors = report.get("attempt_errors")
    if isinstance(errors, list) and errors:
        return len(errors)
    attempt = report.get("attempt")
    return attempt if isinstance(attempt, int) and not isinstance(attempt, bool) else None


def _late_requests(records: Sequence[Any], end_t: Any) -> int | None:
    """Requests that started after the call returned or raised at ``end_t`` (None: the
    call never ended, e.g. hung)."""
    if not isinstance(end_t, int | float):
        return None
    return sum(1 for r in records if float(getattr(r, "t_start", 0.0)) > float(end_t))


def _expected_text(records: Iterable[Any]) -> str | None:
    """The reply a healthy request got: the last request without a fault, else the last."""
    records = list(records)
    if not records:
        return None
    healthy = [r for r in records if getattr(r, "fault", None) is None]
    chosen = (healthy or records)[-1]
    return getattr(chosen, "expected_text", None)


def _message(report: Mapping[str, Any] | None, outcome: Outcome) -> str:
    if report is None:
        return outcome.detail
    if report.get("status") in ("raised", "crashed"):
        causes = report.get("causes") or []
        cause = f" (from {causes[0]})" if causes else ""
        return f"{report.get('error')}: {report.get('message', '')}{cause}"[:600]
    if report.get("status") in ("skipped", "not_applicable", "did_not_start"):
        return str(report.get("message") or outcome.detail)
    return outcome.detail
