"""The console report: one rich table, scenario x target, expected vs actual, verdicts.

Rows are scenarios; for every target an outcome column (the actual outcome, ✓ when it
is the expected one, ✗ and the expectation when not), the contract verdict (pass /
safe / fail and the failed checks; shown when the results carry verdicts), the
detection latency, and the
server's request count (against the budget) with the leaks. The worst outcomes
(``hung``, ``truncated_as_complete``, ``error_as_reply``) stand out in yellow even when
expected, so a reader sees at a glance what the bare SDK does where the reference
stack raises a typed error.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.report import common
from harness.report.posture import target_postures

__all__ = ["render_console", "results_table", "short_label", "verdict_cell"]

_BAD = {
    "hung",
    "truncated_as_complete",
    "error_as_reply",
    "wrong_content",
    "false_kill",
    "executed_truncated_tool_call",
}


def results_table(results: Sequence[Any], *, title: str | None = None) -> Table:
    """A rich table: scenario rows; per target the outcome (✓ when it is the expected one,
    ✗ plus the expectation when not), detection latency, and requests/budget and leaks.

    The requests cell is the server's count against the budget; when the client cannot
    account for some of them (the server saw more than the client says it made, or some
    arrived after the call was over) it adds ``(client N, M late)`` in red."""
    targets = list(dict.fromkeys(r.target for r in results))
    by_key = {(r.scenario, r.target): r for r in results}
    scenarios = list(dict.fromkeys(r.scenario for r in results))
    verdicts = common.has_verdicts(results)
    table = Table(title=title, header_style="bold")
    table.add_column("scenario", overflow="fold")
    for target in targets:
        table.add_column(
            f"{common.target_label(target)}\noutcome (✓ = as expected)", overflow="fold"
        )
        if verdicts:
            table.add_column("verdict", overflow="fold")
        table.add_column("latency", justify="right", no_wrap=True)
        table.add_column("req leaks", justify="right", no_wrap=True)
    for name in scenarios:
        row: list[Any] = [name]
        for target in targets:
            r = by_key.get((name, target))
            if r is None:
                row += [""] * (4 if verdicts else 3)
                continue
            row.append(_outcome_cell(r))
            if verdicts:
                row.append(verdict_cell(r))
            row += [_latency_cell(r), _requests_cell(r)]
        table.add_row(*row)
    return table


def verdict_cell(r: Any) -> Text:
    """``pass`` / ``safe`` / ``fail`` in colour, the failed checks under a fail."""
    v = common.verdict(r)
    if v is None:
        return Text("")
    text = Text(v.replace("_", " "), style=common.VERDICT_STYLES.get(v, ""))
    checks = common.failed_checks(r)
    if checks:
        text.append("\n" + ", ".join(checks), style="red")
    if getattr(r, "flaky", False):
        text.append("\n" + common.fmt_repeats(r), style="bold magenta")
    elif len((getattr(r, "repeats", None) or {}).get("outcomes") or ()) > 1:
        text.append("\n" + common.fmt_repeats(r), style="dim")  # outcomes varied, the verdict not
    return text


def render_console(
    results: Sequence[Any], *, console: Console | None = None, title: str | None = None
) -> None:
    """Print the table and a one-line summary."""
    console = console or Console()
    console.print(results_table(results, title=title))
    counts = common.summary_counts(results)
    # nothing ran is never a green "as expected"
    ok = counts["mismatched"] == 0 and counts["not_run"] < counts["cases"]
    style = "bold green" if ok else "bold red"
    target_floors = _target_floors(results)
    # cases at their target's floor are the second note's, not a scenario's own floor
    own = [r for r in results if r.time_scale != target_floors.get(r.target)]
    scales = Counter(r.time_scale for r in own)
    if len(scales) > 1:
        run_scale = scales.most_common(1)[0][0]
        slower = sorted(
            {f"{r.scenario} ({r.time_scale:g})" for r in own if r.time_scale != run_scale}
        )
        console.print(
            Text(
                f"time_scale {run_scale:g}, except scenarios with a min_time_scale floor (kernel "
                f"timers are real time, a relay adds latency, slow-but-alive margins): "
                f"{', '.join(slower)}",
                style="dim",
            )
        )
    floors = sorted({f"{t} ({s:g})" for t, s in target_floors.items()})
    if floors:
        console.print(
            Text(
                "targets with a time-scale floor of their own (every case at least that): "
                + ", ".join(floors),
                style="dim",
            )
        )
    if any(short_label(r.outcome).endswith("↻") for r in results):
        console.print(
            Text(
                "↻ = the client retried and every attempt failed this way (RetriesExhausted)",
                style="dim",
            )
        )
    runs = {r.repeats["runs"] for r in results if getattr(r, "repeats", None)}
    if runs:
        console.print(
            Text(
                f"--repeat: every case ran {'/'.join(str(n) for n in sorted(runs))} times; "
                "flaky = its verdict varied between runs (the run shown is the first "
                "mismatched or failing one)",
                style="dim",
            )
        )
    if counts["not_applicable"]:
        console.print(
            Text(
                "n/a = not applicable: the target does not speak the scenario's API (not run; "
                "as expected only where the scenario says not_applicable)",
                style="dim",
            )
        )
    console.print(
        Text(
            f"{counts['matched']}/{counts['gated']} cases as expected, "
            f"{counts['mismatched']} mismatched, "
            + (
                f"{counts['ungated']} with no expectation (judged by verdict only), "
                if counts["ungated"]
                else ""
            )
            + f"{counts['leaky']} with leaks"
            + (
                f", {counts['unaccounted']} with requests the client cannot account for"
                if counts["unaccounted"]
                else ""
            )
            + (f", {counts['not_run']} not run" if counts["not_run"] else "")
            + (f", {counts['reruns']} reruns of void cases" if counts["reruns"] else "")
            + (f", {counts['void']} void" if counts["void"] else ""),
            style=style,
        )
    )
    for r in results:
        if getattr(r, "void", ""):
            console.print(
                Text(
                    f"  VOID {r.scenario} [{r.target}] after {r.reruns + 1} tries: {r.void}",
                    style="bold yellow",
                )
            )
    for reason in common.not_run_reasons(results):
        console.print(Text(f"  not run: {reason}", style="yellow"))
    if common.has_verdicts(results):
        line = Text("verdicts: ")
        line.append(f"{counts['pass']} pass", style="green")
        line.append(", ")
        line.append(f"{counts['safe']} safe", style="yellow")
        line.append(", ")
        line.append(f"{counts['fail']} fail", style="bold red" if counts["fail"] else "")
        if counts["not_exercised"]:
            line.append(f", {counts['not_exercised']} not exercised", style="cyan")
        if counts["flaky"]:
            line.append(f", {counts['flaky']} flaky", style="bold magenta")
        line.append(" (the expectation, not the verdict, decides the exit status)", style="dim")
        console.print(line)
        for reason in common.not_exercised_reasons(results):
            console.print(Text(f"  not exercised: {reason}", style="cyan"))
    for target, note in target_postures(results).items():
        console.print(Text(f"posture {target}: {note}", style="dim"))
    for r in results:
        if not r.matched:
            console.print(
                Text(
                    f"  MISMATCH {r.scenario} [{r.target}]: expected {r.expected}, got "
                    f"{r.outcome.label}{' (over request budget)' if r.over_budget else ''}"
                    f" -- {r.message}",
                    style="red",
                )
            )
            cause = common.fmt_cause(r)
            if cause and cause not in r.message:
                console.print(Text(f"    cause: {cause}", style="red"))


def _outcome_cell(r: Any) -> Text:
    label = short_label(r.outcome)
    if not r.matched:
        text = Text(f"{label} ✗", style="bold red")
        text.append(
            f"\nexpected {r.expected}" + (" within budget" if r.over_budget else ""), style="red"
        )
        return text
    mark = " ✓" if getattr(r, "gated", True) else ""  # no expectation: nothing to tick
    if r.outcome.kind == "not_applicable":
        return Text(f"n/a{mark}", style="dim")
    return Text(f"{label}{mark}", style="bold yellow" if r.outcome.kind in _BAD else "green")


def short_label(outcome: Any) -> str:
    """``error(RetriesExhausted:StreamIdleTimeout)`` -> ``error(StreamIdleTimeout)↻``: the
    last attempt's error, marked as retried to exhaustion (the JSON keeps the full name)."""
    label = outcome.label
    prefix = "error(RetriesExhausted:"
    if label.startswith(prefix):
        return f"error({label[len(prefix) :]}↻"
    return label


def _latency_cell(r: Any) -> str:
    if r.outcome.kind == "not_applicable":
        return ""
    if r.outcome.kind == "hung":
        return f">{common.fmt_seconds(r.ceiling_s)}"
    return common.fmt_seconds(r.latency_s if r.latency_s is not None else None)


def _requests_cell(r: Any) -> Text:
    if r.outcome.kind == "not_applicable":
        return Text("")
    req = (
        "-"
        if r.requests is None
        else (str(r.requests) if r.max_requests is None else f"{r.requests}/{r.max_requests}")
    )
    text = Text(req, style="bold red" if r.over_budget else "")
    if "accounting" in common.failed_checks(r):  # the client claims attempts the server never saw
        text.append(f" (claims {r.attempts})", style="bold red")
    extra = getattr(r, "unaccounted_requests", 0)
    if extra:
        late = getattr(r, "late_requests", None)
        said = "?" if r.attempts is None else str(r.attempts)
        text.append(f" (client {said}{f', {late} late' if late else ''})", style="bold red")
    leaks = common.fmt_leaks(r)
    text.append(f" {leaks}", style="bold red" if leaks not in ("0", "?") else "dim")
    return text


def _target_floors(results: Sequence[Any]) -> dict[str, float]:
    """Each target whose class raises the time scale, with its floor."""
    from harness.targets import load_target  # noqa: PLC0415 - report only when asked

    floors: dict[str, float] = {}
    for target in {r.target for r in results}:
        try:
            floor = float(load_target(target).min_time_scale)
        except (ImportError, AttributeError, ValueError):
            continue  # a result from another machine's target: nothing to say
        if floor > 0:
            floors[target] = floor
    return floors
