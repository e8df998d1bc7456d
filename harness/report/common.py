"""Small formatting helpers shared by the report renderers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["fmt_latency", "fmt_leaks", "fmt_seconds", "summary_counts"]


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


def summary_counts(results: Sequence[Any]) -> dict[str, int]:
    """cases, matched, mismatched, leaky (cases with any leak), not_applicable (never run:
    the target does not speak the scenario's API), unaccounted (cases where the server saw
    requests the client does not account for)."""
    return {
        "cases": len(results),
        "not_applicable": sum(1 for r in results if r.outcome.kind == "not_applicable"),
        "unaccounted": sum(1 for r in results if getattr(r, "unaccounted_requests", 0)),
        # A case with no expectation is judged by its verdict alone: never "as expected".
        "matched": sum(1 for r in results if r.matched and getattr(r, "gated", True)),
        "ungated": sum(1 for r in results if not getattr(r, "gated", True)),
        "mismatched": sum(1 for r in results if not r.matched),
        "leaky": sum(1 for r in results if r.leaks is not None and r.leaks.total > 0),
    }
