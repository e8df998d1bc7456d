"""``harness run``, ``harness list`` and ``harness explain``: the catalog against targets.

Not here: the runner (``harness.runner``), rendering (``harness.report``).
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Sequence
from typing import Any

from harness.cli import common
from harness.cli.availability import require_runnable

__all__ = ["register"]


def register(commands: Any) -> None:
    run = commands.add_parser(
        "run",
        help="run scenarios against targets and print the matrix",
        description="Run catalog scenarios on the embedded fault server against "
        "each target; with no SCENARIO, the whole catalog.",
    )
    common.add_selection(run, default_targets="reference and openai-sdk")
    run.add_argument(
        "--shard", metavar="K/N", help="run the K-th of N deterministic slices of the cases"
    )
    common.add_report_options(run, json_help="write the JSON report (mergeable shards)")
    run.add_argument(
        "--fail-on-leaks",
        action="store_true",
        help="also exit 1 when a case leaves descriptors, threads or sockets behind",
    )
    run.add_argument(
        "--expectations",
        action="append",
        default=[],
        metavar="FILE",
        help="gate on this expectations overlay (repeatable; adds to or overrides the "
        "scenarios' own; shipped overlays for the chosen targets apply without it)",
    )
    run.add_argument(
        "--write-expectations",
        metavar="FILE",
        help="write what the (one) target did as an expectations overlay",
    )
    run.add_argument(
        "--repeat",
        type=common.positive_int,
        default=1,
        metavar="N",
        help="run every case N times and report per case how often each outcome and "
        "verdict came out; a case whose verdict varies is flagged flaky (default: 1)",
    )
    run.add_argument(
        "--dump-stacks",
        action="store_true",
        help="before stopping a hung target, print where its threads were stuck",
    )
    run.set_defaults(func=cmd_run)

    lst = commands.add_parser(
        "list", help="list the catalog", description="List catalog scenarios."
    )
    lst.add_argument(
        "--scenarios-dir", metavar="DIR", help="scenario directory (default: the catalog)"
    )
    lst.set_defaults(func=cmd_list)

    explain = commands.add_parser(
        "explain",
        help="run one scenario and print its timeline",
        description="Run one scenario and print server and client events on "
        "one time axis, the fault marked.",
    )
    explain.add_argument("scenario", metavar="SCENARIO")
    common.add_target_options(explain, default="reference and openai-sdk")
    explain.set_defaults(func=cmd_explain)


def cmd_run(args: argparse.Namespace) -> int:
    # First: a bad path costs nothing, not a whole run.
    common.check_report_paths(args, ("json", "junit", "markdown", "write-expectations"))

    from harness.repeats import fold, repeat_cases
    from harness.report import render_console, write_junit, write_markdown
    from harness.report.json_report import write_json
    from harness.runner import RunSettings, Shard, plan

    targets = common.selected_targets(args)
    require_runnable(targets)
    if args.write_expectations and len(targets) != 1:
        raise common.UsageError(
            f"--write-expectations records one target; got {len(targets)}: {', '.join(targets)}"
        )
    scenarios = common.with_overlays(
        args, common.exclude(common.load_scenarios(args), args.exclude), targets, args.expectations
    )
    shard = Shard.parse(args.shard) if args.shard else None
    settings = RunSettings(
        time_scale=common.time_scale(args),
        jobs=common.jobs(args),
        keep_timeline=bool(args.json),
        dump_hung_stacks=args.dump_stacks,
    )
    cases = plan(scenarios, targets, shard=shard)
    if not cases:
        raise common.UsageError("no case to run: no scenario selected")
    started = time.monotonic()
    runs = common.run_with_progress(repeat_cases(cases, args.repeat), settings, quiet=args.quiet)
    results = fold(runs)  # one result per case; with --repeat, the spread on it
    # One target's whole run: its wall time, for a scorecard made later with --from (a
    # joint or sharded run has none of its own per target).
    wall_s = {targets[0]: time.monotonic() - started} if len(targets) == 1 and not shard else None
    render_console(
        results,
        console=common.out_console(),
        title=f"time_scale={settings.time_scale}" + (f"  shard {shard}" if shard else ""),
    )
    if args.json:
        write_json(args.json, results, shard=str(shard) if shard else None, wall_s=wall_s)
    if args.junit:
        write_junit(args.junit, results)
    if args.markdown:
        write_markdown(args.markdown, results)
    if args.write_expectations:
        from harness.expectations import write_overlay

        write_overlay(args.write_expectations, targets[0], runs)  # every run: alternatives
    dead = _never_ran_a_call(results)
    if dead:
        # expectations or not: a target that never made a call judged nothing
        raise common.UsageError(dead)
    if not any(r.ran for r in results):
        # a gate where nothing ran must not pass: say why, as for a target that cannot run
        from harness.report.common import not_run_reasons

        raise common.UsageError("no case ran: " + "; ".join(not_run_reasons(results)))
    # a void case (the harness broke a timing promise in every try) judged nothing
    failed = any(not r.matched or r.void for r in results)
    if args.fail_on_leaks:
        failed = failed or any(r.leaks is not None and r.leaks.total > 0 for r in results)
    return common.EXIT_MISMATCH if failed else common.EXIT_OK


def _never_ran_a_call(results: Sequence[Any]) -> str:
    """One line naming each target every case of which crashed or did not start ("":
    none did), with the first case's reason."""
    lines = []
    for target in dict.fromkeys(r.target for r in results):
        tried = [
            r
            for r in results
            if r.target == target and r.outcome.kind not in ("skipped", "not_applicable")
        ]
        if tried and all(
            r.outcome.kind == "did_not_start" or r.outcome.error == "TargetCrashed" for r in tried
        ):
            why = (tried[0].message or tried[0].outcome.detail).strip().splitlines()
            lines.append(
                f"every case of target {target} ({len(tried)}) crashed or did not start: "
                + (why[0][:300] if why else "no message")
            )
    return "; ".join(lines)


def cmd_list(args: argparse.Namespace) -> int:
    from rich.markup import escape

    scenarios = common.load_scenarios(args, patterns=[])
    out = common.out_console()
    for s in scenarios:
        api = f"{s.api}{' stream' if s.stream else ' (no stream)'}"
        refs = " ".join(
            dict.fromkeys(m for r in s.references for m in re.findall(r"#\d+|cac9db7caf|codex", r))
        )
        expected = "  ".join(f"{t}={e}" for t, e in s.expected.items())
        out.print(f"[bold]{s.name}[/]  [dim]{api}  {refs}[/]")
        out.print(f"    {escape(s.summary)}", highlight=False)
        out.print(f"    [dim]expected:[/] {escape(expected)}", highlight=False)
    out.print(f"{len(scenarios)} scenarios")
    return common.EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    from harness.report import render_timeline
    from harness.runner import RunSettings, plan, run_cases

    scenarios = common.load_scenarios(args, patterns=[args.scenario])
    if len(scenarios) != 1:
        raise common.UsageError(
            f"explain takes one scenario; {args.scenario!r} matches "
            f"{', '.join(s.name for s in scenarios)}"
        )
    settings = RunSettings(time_scale=common.time_scale(args), jobs=1, dump_hung_stacks=True)
    targets = common.selected_targets(args)
    require_runnable(targets)
    cases = plan(common.with_overlays(args, scenarios, targets), targets)
    out = common.out_console()
    out.print(f"[bold]{scenarios[0].name}[/]: {scenarios[0].summary}")
    if scenarios[0].references:
        out.print(f"references: {', '.join(scenarios[0].references)}")
    results = run_cases(cases, settings=settings)
    for result in results:
        render_timeline(result, console=out)
    return common.EXIT_OK if all(r.matched for r in results) else common.EXIT_MISMATCH
