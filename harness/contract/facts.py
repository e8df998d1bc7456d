"""What the runner saw of one case (:class:`Facts`), as every contract check reads it.

A fact may serve several checks (the server's request count: ``request_budget`` and
``no_retry_non_retryable``), so the facts are one record, not one per check; a check's
module (``harness.contract.checks``) says which of them it reads.

Not here: the checks (``harness.contract.checks``) or the judgement (``verdict``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.contract.dead_peer import DeadPeerCheck
from harness.outcome import Outcome

if TYPE_CHECKING:
    from harness.contract.derive import Contract

__all__ = ["Facts", "bound_s", "model_call_spans"]


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
    #: that is not a retry begins one (``harness.apis.lineage``); empty: not known.
    call_requests: Sequence[tuple[int, int]] = ()
    #: When each call of the job after the first began, seconds from the case's start
    #: (the client's ``call`` marks, ``run_calls``): a call the server may not tell from
    #: a retry (the same conversation asked again) or never saw (a dead path).
    job_calls_s: Sequence[float] = ()

    @property
    def model_calls(self) -> int:
        return len(self.call_requests)

    #: Why the case did not exercise its scenario (``harness.contract.reach.unreached``);
    #: None: it did.
    unreached: str | None = None
    #: ``(time, runqueue_waits)`` readings of the target's threads during the case
    #: (``harness.leaks.starved_between``): how long load kept it from running between two
    #: moments. Empty: not read.
    runqueue: Sequence[tuple[float, Mapping[int, float]]] = ()
    #: The classes the raised error was made from (``raise ... from``), outermost first
    #: (``harness.contract.causes.wrapped_types``): a wrapper over a crash is a crash.
    wrapped: Sequence[str] = ()


def bound_s(contract: Contract, facts: Facts) -> float:
    """The real-seconds bound: the scenario's own, scaled; else the case's outer ceiling."""
    return facts.ceiling_s if contract.bound_s is None else contract.bound_s * facts.time_scale


def model_call_spans(facts: Facts) -> list[float]:
    """How long each model call took (real seconds): the case's elapsed time for one;
    for several, from each call's first request (or each call of the job's start) to
    the next one's, the last to the end (``harness.call_ceiling``: each model call has
    the bound). Empty: not known."""
    if facts.elapsed_s is None:
        return []
    firsts = _call_first_positions(facts)
    starts = {0.0, *(facts.request_log[p][0] - facts.request_log[0][0] for p in firsts)}
    starts |= {s for s in facts.job_calls_s if 0.0 < s < facts.elapsed_s}
    ordered = sorted(starts)
    spans = [b - a for a, b in zip(ordered, ordered[1:], strict=False)]
    return [*spans, facts.elapsed_s - ordered[-1]]


def _call_first_positions(facts: Facts) -> list[int]:
    """Positions in ``request_log`` of each model call's first request."""
    out, p = [], 0
    for _first, n in facts.call_requests:
        if p >= len(facts.request_log):
            break
        out.append(p)
        p += n
    return out
