"""One case's result: everything the reports need about one scenario x target case.

Two judgements ride on it: ``matched`` (the target's expectation, the regression gate;
True when there is none, ``gated`` then False) and ``verdict`` / ``failed_checks`` (the
scenario's contract, for any target). ``to_dict`` / ``from_dict`` are the JSON report's
per-result format.

Not here: building one (``harness.judge``) or rendering (``harness.report``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.leaks import Leaks
from harness.outcome import NOT_RUN, Outcome

__all__ = ["CaseResult"]


@dataclass(frozen=True)
class CaseResult:
    """Everything the reports need about one scenario x target case.

    ``expected`` is the expectation's text, ``""`` when the target has none for this
    scenario: then ``matched`` is True (nothing to regress against) and ``gated`` False.
    """

    scenario: str
    target: str
    expected: str
    outcome: Outcome
    matched: bool
    time_scale: float
    ceiling_s: float
    elapsed_s: float | None = None
    latency_s: float | None = None
    #: LLM API requests the server received during the case (its own count).
    requests: int | None = None
    max_requests: int | None = None
    #: What the process still held after the call returned (threads, sockets by state).
    leaks: Leaks | None = None
    #: The client's own view: how many requests it says it made (None: it does not say).
    attempts: int | None = None
    #: Requests the server received after the call had already returned or raised:
    #: a worker nobody waits for is still sending.
    late_requests: int | None = None
    finish_reason: str | None = None
    message: str = ""
    summary: str = ""
    timeline: tuple[Mapping[str, Any], ...] = ()
    client_events: tuple[tuple[float, str, str], ...] = ()
    t_started: float | None = None
    #: Extra facts the target reported (``CallResult.details``), carried as they came.
    details: Mapping[str, Any] = field(default_factory=dict)
    #: The contract verdict (``harness.contract``): "pass", "safe" or "fail".
    verdict: str = "fail"
    #: The contract checks this case failed (``harness.contract.CHECKS`` names).
    failed_checks: tuple[str, ...] = ()
    #: The derived contract as judged (``harness.contract.evidence.contract_facts``).
    contract: Mapping[str, Any] = field(default_factory=dict)
    #: One sentence of evidence per failed check.
    evidence: Mapping[str, str] = field(default_factory=dict)
    #: The exception chain behind an error outcome, the error first (``{type, message,
    #: via}``; bounded, redacted): what was raised, or what the client caught and
    #: turned into its reply.
    chain: tuple[Mapping[str, str], ...] = ()
    #: The text the call returned (bounded, redacted); None: it did not return.
    reply: str | None = None

    @property
    def ran(self) -> bool:
        """False for a case that never ran (a missing tier, an API the target does not
        speak): every report counts it apart, never as expected nor as a verdict."""
        return self.outcome.kind not in NOT_RUN

    #: The client sockets' posture, one entry per connection (``harness.posture``).
    posture: tuple[Mapping[str, Any], ...] = ()
    #: Why posture could not be read at all (not Linux, no permission); "" when it was.
    posture_unreadable: str = ""
    #: The ``dead_peer_bound`` check with its evidence (None: not asked).
    dead_peer: Mapping[str, Any] | None = None
    #: Why the case did not exercise its scenario (verdict ``not_exercised``: its fault
    #: never fired, calls never made; ``harness.contract.reach``); "" when it did.
    not_exercised: str = ""
    #: Each rule of the fault script: ``rule``, ``matched`` (request indexes), ``fired``,
    #: ``t`` (when it first fired; None: never).
    rules: tuple[Mapping[str, Any], ...] = ()
    #: ``--repeat N`` (``harness.repeats``): ``runs``, ``matched`` runs, and how often each
    #: outcome label and verdict came out; None: the case ran once.
    repeats: Mapping[str, Any] | None = None
    #: Why the case says nothing about the client ("" when it stands): the harness broke
    #: a timing promise (``harness.lateness``); the runner ran it again ``reruns`` times.
    void: str = ""
    #: The harness's own lateness as measured (``harness.lateness.Lateness.to_dict``).
    lateness: Mapping[str, Any] | None = None
    #: How many times the runner ran this case again because an earlier run was void.
    reruns: int = 0

    @property
    def flaky(self) -> bool:
        """True when repeated runs of this case gave more than one verdict."""
        return len((self.repeats or {}).get("verdicts") or ()) > 1

    @property
    def unaccounted_requests(self) -> int:
        """Requests the client cannot account for: the server saw more than the client
        says it made, or some arrived after the call was over (0 when unknown)."""
        beyond = 0
        if self.requests is not None and self.attempts is not None:
            beyond = max(self.requests - self.attempts, 0)
        return max(beyond, self.late_requests or 0)

    @property
    def gated(self) -> bool:
        """True when an expectation judged this case (it counts for the exit status)."""
        return bool(self.expected)

    @property
    def over_budget(self) -> bool:
        return (
            self.max_requests is not None
            and self.requests is not None
            and self.requests > self.max_requests
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "target": self.target,
            "expected": self.expected,
            "outcome": self.outcome.to_dict(),
            "actual": self.outcome.label,
            "matched": self.matched,
            "time_scale": self.time_scale,
            "ceiling_s": self.ceiling_s,
            "elapsed_s": self.elapsed_s,
            "latency_s": self.latency_s,
            "requests": self.requests,
            "max_requests": self.max_requests,
            "over_budget": self.over_budget,
            "late_requests": self.late_requests,
            "unaccounted_requests": self.unaccounted_requests,
            "leaks": None if self.leaks is None else self.leaks.to_dict(),
            "attempts": self.attempts,
            "finish_reason": self.finish_reason,
            "message": self.message,
            "summary": self.summary,
            "timeline": [dict(e) for e in self.timeline],
            "client_events": [list(e) for e in self.client_events],
            "t_started": self.t_started,
            "details": dict(self.details),
            "verdict": self.verdict,
            "failed_checks": list(self.failed_checks),
            "contract": dict(self.contract),
            "evidence": dict(self.evidence),
            "chain": [dict(c) for c in self.chain],
            "reply": self.reply,
            "posture": [dict(p) for p in self.posture],
            "posture_unreadable": self.posture_unreadable or None,
            "dead_peer_bound": None if self.dead_peer is None else dict(self.dead_peer),
            "repeats": None if self.repeats is None else dict(self.repeats),
            "flaky": self.flaky,
            "void": self.void or None,
            "lateness": None if self.lateness is None else dict(self.lateness),
            "reruns": self.reruns,
            "not_exercised": self.not_exercised or None,
            "rules": [dict(r) for r in self.rules],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CaseResult:
        leaks = data.get("leaks")
        return cls(
            scenario=data["scenario"],
            target=data["target"],
            expected=data["expected"],
            outcome=Outcome.from_dict(data["outcome"]),
            matched=bool(data["matched"]),
            time_scale=float(data["time_scale"]),
            ceiling_s=float(data["ceiling_s"]),
            elapsed_s=data.get("elapsed_s"),
            latency_s=data.get("latency_s"),
            requests=data.get("requests"),
            max_requests=data.get("max_requests"),
            leaks=None if leaks is None else Leaks(**leaks),
            attempts=data.get("attempts"),
            late_requests=data.get("late_requests"),
            finish_reason=data.get("finish_reason"),
            message=data.get("message", ""),
            summary=data.get("summary", ""),
            timeline=tuple(data.get("timeline") or ()),
            client_events=tuple(tuple(e) for e in data.get("client_events") or ()),
            t_started=data.get("t_started"),
            details=dict(data.get("details") or {}),
            verdict=data.get("verdict", "fail"),
            failed_checks=tuple(data.get("failed_checks") or ()),
            contract=dict(data.get("contract") or {}),
            evidence=dict(data.get("evidence") or {}),
            chain=tuple(dict(c) for c in data.get("chain") or ()),
            reply=data.get("reply"),
            posture=tuple(data.get("posture") or ()),
            posture_unreadable=data.get("posture_unreadable") or "",
            dead_peer=data.get("dead_peer_bound"),
            repeats=data.get("repeats"),
            void=data.get("void") or "",
            lateness=data.get("lateness"),
            reruns=int(data.get("reruns") or 0),
            not_exercised=data.get("not_exercised") or "",
            rules=tuple(dict(r) for r in data.get("rules") or ()),
        )
