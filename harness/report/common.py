"""Small formatting helpers shared by the report renderers."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from typing import Any

from harness.outcome import NOT_RUN

__all__ = [
    "VERDICT_STYLES",
    "evidence_lines",
    "failed_checks",
    "fmt_cause",
    "fmt_latency",
    "fmt_leaks",
    "fmt_repeats",
    "fmt_seconds",
    "fmt_verdict",
    "has_verdicts",
    "not_exercised_reasons",
    "not_run_reasons",
    "ran",
    "summary_counts",
    "target_label",
    "verdict",
]

#: rich styles of the contract verdicts.
VERDICT_STYLES = {
    "pass": "green",
    "safe": "yellow",
    "fail": "bold red",
    "not_run": "dim",
    "not_exercised": "cyan",
}


def fmt_seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) < 1:
        return f"{value * 1000:.0f} ms"
    return f"{value:.2f} s"


def fmt_latency(result: Any) -> str:
    return fmt_seconds(result.latency_s)


def fmt_leaks(result: Any) -> str:
    return "?" if result.leaks is None else str(result.leaks)


def verdict(result: Any) -> str | None:
    """The contract verdict of a result (``pass`` / ``safe`` / ``fail``), None when the
    result has none (a report written before verdicts existed)."""
    return getattr(result, "verdict", None) or None


def failed_checks(result: Any) -> tuple[str, ...]:
    return tuple(getattr(result, "failed_checks", None) or ())


def has_verdicts(results: Sequence[Any]) -> bool:
    return any(verdict(r) is not None for r in results)


def fmt_verdict(result: Any) -> str:
    """``fail (bound, alive_after)``, ``safe``, ``pass``; ``-`` without a verdict."""
    v = verdict(result)
    if v is None:
        return "-"
    checks = failed_checks(result)
    v = v.replace("_", " ")  # "not run"
    text = f"{v} ({', '.join(checks)})" if checks else v
    return f"{text} [{fmt_repeats(result)}]" if getattr(result, "flaky", False) else text


def fmt_repeats(result: Any) -> str:
    """``flaky: 3 pass, 1 fail of 4 runs; ok 3, false_kill 1`` (a case whose verdict varied
    under ``--repeat``), ``4 runs: ok 4`` for a steady one; ``""`` for a case run once."""
    repeats = getattr(result, "repeats", None)
    if not repeats:
        return ""
    outcomes = ", ".join(f"{k} {n}" for k, n in repeats["outcomes"].items())
    if not getattr(result, "flaky", False):
        return f"{repeats['runs']} runs: {outcomes}"
    verdicts = ", ".join(f"{n} {k}" for k, n in repeats["verdicts"].items())
    return f"flaky: {verdicts} of {repeats['runs']} runs; {outcomes}"


def ran(result: Any) -> bool:
    """The one counting rule for cases that did not run (a missing tier: ``skipped``; a
    target that does not speak the API: ``not_applicable``): every report counts them
    as ``not_run``, never as expected and never under a verdict."""
    return result.outcome.kind not in NOT_RUN


def summary_counts(results: Sequence[Any]) -> dict[str, int]:
    """cases; not_run (never ran: :func:`ran`), of which skipped and not_applicable;
    gated (ran, with an expectation: the "as expected" denominator), matched (of those,
    as expected), ungated (ran, no expectation: judged by verdict only), mismatched (any
    case whose expectation failed, a not-run one that CI requires included), leaky,
    unaccounted (the server saw requests the client does not account for), and per
    contract verdict ``pass``, ``safe``, ``fail``, ``not_exercised`` (ran, but its fault
    never fired: neither pass nor fail), and ``flaky`` (cases whose verdict varied under
    ``--repeat``); void (the harness's own lateness voided every try of the case) and
    reruns (runs again because an earlier try was void)."""
    run = [r for r in results if ran(r)]
    return {
        "cases": len(results),
        "not_run": len(results) - len(run),
        "skipped": sum(1 for r in results if r.outcome.kind == "skipped"),
        "not_applicable": sum(1 for r in results if r.outcome.kind == "not_applicable"),
        "unaccounted": sum(1 for r in run if getattr(r, "unaccounted_requests", 0)),
        "gated": sum(1 for r in run if getattr(r, "gated", True)),
        # A case with no expectation is judged by its verdict alone: never "as expected".
        "matched": sum(1 for r in run if r.matched and getattr(r, "gated", True)),
        "ungated": sum(1 for r in run if not getattr(r, "gated", True)),
        "mismatched": sum(1 for r in results if not r.matched),
        "leaky": sum(1 for r in run if r.leaks is not None and r.leaks.total > 0),
        "pass": sum(1 for r in run if verdict(r) == "pass"),
        "safe": sum(1 for r in run if verdict(r) == "safe"),
        "fail": sum(1 for r in run if verdict(r) == "fail"),
        "not_exercised": sum(1 for r in run if verdict(r) == "not_exercised"),
        "flaky": sum(1 for r in run if getattr(r, "flaky", False)),
        # the harness broke a timing promise in every try (harness.lateness): no verdict
        "void": sum(1 for r in run if getattr(r, "void", "")),
        "reruns": sum(getattr(r, "reruns", 0) for r in run),
    }


@functools.cache
def target_label(target: str) -> str:
    """How reports name a ``-t`` target: its class's ``name``, with the import path when
    they differ (``my-agent (mypkg.agent:MyAgent)``); the name as given otherwise, also
    for a result from a machine where its class cannot be loaded."""
    if ":" not in target or target.startswith(("mutant:", "command:")):
        return target
    from harness.targets import load_target  # noqa: PLC0415 - only for path targets

    try:
        name = getattr(load_target(target), "name", "") or ""
    except (ImportError, AttributeError, ValueError):
        return target
    return f"{name} ({target})" if name and name != target else target


def not_run_reasons(results: Sequence[Any]) -> list[str]:
    """``12 skipped: kernel netem needs root ...``, ``28 not applicable: ...``: the cases
    that did not run, counted per reason, most first."""
    reasons: Counter[str] = Counter()
    for r in results:
        if r.outcome.kind == "skipped":
            why = str(r.outcome.detail or r.message or "").split("\n", 1)[0]
            for prefix in ("skipped: ", "CI requires this tier: "):
                why = why.removeprefix(prefix)
            reasons[f"skipped: {why}" if why else "skipped"] += 1
        elif r.outcome.kind == "not_applicable":
            why = str(r.outcome.detail or r.message or "").split("\n", 1)[0]
            if not why or "does not speak" in why:
                why = "the target does not speak the scenario's API"
            reasons[f"not applicable: {why[:160]}"] += 1
        elif r.outcome.kind == "did_not_start":
            why = str(r.outcome.detail or r.message or "").split("\n", 1)[0][:160]
            reasons[f"did not start ({r.target}): {why}"] += 1
    return [f"{n} {why}" for why, n in reasons.most_common()]


def not_exercised_reasons(results: Sequence[Any]) -> list[str]:
    """``3 the rule matches attempt 2; the client made 1 request``: the cases that ran
    but never met their fault, counted per reason, most first."""
    reasons = Counter(
        str(getattr(r, "not_exercised", "") or "unknown")
        for r in results
        if verdict(r) == "not_exercised"
    )
    return [f"{n} {why}" for why, n in reasons.most_common()]


def fmt_cause(result: Any) -> str:
    """The exception chain behind an error outcome, one line: ``APIConnectionError:
    Connection error. <- RuntimeError: Cannot send a request...`` (``""``: none)."""
    chain = getattr(result, "chain", None) or ()
    return " <- ".join(f"{c.get('type')}: {c.get('message')}".rstrip(": ") for c in chain)


def evidence_lines(result: Any) -> list[str]:
    """``check: evidence`` for each failed check (the check alone where none was kept)."""
    evidence = getattr(result, "evidence", None) or {}
    return [f"{c}: {evidence[c]}" if c in evidence else c for c in failed_checks(result)]
