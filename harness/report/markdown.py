"""The Markdown report: a summary line and the scenario x target table (for PR comments
and the GitHub job summary). When the results carry contract verdicts, each target has a
verdict column (pass / safe / fail with the failed checks) and the summary counts them;
the expectation still decides the ✅/❌ of the run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.report import common
from harness.report.posture import target_postures

__all__ = ["VERDICT_MARKS", "render_markdown", "write_markdown"]

VERDICT_MARKS = {"pass": "✅", "safe": "🟡", "fail": "❌"}


def render_markdown(results: Sequence[Any], *, title: str = "Transport fault catalog") -> str:
    counts = common.summary_counts(results)
    mark = "✅" if counts["mismatched"] == 0 and counts["not_run"] < counts["cases"] else "❌"
    targets = list(dict.fromkeys(r.target for r in results))
    by_key = {(r.scenario, r.target): r for r in results}
    verdicts = common.has_verdicts(results)
    per_target = (
        "expected | {t} actual | verdict | latency"
        if verdicts
        else "expected | {t} actual | latency"
    )
    lines = [
        f"## {title}",
        "",
        f"{mark} {counts['matched']}/{counts['gated']} cases as expected, "
        + (f"{counts['ungated']} judged by verdict only, " if counts["ungated"] else "")
        + f"{counts['mismatched']} mismatched, {counts['leaky']} with leaks"
        + (f", {counts['not_run']} not run" if counts["not_run"] else "")
        + (f", {counts['reruns']} reruns of void cases" if counts["reruns"] else "")
        + (f", {counts['void']} void (the harness was late in every try)" if counts["void"] else "")
        + ".",
    ]
    reasons = common.not_run_reasons(results)
    if reasons:
        lines.append("Not run: " + "; ".join(reasons) + ".")
    if verdicts:
        lines.append(
            f"Verdicts: {counts['pass']} pass, {counts['safe']} safe, {counts['fail']} fail"
            + (f", {counts['not_run']} not run" if counts["not_run"] else "")
            + (f", {counts['not_exercised']} not exercised" if counts["not_exercised"] else "")
            + (f", {counts['flaky']} flaky." if counts["flaky"] else ".")
        )
        exercised = common.not_exercised_reasons(results)
        if exercised:
            lines.append("Not exercised: " + "; ".join(exercised) + ".")
    lines += [
        "",
        "| scenario | "
        + " | ".join(f"{common.target_label(t)} " + per_target.format(t=t) for t in targets)
        + " |",
        "|---|" + ("---|---|---|---:|" if verdicts else "---|---|---:|") * len(targets),
    ]
    for name in dict.fromkeys(r.scenario for r in results):
        cells = []
        for t in targets:
            r = by_key.get((name, t))
            if r is None:
                cells += [""] * (4 if verdicts else 3)
                continue
            actual = f"`{r.outcome.label}`" + ("" if r.matched else " ❌")
            latency = (
                f">{common.fmt_seconds(r.ceiling_s)}"
                if r.outcome.kind == "hung"
                else common.fmt_seconds(r.latency_s)
            )
            cells += [f"`{r.expected}`", actual]
            if verdicts:
                cells.append(_verdict_cell(r))
            cells.append(latency)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    postures = target_postures(results)
    if postures:
        lines += [""] + [f"Posture of {t}: {note}." for t, note in postures.items()]
    bad = [r for r in results if not r.matched]
    if bad:
        lines += ["", "### Mismatches", ""]
        for r in bad:
            message = r.message.replace("|", "\\|").replace("\n", " ")
            lines.append(
                f"- **{r.scenario}** [{r.target}]: expected `{r.expected}`, got "
                f"`{r.outcome.label}` (requests {r.requests}, leaks {common.fmt_leaks(r)}) {message}"
            )
            lines += _cause_lines(r)
    failing = [r for r in results if common.verdict(r) == "fail"]
    if failing:
        lines += ["", "### Failing verdicts", ""]
        for r in failing:
            lines.append(
                f"- **{r.scenario}** [{r.target}]: `{r.outcome.label}`, failed checks: "
                + ", ".join(f"`{c}`" for c in common.failed_checks(r))
            )
            lines += [f"  - {_md(line)}" for line in common.evidence_lines(r) if ": " in line]
            lines += _cause_lines(r)
    return "\n".join(lines) + "\n"


def write_markdown(
    path: str | Path, results: Sequence[Any], *, title: str = "Transport fault catalog"
) -> None:
    Path(path).write_text(render_markdown(results, title=title), encoding="utf-8")


def _verdict_cell(r: Any) -> str:
    v = common.verdict(r)
    if v is None:
        return ""
    checks = common.failed_checks(r)
    label = v.replace("_", " ")
    cell = f"{VERDICT_MARKS.get(v, '')} {label}".strip() + (
        f" ({', '.join(checks)})" if checks else ""
    )
    return cell + (f" **{common.fmt_repeats(r)}**" if getattr(r, "flaky", False) else "")


def _cause_lines(r: Any) -> list[str]:
    cause = common.fmt_cause(r)
    return [f"  - cause: {_md(cause)}"] if cause else []


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
