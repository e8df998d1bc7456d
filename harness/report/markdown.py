"""The Markdown report: a summary line and the scenario x target table (for PR comments
and the GitHub job summary)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.report.common import fmt_leaks, fmt_seconds, summary_counts

__all__ = ["render_markdown", "write_markdown"]


def render_markdown(results: Sequence[Any], *, title: str = "Transport fault catalog") -> str:
    counts = summary_counts(results)
    mark = "✅" if counts["mismatched"] == 0 else "❌"
    targets = list(dict.fromkeys(r.target for r in results))
    by_key = {(r.scenario, r.target): r for r in results}
    lines = [
        f"## {title}",
        "",
        f"{mark} {counts['matched']}/{counts['cases'] - counts['ungated']} cases as expected, "
        + (f"{counts['ungated']} judged by verdict only, " if counts["ungated"] else "")
        + f"{counts['mismatched']} mismatched, {counts['leaky']} with leaks"
        + (
            f", {counts['not_applicable']} not applicable (target does not speak the API)."
            if counts["not_applicable"]
            else "."
        ),
        "",
        "| scenario | "
        + " | ".join(f"{t} expected | {t} actual | latency" for t in targets)
        + " |",
        "|---|" + "---|---|---:|" * len(targets),
    ]
    for name in dict.fromkeys(r.scenario for r in results):
        cells = []
        for t in targets:
            r = by_key.get((name, t))
            if r is None:
                cells += ["", "", ""]
                continue
            actual = f"`{r.outcome.label}`" + ("" if r.matched else " ❌")
            latency = (
                f">{fmt_seconds(r.ceiling_s)}"
                if r.outcome.kind == "hung"
                else fmt_seconds(r.latency_s)
            )
            cells += [f"`{r.expected}`", actual, latency]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    bad = [r for r in results if not r.matched]
    if bad:
        lines += ["", "### Mismatches", ""]
        for r in bad:
            message = r.message.replace("|", "\\|").replace("\n", " ")
            lines.append(
                f"- **{r.scenario}** [{r.target}]: expected `{r.expected}`, got "
                f"`{r.outcome.label}` (requests {r.requests}, leaks {fmt_leaks(r)}) {message}"
            )
    return "\n".join(lines) + "\n"


def write_markdown(
    path: str | Path, results: Sequence[Any], *, title: str = "Transport fault catalog"
) -> None:
    Path(path).write_text(render_markdown(results, title=title), encoding="utf-8")
