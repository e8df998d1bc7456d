"""The live check through any target: sequential chats in the target's child process.

Each *sequence* is one :class:`~harness.targets.base.Job` of three chats on one client
with a rebuild before the third (``calls=3, rebuild_after=2``), run by the target the
way the runner runs a scenario: in its own child process (``python -m
harness.targets.runtime.child NAME``, or the target's own command: hermes runs three turns on
one ``AIAgent`` and calls ``_replace_primary_openai_client`` between turns 2 and 3),
stopped with SIGKILL at a ceiling. So ``harness live -t X`` judges any client the
runner can run, with the same strictness as the in-process session:

- a chat that came back is judged by :func:`~harness.live.cases.judge_reply` (empty,
  an error sentinel, not the echoed word; the finish reason of the last chat, the only
  one the protocol reports); one row per chat;
- a sequence that raised, hung past its ceiling or crashed is one failed row, its error
  text scanned for sentinels; the child's stderr (its log output) is scanned too;
- a target that cannot run here (hermes without its virtualenv) is ``skipped``, which
  fails the run when ``CI`` is set (a tier CI must run never passes by skipping).

Start-up (imports, warm-up) happens before the child says ready and never counts
against a chat. Every string in a result is redacted.

Not here: the chats' data and judge (``cases``), the in-process reference session
(``session``), the local fault server set-up (``dry_run``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.apis import default_of
from harness.environment import read_environment
from harness.live.budget import run_sequences
from harness.live.cases import (
    CaseResult,
    Expectation,
    LiveRun,
    echo_prompt,
    judge_reply,
    random_word,
    redacted_findings,
    shorten,
)
from harness.live.config import LiveConfig
from harness.live.redact import Redactor
from harness.sentinels import Finding, find_sentinels
from harness.targets import required_in_ci

__all__ = [
    "CHATS",
    "CHILD_START_S",
    "REBUILD_AFTER",
    "TargetSequence",
    "plan_target_sequences",
    "run_target_tier",
]

CHATS = 3
#: The rebuild comes after this many chats: between the second and the third.
REBUILD_AFTER = 2
#: How long a child may take to import its client and say ready (not counted in a chat).
CHILD_START_S = 60.0
#: Added to a sequence's ceiling for the child's own bookkeeping around the calls.
CEILING_MARGIN_S = 5.0
#: How much of the child's stderr is scanned for sentinels.
STDERR_SCAN_CHARS = 20_000


@dataclass(frozen=True)
class TargetSequence:
    """One job for the target: ``calls`` chats echoing ``word``, a rebuild after
    ``rebuild_after`` of them; ``content`` is what a local fault server answers."""

    label: str
    word: str
    stream: bool
    calls: int = CHATS
    rebuild_after: int | None = REBUILD_AFTER
    expect: Expectation = field(default_factory=Expectation)
    content: str | None = None


def plan_target_sequences(
    rng: random.Random, *, streams: Sequence[bool] = (True, False)
) -> list[TargetSequence]:
    """The healthy sequences: one per stream mode."""
    return [
        TargetSequence(label="stream" if s else "non-stream", word=random_word(rng), stream=s)
        for s in streams
    ]


def run_target_tier(
    config: LiveConfig,
    target: str,
    sequences: Sequence[TargetSequence],
    *,
    mode: str = "live",
    environ: Mapping[str, str],
    ci: bool = False,
    before_sequence: Callable[[TargetSequence], None] | None = None,
    redactor: Redactor | None = None,
    ceiling_margin_s: float = CEILING_MARGIN_S,
    clock: Callable[[], float] = time.monotonic,
) -> LiveRun:
    """Run every sequence through ``target`` within ``config.run_ceiling_s``; a sequence
    is killed after ``config.call_ceiling_s`` per chat plus ``ceiling_margin_s``."""
    redactor = redactor or Redactor([config.api_key])

    def run_one(seq: TargetSequence, deadline: float) -> list[CaseResult]:
        if before_sequence is not None:
            before_sequence(seq)
        ceiling = config.call_ceiling_s * seq.calls + ceiling_margin_s
        return _run_sequence(config, target, seq, environ, ci, redactor, ceiling, clock)

    def over_budget(seq: TargetSequence) -> list[CaseResult]:
        why = "not started: the run's time budget is spent"
        return [_sequence_failed(target, seq, "run_ceiling", why, redactor)]

    return run_sequences(
        config,
        sequences,
        run_one,
        over_budget,
        mode=mode,
        redactor=redactor,
        clock=clock,
        targets=(target,),
    )


# --------------------------------------------------------------------------- helpers


def _run_sequence(
    config: LiveConfig,
    target: str,
    seq: TargetSequence,
    environ: Mapping[str, str],
    ci: bool,
    redactor: Redactor,
    ceiling: float,
    clock: Callable[[], float],
) -> list[CaseResult]:
    from harness.targets import load_target
    from harness.targets.base import Job
    from harness.targets.runtime.process import ChildFailed, TargetProcess

    # Chat where the target speaks it, else its first API (an Anthropic-only client).
    apis = load_target(target).apis or ()
    job = Job(
        base_url=config.base_url,
        api=default_of(apis),
        stream=seq.stream,
        messages=({"role": "user", "content": echo_prompt(seq.word)},),
        model=config.model,
        max_tokens=config.max_tokens,
        calls=seq.calls,
        rebuild_after=seq.rebuild_after,
        settings={
            "first_byte_s": min(config.first_byte_s, config.call_ceiling_s),
            "hard_ceiling_s": config.call_ceiling_s,
        },
        time_scale=1.0,
        api_key=config.api_key,
    )
    try:
        child = TargetProcess.spawn(target, environ=environ)
    except ValueError as exc:
        return [_sequence_failed(target, seq, "target_unavailable", str(exc), redactor)]
    started: float | None = None
    stderr = ""
    try:
        child.wait_ready(time.monotonic() + CHILD_START_S)
        child.run(job.to_dict())
        first = child.wait_started(time.monotonic() + CHILD_START_S)
        if first.get("event") == "result":
            report: dict[str, Any] | None = first
        else:
            started = clock()
            report = child.wait_result(time.monotonic() + ceiling)
        stderr = child.stderr_tail(STDERR_SCAN_CHARS)
        if report is None:
            child.kill()
        else:
            child.finish(time.monotonic() + 5.0)
    except ChildFailed as exc:
        child.kill()
        report = {"status": "crashed", "error": "TargetCrashed", "message": str(exc)[-500:]}
    elapsed = 0.0 if started is None else clock() - started
    logged = [
        Finding(f.sentinel, "log", f.offset, f.excerpt) for f in find_sentinels(stderr, where="log")
    ]
    if report is None:
        why = f"no result within the ceiling ({ceiling:.0f} s for {seq.calls} chats): killed"
        return [_sequence_failed(target, seq, "hung", why, redactor, elapsed=elapsed, extra=logged)]
    status = report.get("status")
    if status == "not_applicable":  # the runner's own rule: the question does not apply
        return [
            _skipped(target, seq, str(report.get("message") or "not applicable"), False, redactor)
        ]
    if status == "skipped":
        reason = str(report.get("message") or "skipped")
        env = read_environment(environ)
        required = required_in_ci(target, ci=ci, extra_targets=env.extra_targets)
        return [_skipped(target, seq, reason, required, redactor)]
    ended = _Ended(target, seq, report, redactor, elapsed, logged)
    return [_raised(ended)] if status != "returned" else _returned(ended)


@dataclass(frozen=True)
class _Ended:
    """A sequence whose child answered: what it reported, and what its log held."""

    target: str
    seq: TargetSequence
    report: Mapping[str, Any]
    redactor: Redactor
    elapsed: float
    logged: list[Finding]


def _returned(ended: _Ended) -> list[CaseResult]:
    target, seq, report, redactor = ended.target, ended.seq, ended.report, ended.redactor
    elapsed, logged = ended.elapsed, ended.logged
    texts = list(report.get("texts") or [report.get("text")])
    results = []
    for i in range(seq.calls):
        last = i == seq.calls - 1
        text = texts[i] if i < len(texts) else None
        findings = judge_reply(
            text, report.get("finish_reason") if last else None, seq.word, check_finish=last
        )
        if text is None:
            findings = [
                Finding("missing_chat", "reply", None, f"{len(texts)} of {seq.calls} replies")
            ]
        if last:
            findings += logged  # the child's log is one text for the whole sequence
        rebuilt = seq.rebuild_after is not None and i == seq.rebuild_after
        results.append(
            CaseResult(
                name=f"{target}/{seq.label}/chat-{i + 1}" + (" (after rebuild)" if rebuilt else ""),
                ok=not findings,
                findings=redacted_findings(findings, redactor),
                elapsed_s=elapsed if last else None,
                stream=seq.stream,
                expected_word=seq.word,
                reply=None if text is None else redactor.redact(text),
                finish_reason=report.get("finish_reason") if last else None,
                attempts=report.get("attempts") if last else None,
                expect=seq.expect,
            )
        )
    return results


def _raised(ended: _Ended) -> CaseResult:
    report = ended.report
    error = str(report.get("error") or "error")
    message = str(report.get("message") or "")
    text = "\n".join([f"{error}: {message}", *map(str, report.get("causes") or ())])
    seen: set[str] = set()
    in_error = [
        f
        for f in find_sentinels(text, where="error")
        if not (f.sentinel in seen or seen.add(f.sentinel))
    ]
    findings = [Finding("raised", "error", None, error), *in_error, *ended.logged]
    return _whole_sequence_failed(
        ended.target,
        ended.seq,
        findings,
        shorten(text, 600),
        ended.redactor,
        ended.elapsed,
        report.get("attempt"),
    )


def _sequence_failed(
    target: str,
    seq: TargetSequence,
    reason: str,
    why: str,
    redactor: Redactor,
    *,
    elapsed: float = 0.0,
    extra: Sequence[Finding] = (),
) -> CaseResult:
    findings = [Finding(reason, "error", None, shorten(why, 160)), *extra]
    return _whole_sequence_failed(target, seq, findings, why, redactor, elapsed)


def _whole_sequence_failed(
    target: str,
    seq: TargetSequence,
    findings: list[Finding],
    error: str,
    redactor: Redactor,
    elapsed: float,
    attempts: int | None = None,
) -> CaseResult:
    """The one result of a sequence that failed as a whole (its chats not told apart)."""
    return CaseResult(
        name=f"{target}/{seq.label}/chats-1-{seq.calls}",
        ok=False,
        findings=redacted_findings(findings, redactor),
        elapsed_s=elapsed,
        stream=seq.stream,
        expected_word=seq.word,
        attempts=attempts,
        error=redactor.redact(error),
        expect=seq.expect,
    )


def _skipped(
    target: str, seq: TargetSequence, reason: str, ci: bool, redactor: Redactor
) -> CaseResult:
    if ci:  # CI must run every built-in target: a skip there is a failure
        return _sequence_failed(
            target, seq, "skipped", f"CI requires this target: {reason}", redactor
        )
    return CaseResult(
        name=f"{target}/{seq.label}/chats-1-{seq.calls}",
        ok=False,
        findings=(),
        elapsed_s=0.0,
        stream=seq.stream,
        expected_word=seq.word,
        error=redactor.redact(reason),
        expect=seq.expect,
        skipped=True,
    )
