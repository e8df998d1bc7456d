"""The contract of one scenario: defaults derived from its fault script, then its overrides.

Derivation rules (each one line of why). A rule's ``match`` says which requests it hits:
without one it hits every attempt, so no retry can get past it.

- **ideal**: ``reply`` when a correct client can get the complete reply -- no rule stops
  progress or alters the content (a slow-but-alive stream), or every such rule can be got
  past by a retry (it matches only some attempts, connections or reused connections, or
  it fires only on an idle pooled connection). ``reply_or_error`` otherwise: a rule stops
  or alters (duplicates, swaps, drops events) every request, the network in between is
  faulted (relay / proxy / kernel), a stream corrupts (``malformed``), the status is one a
  client must not retry, a ``Retry-After`` asks for a wait the client may not afford, or
  the scenario says ``alive = false``.
- **no_retry**: a status rule with a code no retry can fix (400 context length, 401, 403,
  404, 413, 422, content filter): no request of the call after one that rule answered (a
  rule on the retry only leaves the first retry free); its record is ``no_retry_faults``.
- **retry_after_s**: the status rule's ``retry_after_s``: no retry sooner than that after
  a request that rule answered (``retry_after_by_fault``; a rule on a later attempt owes
  the first retry nothing).
- Neither when the network in between may eat the answer (a stopping fault in force
  before the status goes out, ``harness.network_spec.hides_answers``): the client may
  never have read it, and retrying what it never read is right.
- **max_requests**: from the fault, not from any client's retry settings. A
  ``Retry-After`` on some attempts admits one retry after each such answer (a wait longer
  than the bound admits none); otherwise ``DEFAULT_REQUESTS_PER_CALL`` per call (a correct
  client retries a few times, never without end), or more when the fault's matched
  attempts need more to get past them. The scenario's ``[budget]`` is the regression
  gate of its targets, not this.
- **bound_s**: unset: the call must end (return or raise) within the runner's outer
  ceiling (``ceiling_s`` scaled, with its real-time floor).
- **alive_after**, **no_leaks**: always.
- **edit_excuses**: the outcomes an edit invisible to any client explains (a text
  delta edited in a chat or Messages stream, a tool call's arguments edited into other
  valid JSON; ``harness.contract.visible``): ``honest_reply`` then does not fail a
  changed or shorter text.
- **dead_peer** / **dead_peer_bound_s**: a silent or dead peer fault
  (``harness.contract.dead_peer``).

Not here: the table's validation (``harness.contract.spec``) or the judgement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.contract.dead_peer import dead_peer_terms
from harness.contract.records import status_key
from harness.contract.spec import ContractSpec
from harness.contract.visible import edit_excuses
from harness.network_spec import hides_answers
from harness.scenario_pace import outpaces_ceiling
from harness.vocab.statuses import NON_RETRYABLE_STATUSES

if TYPE_CHECKING:  # the scenario imports the spec; the contract only reads a scenario
    from harness.scenario import Scenario

__all__ = [
    "DEFAULT_MAX_REQUESTS_PER_WINDOW",
    "DEFAULT_REQUESTS_PER_CALL",
    "DEFAULT_WINDOW_S",
    "NON_RETRYABLE_STATUSES",
    "Contract",
    "contract_for",
]

DEFAULT_REQUESTS_PER_CALL = 5
DEFAULT_MAX_REQUESTS_PER_WINDOW = 5
DEFAULT_WINDOW_S = 1.0


@dataclass(frozen=True, kw_only=True)
class Contract:
    """What any correct client must do in one scenario. Durations in scenario seconds."""

    ideal: str
    max_requests: int
    #: The call must end within this; None: the runner's outer ceiling (``ceiling_s``
    #: scaled, floored by ``min_ceiling_s``).
    bound_s: float | None = None
    calls: int = 1
    retry_after_s: float | None = None
    #: (a rule's :func:`~harness.contract.records.status_key`, its Retry-After in scenario seconds): the
    #: wait owed after a request that rule answered (empty: ``retry_after_s`` after any
    #: status answer, as a ``[contract]`` table states it)
    retry_after_by_fault: tuple[tuple[str, float], ...] = ()
    no_retry: bool = False
    #: the status keys of the rules whose status no retry can fix: no request of the call may
    #: follow one (empty: ``no_retry`` counts every request, as a table states it)
    no_retry_faults: tuple[str, ...] = ()
    max_requests_per_window: int = DEFAULT_MAX_REQUESTS_PER_WINDOW
    window_s: float = DEFAULT_WINDOW_S
    alive_after: bool = True
    no_leaks: bool = True
    #: Slow but alive: any deadline that fires is a false kill.
    alive: bool = False
    #: A silent or dead peer: "waiting" / "in_flight" (``harness.contract.dead_peer``);
    #: the transport must notice one within ``dead_peer_bound_s`` real seconds.
    dead_peer: str | None = None
    dead_peer_bound_s: float | None = None
    #: The dishonest outcomes an edit no client can see explains
    #: (``harness.contract.visible``): a text delta duplicated, dropped or swapped in a
    #: stream that never restates the answer reads like the answer the model meant, so
    #: ``honest_reply`` does not fail them; an error text returned as the reply always.
    edit_excuses: tuple[str, ...] = ()

    @property
    def edits_visible(self) -> bool:
        return not self.edit_excuses

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def contract_for(scenario: Scenario) -> Contract:
    """The scenario's contract: derived defaults, then its ``[contract]`` overrides."""
    rules = scenario.script.rules
    answering = [r for r in rules if r.fault.action.answers_status]
    if hides_answers(scenario.network, framing=scenario.script.framing):
        answering = []  # what a client may never have read creates no duty
    statuses = [r.fault.action for r in answering]
    final = [
        r for r in answering if getattr(r.fault.action, "code", None) in NON_RETRYABLE_STATUSES
    ]
    no_retry = bool(final)
    timed = [r for r in answering if getattr(r.fault.action, "retry_after_s", None)]
    retry_after = [r.fault.action.retry_after_s for r in timed]
    calls = scenario.request.calls
    # Waiting out a Retry-After may not fit the client's own budget: giving up cleanly is safe.
    waits = any(
        getattr(a, "retry_after_s", None) or getattr(a, "retry_after", None) for a in statuses
    )
    reply = _reply_possible(scenario) and not no_retry and not waits
    spec = _spec(scenario)
    derived = Contract(
        ideal="reply" if reply else "reply_or_error",
        max_requests=_request_budget(scenario, bound_s=spec.bound_s),
        calls=calls,
        retry_after_s=max(retry_after) if retry_after else None,
        retry_after_by_fault=tuple(
            (status_key(str(r.fault)), r.fault.action.retry_after_s) for r in timed
        ),
        no_retry=no_retry,
        no_retry_faults=tuple(status_key(str(r.fault)) for r in final),
        alive=scenario.is_alive,
        edit_excuses=edit_excuses(scenario),
        **dead_peer_terms(scenario, getattr(spec, "dead_peer_bound_s", None)),
    )
    overrides = {k: v for k, v in spec.model_dump().items() if v is not None}
    return Contract(**{**derived.to_dict(), **overrides})


def _spec(scenario: Scenario) -> ContractSpec:
    return getattr(scenario, "contract", None) or ContractSpec()


def _request_budget(scenario: Scenario, *, bound_s: float | None) -> int:
    """LLM requests a correct client may make in the whole case (see the module doc)."""
    calls = scenario.request.calls
    matched = [r for r in scenario.script.rules if r.match.attempts is not None]
    # Past the last matched attempt a retry gets through: one more request than that.
    needed = max((max(r.match.attempts) for r in matched), default=0) + calls
    waited = [r for r in matched if getattr(r.fault.action, "retry_after_s", None)]
    if waited and not hides_answers(scenario.network, framing=scenario.script.framing):
        bound = scenario.ceiling_s if bound_s is None else bound_s
        if all(r.fault.action.retry_after_s >= bound for r in waited):
            # no retry fits in the bound: the call ends at the first request such a rule
            # answers (a rule before it may take the earlier attempts: those are retried)
            firsts = [_first_answered(r, scenario.script.rules) for r in waited]
            return calls * min((f for f in firsts if f is not None), default=1)
        return needed  # one retry after each Retry-After answer, no more
    return max(DEFAULT_REQUESTS_PER_CALL * calls, needed)


def _first_answered(rule: Any, rules: Any) -> int | None:
    """The first attempt ``rule`` answers: its own attempts less those an earlier rule
    takes (the first matching rule wins); None when none is left to it."""
    taken: set[int] = set()
    for other in rules:
        if other is rule:
            left = sorted(set(rule.match.attempts) - taken)
            return left[0] if left else None
        if other.match.attempts is None:
            return None  # an earlier rule takes every attempt
        taken |= set(other.match.attempts)
    return None


def _reply_possible(scenario: Scenario) -> bool:
    """True when a correct (retrying) client can get the complete reply."""
    if scenario.alive is False:
        return False  # the author says progress stops (e.g. slower than any hard ceiling)
    if any(r.fault.action.corrupting for r in scenario.script.rules):
        return False
    if outpaces_ceiling(scenario):
        return False  # paced too slow for a call to finish within its ceiling
    if scenario.backend != "server" and not scenario.is_alive:
        return False  # the fault is in the network, not in the script: not known here
    stopping = [
        r for r in scenario.script.rules if r.fault.action.terminal or r.fault.action.alters_content
    ]
    return all(_escapable(rule) for rule in stopping)


def _escapable(rule: Any) -> bool:
    """A retry (or a fresh connection) gets past this rule: it does not hit every request."""
    if rule.fault.phase.kind == "idle":
        return True  # fires on an idle pooled connection: a reconnect gets past it
    match = rule.match
    if match.connections is not None:
        return True  # a fresh connection does not match
    if match.request_on_connection is not None and 1 not in match.request_on_connection:
        return True  # only reused connections: a fresh one gets past it
    # Only some attempts: the request budget (_request_budget) admits the one past them.
    return match.attempts is not None
