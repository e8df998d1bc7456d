"""``harness mutants``: run the catalog against every mutant stack and score the gate.

For each scenario with a ``reference`` expectation, the unmutated stack under the
invariant checks (``mutant:none``) and every mutant (``mutant:<name>``, see
:mod:`harness.targets.mutants`) run the scenario. A mutant is *killed* by a scenario when
its outcome does not match the scenario's ``reference`` expectation (or it blew the
request budget) while the baseline did match it. A scenario the baseline fails kills
nothing: it is reported as unreliable. The mutation score is killed mutants / mutants.
The default catalog leaves out the kernel (network namespace) scenarios, which run in real
time and need root; ``--kernel`` adds them.

Output: one line per mutant (killed by which scenarios), the score, and optionally the
whole matrix as JSON (``--json PATH``) and a Markdown table (``--markdown PATH``). Exit status 0 when every mutant is killed and
the baseline matched every scenario, 1 otherwise, 2 on bad input.

Not here: the mutants themselves (``harness.targets.mutants``), running one case
(``harness.runner``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from harness.outcome import Expected
from harness.paths import CATALOG_DIR
from harness.runner import DEFAULT_JOBS, DEFAULT_TIME_SCALE, CaseResult, RunSettings, run_cases
from harness.scenario import Scenario, ScenarioError, load_catalog, select
from harness.targets.mutants import BASELINE_TARGET, MUTANTS

__all__ = ["MutationReport", "add_arguments", "main", "markdown", "mutation_report", "run_mutants"]


@dataclass(frozen=True)
class MutationReport:
    """Which scenarios kill which mutant, judged against the ``reference`` expectations."""

    mutants: tuple[str, ...]
    scenarios: tuple[str, ...]
    #: mutant -> scenarios that kill it (only scenarios the baseline passes)
    kills: dict[str, tuple[str, ...]]
    #: scenarios where the baseline did not match the reference expectation
    unreliable: dict[str, str] = field(default_factory=dict)
    #: (scenario, mutant) -> outcome label, for the matrix
    outcomes: dict[tuple[str, str], str] = field(default_factory=dict)
    #: (scenario, target) -> real seconds the case took (where the wall time goes)
    elapsed: dict[tuple[str, str], float] = field(default_factory=dict)

    @property
    def killed(self) -> tuple[str, ...]:
        return tuple(m for m in self.mutants if self.kills.get(m))

    @property
    def survivors(self) -> tuple[str, ...]:
        return tuple(m for m in self.mutants if not self.kills.get(m))

    @property
    def score(self) -> float:
        return len(self.killed) / len(self.mutants) if self.mutants else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "killed": list(self.killed),
            "survivors": list(self.survivors),
            "kills": {m: list(s) for m, s in self.kills.items()},
            "unreliable": dict(self.unreliable),
            "matrix": [
                {"scenario": s, "target": t, "outcome": o, "elapsed_s": self.elapsed.get((s, t))}
                for (s, t), o in sorted(self.outcomes.items())
            ],
        }

    def slowest(self, n: int = 5) -> list[tuple[str, float]]:
        """The ``n`` scenarios that took the most case-seconds over all stacks."""
        per: dict[str, float] = {}
        for (scenario, _), seconds in self.elapsed.items():
            per[scenario] = per.get(scenario, 0.0) + seconds
        return sorted(per.items(), key=lambda item: -item[1])[:n]


def mutation_report(
    scenarios: Sequence[Scenario], results: Sequence[CaseResult], mutants: Sequence[str]
) -> MutationReport:
    """Judge ``results`` (baseline and mutant cases) against each scenario's reference
    expectation. Pure: no I/O."""
    by_case = {(r.scenario, r.target): r for r in results}
    elapsed = {k: r.elapsed_s for k, r in by_case.items() if r.elapsed_s is not None}
    kills: dict[str, list[str]] = {m: [] for m in mutants}
    unreliable: dict[str, str] = {}
    outcomes: dict[tuple[str, str], str] = {}
    for scenario in scenarios:
        expected = scenario.expected_for("reference")
        if expected is None:
            continue
        base = by_case.get((scenario.name, BASELINE_TARGET))
        if base is not None:
            outcomes[(scenario.name, BASELINE_TARGET)] = base.outcome.label
        if base is None or not _passes(base, expected):
            got = base.outcome.label if base is not None else "not run"
            unreliable[scenario.name] = f"baseline got {got}, reference expects {expected}"
            continue
        for mutant in mutants:
            result = by_case.get((scenario.name, _target_of(mutant)))
            if result is None:
                continue
            outcomes[(scenario.name, _target_of(mutant))] = result.outcome.label
            if not _passes(result, expected):
                kills[mutant].append(scenario.name)
    return MutationReport(
        mutants=tuple(mutants),
        scenarios=tuple(s.name for s in scenarios),
        kills={m: tuple(s) for m, s in kills.items()},
        unreliable=unreliable,
        outcomes=outcomes,
        elapsed=elapsed,
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "scenarios", nargs="*", help="scenario names or globs (default: the whole catalog)"
    )
    parser.add_argument(
        "--mutant",
        action="append",
        default=None,
        metavar="NAME",
        help=f"run only this mutant (repeatable); allowed: {', '.join(MUTANTS)}",
    )
    parser.add_argument(
        "--target",
        "-t",
        action="append",
        default=[],
        metavar="package.module:Class",
        help="also run this stack as a mutant (repeatable): a known-bad variant of your own, "
        "judged by the reference expectations like the built-in mutants",
    )
    parser.add_argument(
        "--catalog", default=str(CATALOG_DIR), help="scenario directory (default: %(default)s)"
    )
    parser.add_argument(
        "--time-scale",
        type=float,
        default=DEFAULT_TIME_SCALE,
        help="scenario seconds -> real seconds (default: %(default)s)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=DEFAULT_JOBS,
        help="parallel workers (default: %(default)s, two per core up to 8): the cases "
        "mostly wait on scaled deadlines, so more workers than cores keep the cores busy",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the report as JSON to PATH")
    parser.add_argument(
        "--markdown", metavar="PATH", help="also write a Markdown table (README, gate report)"
    )
    parser.add_argument(
        "--kernel",
        action="store_true",
        help="also run the kernel (network namespace) scenarios: real time, root only",
    )


def run_mutants(args: argparse.Namespace, *, out: TextIO = sys.stdout) -> int:
    """Run the catalog against the baseline and every (selected) mutant; print the kills
    and the score. Returns the exit status."""
    from harness.targets import is_target

    extra = list(getattr(args, "target", None) or [])
    mutants = list(args.mutant or ([] if extra else MUTANTS))
    unknown = [m for m in mutants if m not in MUTANTS]
    bad = [t for t in extra if not is_target(t) or t.startswith("mutant:") or ":" not in t]
    if bad:
        print(
            f"error: --target {bad[0]!r} is not valid; allowed: package.module:Class",
            file=sys.stderr,
        )
        return 2
    mutants += [t for t in extra if t not in mutants]
    if unknown:
        print(
            f"error: --mutant {unknown[0]!r} is not valid; allowed: {', '.join(MUTANTS)}",
            file=sys.stderr,
        )
        return 2
    try:
        settings = RunSettings(time_scale=args.time_scale, jobs=args.jobs)
        scenarios = select(load_catalog(Path(args.catalog)), args.scenarios)
    except (ScenarioError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    scenarios = [s for s in scenarios if s.expected_for("reference") is not None]
    if not args.kernel:
        scenarios = [s for s in scenarios if _backend(s) != "kernel"]
    targets = [BASELINE_TARGET, *(_target_of(m) for m in mutants)]
    # Target-major: the runner's longest-first sort is stable, so cases of equal estimate
    # stay grouped by target and a worker reuses its clean child for the next case
    # (scenario-major order switched target on nearly every case: a child start each).
    cases = [(s, t) for t in targets for s in scenarios]
    print(
        f"mutants: {len(mutants)} x {len(scenarios)} scenarios (+ baseline), "
        f"time scale {settings.time_scale:g}, {settings.jobs} worker(s)",
        file=out,
        flush=True,
    )
    results = run_cases(cases, settings=settings)
    report = mutation_report(scenarios, results, mutants)
    render(report, out=out)
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    if args.markdown:
        Path(args.markdown).write_text(markdown(report), encoding="utf-8")
    return 0 if not report.survivors and not report.unreliable else 1


def render(report: MutationReport, *, out: TextIO) -> None:
    width = max((len(m) for m in report.mutants), default=10)
    for mutant in report.mutants:
        kills = report.kills.get(mutant) or ()
        status = "killed " if kills else "SURVIVED"
        shown = ", ".join(kills[:6]) + (f", +{len(kills) - 6} more" if len(kills) > 6 else "")
        print(f"  {mutant:<{width}}  {status}  {shown or '-'}", file=out)
    for name, why in sorted(report.unreliable.items()):
        print(f"  baseline mismatch in {name}: {why} (its kills are not counted)", file=out)
    if report.elapsed:
        slow = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in report.slowest())
        print(
            f"  time: {sum(report.elapsed.values()):.0f} case-seconds; slowest: {slow}",
            file=out,
        )
    killed, total = len(report.killed), len(report.mutants)
    print(f"mutation score: {killed}/{total} = {report.score:.0%}", file=out, flush=True)


def markdown(report: MutationReport) -> str:
    """The report as a Markdown table: one row per mutant, then the score."""
    lines = ["| mutant | the bug it puts back | seen in | killed by |", "|---|---|---|---|"]
    for name in report.mutants:
        m = MUTANTS.get(name)
        kills = report.kills.get(name) or ()
        killed_by = ", ".join(f"`{k}`" for k in kills) if kills else "**survived**"
        bug, seen = (m.bug, m.seen_in) if m is not None else ("(your own stack)", "-")
        lines.append(f"| `{name}` | {bug} | {seen} | {killed_by} |")
    lines.append("")
    lines.append(
        f"Mutation score: {len(report.killed)}/{len(report.mutants)} = {report.score:.0%}"
        f" ({len(report.scenarios)} scenarios)."
    )
    for name, why in sorted(report.unreliable.items()):
        lines.append(f"Baseline mismatch in `{name}`: {why}.")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="harness mutants", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run_mutants(parser.parse_args(argv))


def _target_of(mutant: str) -> str:
    """The target a mutant runs as: ``mutant:<name>``, or a ``module:Class`` as given."""
    return MUTANTS[mutant].target if mutant in MUTANTS else mutant


def _backend(scenario: Scenario) -> str:
    return str(getattr(getattr(scenario, "network", None), "backend", "server"))


def _passes(result: CaseResult, expected: Expected) -> bool:
    return expected.matches(result.outcome) and not result.over_budget


if __name__ == "__main__":
    raise SystemExit(main())
