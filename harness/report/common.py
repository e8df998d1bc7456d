"""Small formatting helpers shared by the report renderers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

__all__ = [
    "VERDICT_STYLES",
    "evidence_lines",
    "failed_checks",
    "fmt_cause",
    "fmt_latency",
    "fmt_leaks",
    "fmt_seconds",
    "fmt_verdict",
    "has_verdicts",
    "not_run_reasons",
    "ran",
    "summary_counts",
    "verdict",
]

#: rich styles of the contract verdicts.
VERDICT_STYLES = {"pass": "green", "safe": "yellow", "fail": "bold red", "not_run": "dim"}


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
    return f"{v} ({', '.join(checks)})" if checks else v


def ran(result: Any) -> bool:
    """The one counting rule for cases that did not run (a missing tier: ``skipped``; a
    target that does not speak the API: ``not_applicable``): every report counts them
    as ``not_run``, never as expected and never under a verdict."""
    return result.outcome.kind not in ("skipped", "not_applicable")


def summary_counts(results: Sequence[Any]) -> dict[str, int]:
    """cases; not_run (never ran: :func:`ran`), of which skipped and not_applicable;
    gated (ran, with an expectation: the "as expected" denominator), matched (of those,
    as expected), ungated (ran, no expectation: judged by verdict only), mismatched (any
    case whose expectation failed, a not-run one that CI requires included), leaky,
    unaccounted (the server saw requests the client does not account for), and per
    contract verdict ``pass``, ``safe``, ``fail``."""
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
    }


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
            reasons["not applicable: the target does not speak the scenario's API"] += 1
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
