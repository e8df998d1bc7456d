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
call had returned (``late_requests``). Counted per model call: each request's lineage
(``harness.apis.lineage``, on its record) says whether it retries an earlier call or
begins one (a continuation, a new conversation), so an agent whose job makes several
model calls is judged on each, not as one call retried.

The child's report and the request records are parsed once
(``harness.contract.observation``: :class:`ChildReport`, :class:`Request`) and read typed.

Not here: running anything (``harness.lifecycle``), the outcome rules (``harness.outcome``)
or the contract rules (``harness.contract``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from harness.apis import APIS
from harness.case_result import CaseResult
from harness.contract import Facts, contract_for, judge
from harness.contract.carried import carried_cut
from harness.contract.causes import (
    cause_chain,
    cut_by_peer,
    reply_text,
    wire_attempts,
    wrapped_types,
)
from harness.contract.checks.retry_after import load_made_wait
from harness.contract.dead_peer import judge_dead_peer
from harness.contract.evidence import contract_facts, evidence_for
from harness.contract.observation import ChildReport, Lineage, Request, requests_of
from harness.contract.reach import rule_firings, unreached
from harness.lateness import measure, void_reason
from harness.lifecycle import Observed
from harness.outcome import Expected, Outcome, classify, detection_latency
from harness.planning import CasePlan
from harness.posture.carried import tie_posture
from harness.scenario import Scenario

__all__ = ["NO_FALSE_KILL_TAG", "Observed", "call_requests", "judge_case", "model_calls"]

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
    child = ChildReport.parse(report)
    # the LLM requests: raw for the contract's readers of records, typed for the judge's
    typed = requests_of(observed.records)
    records = [r for r, q in zip(observed.records, typed, strict=True) if q.api in APIS]
    requests = tuple(q for q in typed if q.api in APIS)
    ran = child is None or child.ran
    answered = _answering(requests)
    outcome = classify(
        report,
        expected_text=None if answered is None else answered.expected_text,
        answer_arguments=None if answered is None else answered.answer_arguments,
        alive=scenario.is_alive,
        find_sentinel=find_sentinel,
    )
    attempts = None if child is None else child.claimed_attempts(calls=scenario.request.calls)
    made = call_requests(requests)
    outcome = _hidden_false_kill(outcome, scenario, records, observed.timeline, attempts)
    outcome = _hidden_cut(outcome, requests)
    follow_up = None if child is None else child.follow_up
    # The job's own calls ended where the follow-up call started.
    end_t = None if child is None else child.end_t
    error_t = end_t if child is not None and child.status == "raised" else None
    started_t = observed.started_t
    elapsed = None if (end_t is None or started_t is None) else end_t - started_t
    late = _late_requests(requests, end_t) if ran else None
    contract = contract_for(scenario)
    # every sampled socket tied to what it carried (a model call, a probe, nothing)
    posture = tie_posture(observed.posture, observed.timeline, observed.records)
    dead_peer = judge_dead_peer(contract, posture) if ran else None
    # A fault that never fired (or calls never made) judges nothing: read from the
    # server's records and the timeline, never from what the target says it did.
    not_exercised = (
        unreached(
            scenario,
            records,
            observed.timeline,
            outcome_kind=outcome.kind,
            time_scale=time_scale,
            client_events=None if child is None else child.events,
        )
        if ran
        else None
    )
    chain = cause_chain(report) if outcome.kind != "ok" else ()
    facts = Facts(
        outcome=outcome,
        time_scale=time_scale,
        ceiling_s=ceiling_s,
        elapsed_s=elapsed,
        requests=len(records) if ran else None,
        request_log=[(q.t_start, q.fault) for q in requests],
        leaks=None if observed.leaks is None else observed.leaks.total,
        late_requests=late,
        follow_up_ok=None if follow_up is None else follow_up.ok,
        dead_peer=dead_peer,
        call_requests=made if ran else (),
        job_calls_s=_job_calls_s(child, started_t) if ran else (),
        claimed_attempts=attempts if ran else None,
        # only where every attempt meets the server itself: a relay, proxy or kernel
        # path can keep one off its wire
        wire_attempts=(
            wire_attempts(observed.records, observed.timeline)
            if ran and scenario.backend == "server"
            else None
        ),
        unreached=not_exercised,
        wrapped=wrapped_types(chain),
        runqueue=observed.runqueue,
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
            request_starts=[q.t_start for q in requests],
        ),
        requests=len(records) if ran else None,
        max_requests=plan.max_requests,
        leaks=observed.leaks,
        attempts=attempts,
        late_requests=late,
        finish_reason=None if child is None else child.finish_reason,
        message=_message(child, outcome) + (f"\n{observed.stacks}" if observed.stacks else ""),
        summary=scenario.summary,
        timeline=tuple(observed.timeline) if keep_timeline else (),
        client_events=() if child is None else child.events,
        t_started=started_t,
        details={} if child is None else dict(child.details),
        verdict=verdict.verdict,
        failed_checks=verdict.failed_checks,
        contract=contract_facts(contract, facts) if ran else {},
        evidence=evidence_for(contract, facts, verdict.failed_checks),
        chain=chain,
        reply=reply_text(report),
        posture=tuple(posture.to_list()) if posture is not None else (),
        posture_unreadable=_unreadable(posture),
        dead_peer=None if dead_peer is None else dead_peer.to_dict(),
        not_exercised=not_exercised or "",
        rules=tuple(
            rule_firings(scenario.script.rules, records, observed.timeline, time_scale=time_scale)
        )
        if ran
        else (),
    )
    result = _with_match(result, expected, observed)
    if not ran:
        return result
    lateness = measure(observed.timeline, starved_s=observed.starved_s, time_scale=time_scale)
    counts_against = not result.matched if result.gated else result.verdict == "fail"
    return replace(
        result,
        lateness=lateness.to_dict(),
        void=void_reason(
            lateness,
            alive=scenario.is_alive and scenario.backend == "server",
            counts_against=counts_against,
            # a wait the check failed needs no load to explain a pass
            load_made=""
            if "retry_after" in verdict.failed_checks
            else load_made_wait(contract, facts),
        ),
    )


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
    requests = requests_of(records)
    calls = max(scenario.request.calls, model_calls(requests))
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
    # Asked again: a later retry of the killed request's model call (a continuation after
    # it, the agent's next call, asks something else).
    killed = [
        i for i in cut_by_peer(records, timeline) if i is not None and _asked_again(i, requests)
    ]
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


def _hidden_cut(outcome: Outcome, requests: Sequence[Request]) -> Outcome:
    """An ``ok`` whose job went on from a cut reply: a later model call carried an earlier
    one's cut reply as the model's whole turn (:func:`~harness.contract.carried.carried_cut`),
    so the final answer was built on a partial one the client took as complete."""
    if outcome.kind != "ok":
        return outcome
    why = carried_cut(requests)
    if why is None:
        return outcome
    return Outcome(
        "truncated_as_complete",
        detail=f"the final reply came back whole, but {why}: the cut reply was taken as complete",
    )


def model_calls(records: Sequence[Any]) -> int:
    """Model calls among ``records`` (:func:`call_requests`)."""
    return len(call_requests(records))


def call_requests(records: Sequence[Any]) -> tuple[tuple[int, int], ...]:
    """(first request's index, requests) of each model call among ``records`` (the
    server's order): each request whose lineage is a continuation or a new conversation
    begins one; a retry counts with the call before it. A request whose body was never
    read (a fault before it) has no lineage: it begins a call only as the first, and
    the request after it is taken as its retry (nothing says otherwise). A retry of an
    *earlier* model call than the current one (an agent's next job call asking the same
    conversation again) begins a call too."""
    calls: list[list[int]] = []
    current: Any = None  # the lineage ``call`` of the model call being counted
    unread_before = False
    for q in requests_of(records):
        kind = q.lineage.kind if q.lineage is not None else None
        of_call = q.lineage.call if q.lineage is not None else None
        begins = kind == "continuation" or (kind == "new" and not unread_before)
        begins = begins or (
            kind == "retry" and None not in (of_call, current) and of_call != current
        )
        if begins or not calls:
            calls.append([q.index, 0])
            current = of_call
        calls[-1][1] += 1
        unread_before = kind is None
    return tuple((first, n) for first, n in calls)


def _asked_again(index: Any, requests: Sequence[Request]) -> bool:
    """Did a request after ``index`` ask its model call again (a retry of that call, or a
    request whose body was not read, so nothing rules a retry out)?"""
    by_index = {q.index: q for q in requests}
    killed = by_index.get(int(index))
    call = killed.lineage.call if killed is not None and killed.lineage is not None else None
    for i, q in sorted(by_index.items()):
        if i <= int(index):
            continue
        later = q.lineage
        if call is None or later is None:
            return True
        if later.kind == "retry" and later.call == call:
            return True
    return False


def _late_requests(requests: Sequence[Request], end_t: float | None) -> int | None:
    """Requests that started after the call returned or raised at ``end_t`` (None: the
    call never ended, e.g. hung). A continuation of the job's conversation (its lineage
    extends a request of the job), and the retries of that model call, belong to the
    job: not late. A retry of a call begun before ``end_t`` is."""
    if end_t is None:
        return None
    job: set[int] = set()  # requests of the job
    continued: set[int] = set()  # model calls begun late as a continuation of the job
    late = 0
    for q in sorted(requests_of(requests), key=lambda q: q.index):
        lineage = q.lineage or Lineage()
        if q.t_start <= end_t:
            job.add(q.index)
        elif lineage.kind == "continuation" and lineage.of in job:
            job.add(q.index)
            continued.add(q.index)
        elif lineage.kind == "retry" and lineage.call in continued:
            job.add(q.index)
        else:
            late += 1
    return late


def _answering(requests: Sequence[Request]) -> Request | None:
    """The request whose reply is the one to compare with: the last request without a
    fault, else the last."""
    if not requests:
        return None
    healthy = [q for q in requests if q.fault is None]
    return (healthy or requests)[-1]


def _message(child: ChildReport | None, outcome: Outcome) -> str:
    if child is None:
        return outcome.detail
    if child.status in ("raised", "crashed"):
        cause = f" (from {child.causes[0]})" if child.causes else ""
        return f"{child.error}: {child.message or ''}{cause}"[:600]
    if not child.ran:
        return child.message or outcome.detail
    return outcome.detail


def _job_calls_s(child: ChildReport | None, started_t: float | None) -> tuple[float, ...]:
    """When each call of the job after the first began, seconds from ``started_t``
    (the client's ``call`` marks, "2 of 3": ``harness.targets.base.run_calls``)."""
    if child is None or started_t is None:
        return ()
    return tuple(
        float(e[0]) - started_t
        for e in child.events
        if len(e) >= 3 and e[1] == "call" and not str(e[2]).startswith("1 of")
    )
