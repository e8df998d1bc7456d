"""Small formatting helpers shared by the report renderers."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

__all__ = [
    "VERDICT_STYLES",
    "failed_checks",
    "fmt_latency",
    "fmt_leaks",
    "fmt_seconds",
    "fmt_verdict",
    "has_verdicts",
    "summary_counts",
    "target_label",
    "verdict",
]

#: rich styles of the contract verdicts.
VERDICT_STYLES = {"pass": "green", "safe": "yellow", "fail": "bold red"}


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
    return f"{v} ({', '.join(checks)})" if checks else v


def summary_counts(results: Sequence[Any]) -> dict[str, int]:
    """cases, matched, mismatched, leaky (cases with any leak), not_applicable (never run:
    the target does not speak the scenario's API), unaccounted (cases where the server saw
    requests the client does not account for), and per contract verdict ``pass``,
    ``safe``, ``fail``."""
    return {
        "cases": len(results),
        "not_applicable": sum(1 for r in results if r.outcome.kind == "not_applicable"),
        "unaccounted": sum(1 for r in results if getattr(r, "unaccounted_requests", 0)),
        # A case with no expectation is judged by its verdict alone: never "as expected".
        "matched": sum(1 for r in results if r.matched and getattr(r, "gated", True)),
        "ungated": sum(1 for r in results if not getattr(r, "gated", True)),
        "mismatched": sum(1 for r in results if not r.matched),
        "leaky": sum(1 for r in results if r.leaks is not None and r.leaks.total > 0),
        "pass": sum(1 for r in results if verdict(r) == "pass"),
        "safe": sum(1 for r in results if verdict(r) == "safe"),
        "fail": sum(1 for r in results if verdict(r) == "fail"),
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
