"""The verdict of one case: pure judgement of what happened against the scenario's contract.

Checks (a failed one is named in ``Verdict.failed_checks``; a check whose fact is
unknown -- no follow-up made, leaks not readable -- is not failed)::

    complete_reply          the contract wants the reply (a retry gets past the fault) and
                            the call raised instead
    clean_error             an error is a typed one, not a crash of the client or target
    honest_reply            never a partial, different or error text returned as the reply
    bounded                 the call ended (returned or raised) within the bound
    request_budget          at most ``max_requests`` LLM requests for the scenario's calls,
                            and one call's share more for each further model call the
                            server saw (``Facts.call_requests``: an agent's next call,
                            its conversation extended, is not a retry); where the server
                            told the calls apart, no call took more than the budget
                            less one request for each other call of the scenario
    retry_after             no retry sooner than the Retry-After the server sent
    no_retry_non_retryable  one request per call when the status cannot be fixed by a retry
    no_hammering            at most ``max_requests_per_window`` requests in any window
    no_false_kill           no deadline killed a slow-but-alive stream
    no_truncated_tool_execution
                            the agent never executed a tool call whose arguments were cut
                            (outcome ``executed_truncated_tool_call``; fails under any
                            contract, whatever it allows)
    alive_after             a healthy follow-up call through the same client succeeded
    no_leaks                no thread or socket left open after the call returned
    no_late_requests        no request sent after the call had returned
    accounting              no more attempts claimed (counted or logged by the client)
                            than reached the server ("claims 3 attempts, 1 reached the
                            wire": retries the client says it made and never did)
    dead_peer_bound         a silent/dead-peer fault: the posture read from the client's
                            sockets notices a dead peer within the bound
                            (``harness.contract.dead_peer``; not applicable -- not
                            failed -- where the posture cannot be read)

``pass``: the complete reply and every check clean. ``safe``: a clean typed error where
the contract allows one (``ideal = "reply_or_error"``), every check clean. ``fail``:
anything else. ``not_run``: the case never ran -- a missing tier (``skipped``) or a
target that does not speak the scenario's API (``not_applicable``), a target that never
got to the wire (``did_not_start``); no check was judged,
so it is neither a pass nor a fail (every report counts it apart, as not run).
``not_exercised``: the case ran but what the scenario tests never happened -- its fault
never fired, or the target made fewer calls than the job asks
(``harness.contract.reach``, the reason in ``Facts.unreached``); no check is judged,
so it is neither a pass nor a fail either (counted apart from both).

Not here: the contract's derivation (``harness.contract.derive``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.contract.dead_peer import DeadPeerCheck
from harness.contract.derive import Contract
from harness.outcome import Outcome
from harness.tcpinfo import TICK_S

__all__ = [
    "CHECKS",
    "NOT_EXERCISED",
    "NOT_RUN",
    "UNCLEAN_ERRORS",
    "VERDICTS",
    "Facts",
    "Verdict",
    "bound_s",
    "early_retry",
    "greedy_call",
    "judge",
    "request_budget",
]

#: The verdict of a case that never ran (no check judged it).
NOT_RUN = "not_run"
#: The verdict of a case that ran but never met its fault (``harness.contract.reach``).
NOT_EXERCISED = "not_exercised"
VERDICTS = ("pass", "safe", "fail", NOT_RUN, NOT_EXERCISED)
CHECKS = (
    "complete_reply",
    "clean_error",
    "honest_reply",
    "bounded",
    "request_budget",
    "retry_after",
    "no_retry_non_retryable",
    "no_hammering",
    "no_false_kill",
    "no_truncated_tool_execution",
    "alive_after",
    "no_leaks",
    "no_late_requests",
    "accounting",
    "dead_peer_bound",
)
#: Error classes that say the client (or its target) broke, not that it reported a fault.
UNCLEAN_ERRORS = frozenset(
    {
        "TargetCrashed",
        # killed by the kernel at the child's memory limit: the target ran away, it did
        # not report the fault
        "TargetResources",
        "UnknownError",
        "AssertionError",
        "AttributeError",
        "IndexError",
        "KeyError",
        "NameError",
        "RecursionError",
        "TypeError",
        "UnboundLocalError",
        "ZeroDivisionError",
    }
)
#: A retry that comes this much early is still "after" the Retry-After (clock granularity).
RETRY_AFTER_SLACK = 0.9
_DISHONEST = frozenset({"truncated_as_complete", "wrong_content", "error_as_reply"})


@dataclass(frozen=True, kw_only=True)
class Facts:
    """What the runner saw of one case. Times are real seconds (``time.monotonic()``)."""

    outcome: Outcome
    time_scale: float
    #: The runner's outer ceiling for this case, real seconds (the default bound).
    ceiling_s: float
    elapsed_s: float | None = None
    requests: int | None = None
    #: (start time, the fault the server applied or None) of each LLM request, in order.
    request_log: Sequence[tuple[float, str | None]] = ()
    leaks: int | None = None
    late_requests: int | None = None
    #: True / False: the follow-up call succeeded / failed; None: none was made.
    follow_up_ok: bool | None = None
    #: Attempts the client says it made (its count, or retries it logged); None: unsaid.
    claimed_attempts: int | None = None
    #: Attempts that reached the server (``harness.contract.causes.wire_attempts``);
    #: None where a network path may keep an attempt off the server (relay, proxy, kernel).
    wire_attempts: int | None = None
    #: The ``dead_peer_bound`` check's result (None: the contract does not ask it).
    dead_peer: DeadPeerCheck | None = None
    #: (first request's index, requests) of each model call the server saw: a request
    #: that is not a retry begins one (``harness.server.lineage``); empty: not known.
    call_requests: Sequence[tuple[int, int]] = ()

    @property
    def model_calls(self) -> int:
        return len(self.call_requests)

    #: Why the case did not exercise its scenario (``harness.contract.reach.unreached``);
    #: None: it did.
    unreached: str | None = None


@dataclass(frozen=True)
class Verdict:
    verdict: str
    failed_checks: tuple[str, ...] = field(default=())


def judge(contract: Contract, facts: Facts) -> Verdict:
    """The verdict of ``facts`` under ``contract`` (pure)."""
    kind = facts.outcome.kind
    if kind in ("skipped", "not_applicable", "did_not_start"):
        return Verdict(NOT_RUN)
    if facts.unreached is not None:
        return Verdict(NOT_EXERCISED)
    failed = [name for name, ok in _checks(contract, facts) if not ok]
    if failed:
        return Verdict("fail", tuple(failed))
    return Verdict("pass" if kind == "ok" else "safe")


def _checks(contract: Contract, facts: Facts) -> list[tuple[str, bool]]:
    outcome = facts.outcome
    raised = outcome.kind == "error"
    bound = bound_s(contract, facts)
    starts = [t for t, _ in facts.request_log]
    return [
        ("complete_reply", not (raised and contract.ideal == "reply")),
        ("clean_error", not (raised and _unclean(outcome))),
        ("honest_reply", outcome.kind not in _DISHONEST),
        (
            "bounded",
            outcome.kind != "hung" and all(d <= bound for d in model_call_spans(facts)),
        ),
        (
            "request_budget",
            facts.requests is None
            or (
                facts.requests <= request_budget(contract, facts)
                and greedy_call(contract, facts) is None
            ),
        ),
        ("retry_after", early_retry(contract, facts) is None),
        (
            "no_retry_non_retryable",
            not contract.no_retry or facts.requests is None or facts.requests <= contract.calls,
        ),
        (
            "no_hammering",
            _busiest_window(starts, contract.window_s * facts.time_scale)
            <= contract.max_requests_per_window + contract.calls - 1,
        ),
        ("no_false_kill", outcome.kind != "false_kill"),
        ("no_truncated_tool_execution", outcome.kind != "executed_truncated_tool_call"),
        ("alive_after", not contract.alive_after or facts.follow_up_ok is not False),
        ("no_leaks", not contract.no_leaks or not facts.leaks),
        ("no_late_requests", not facts.late_requests),
        (
            "accounting",
            facts.claimed_attempts is None
            or facts.wire_attempts is None
            or facts.claimed_attempts <= facts.wire_attempts,
        ),
        ("dead_peer_bound", facts.dead_peer is None or not facts.dead_peer.failed),
    ]


def request_budget(contract: Contract, facts: Facts) -> int:
    """The requests allowed for the model calls made: the contract's budget for its
    calls, plus one call's share of it for each model call beyond them."""
    extra = max(0, facts.model_calls - contract.calls)
    share = -(-contract.max_requests // max(1, contract.calls))
    return contract.max_requests + extra * share


def greedy_call(contract: Contract, facts: Facts) -> tuple[int, int, int] | None:
    """(first request, requests, allowed) of the first model call that took more than one
    call may: the budget less one request for each other call of the scenario. None:
    none did, or the server saw fewer calls than the scenario makes (identical calls
    read as retries of one, so no call's share is known)."""
    if len(facts.call_requests) < contract.calls:
        return None
    allowed = contract.max_requests - (contract.calls - 1)
    for first, n in facts.call_requests:
        if n > allowed:
            return first, n, allowed
    return None


def model_call_spans(facts: Facts) -> list[float]:
    """How long each model call took (real seconds): the case's elapsed time for one;
    for several, from each call's first request to the next one's, the last to the end
    (``harness.call_ceiling``: each model call has the bound). Empty: not known."""
    if facts.elapsed_s is None:
        return []
    firsts = _call_first_positions(facts)
    if len(firsts) < 2:
        return [facts.elapsed_s]
    starts = [facts.request_log[p][0] - facts.request_log[0][0] for p in firsts]
    spans = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    return [*spans, facts.elapsed_s - starts[-1]]


def _call_first_positions(facts: Facts) -> list[int]:
    """Positions in ``request_log`` of each model call's first request."""
    out, p = [], 0
    for _first, n in facts.call_requests:
        if p >= len(facts.request_log):
            break
        out.append(p)
        p += n
    return out


def bound_s(contract: Contract, facts: Facts) -> float:
    """The real-seconds bound: the scenario's own, scaled; else the case's outer ceiling."""
    return facts.ceiling_s if contract.bound_s is None else contract.bound_s * facts.time_scale


def _unclean(outcome: Outcome) -> bool:
    # "RetriesExhausted:KeyError": the last attempt's error counts too.
    return bool(set((outcome.error or "").split(":")) & UNCLEAN_ERRORS)


def early_retry(contract: Contract, facts: Facts) -> tuple[float, float] | None:
    """(gap, wait) of the first retry that started sooner than Retry-After after a
    request the server answered with it (seconds, real time); None: none did.

    What the client was told: the scaled delay, exact in ``retry-after-ms`` (and never
    less in ``Retry-After``, whole seconds rounded up), so a fast run can fail this too.
    Allowed early: :data:`RETRY_AFTER_SLACK` of it, and the precision of two arrival
    stamps (each is a kernel tick coarse, :data:`harness.tcpinfo.TICK_S`)."""
    if contract.retry_after_s is None:
        return None
    wait = contract.retry_after_s * facts.time_scale
    allowed = wait * RETRY_AFTER_SLACK - 2 * TICK_S
    log = list(facts.request_log)
    for (t, fault), (t_next, _) in zip(log, log[1:], strict=False):
        if fault is not None and fault.lower().startswith("status") and t_next - t < allowed:
            return t_next - t, wait
    return None


def _busiest_window(starts: Sequence[float], window: float) -> int:
    """The most request starts inside any window of ``window`` seconds."""
    ordered = sorted(starts)
    best, lo = 0, 0
    for hi, t in enumerate(ordered):
        while t - ordered[lo] > window:
            lo += 1
        best = max(best, hi - lo + 1)
    return best
