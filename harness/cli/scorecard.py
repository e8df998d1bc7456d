"""``harness scorecard``: judge clients side by side and write the scorecard.

::

    harness scorecard -t A -t B ... --out DIR [SCENARIO|PATTERN ...]
    harness scorecard --from r1.json [--from r2.json ...] --out DIR [-t A ...] [PATTERN ...]

The first form runs the scenarios (the same selection as ``harness run``; default: every
built-in target on the whole catalog) one target after the other, so each target's run
time is its own wall time, and writes ``DIR/scorecard.md``, ``DIR/scorecard.png``,
``DIR/scorecard.html`` and ``DIR/scorecard.json`` (the results, reusable with ``--from``).
The second renders saved JSON reports (``harness run --json`` or a scorecard's own)
without running anything, optionally narrowed to some targets and scenarios.

The scorecard is a report, not a gate: exit 0 once the files are written (``harness run``
is the regression gate), 2 on bad input.

Not here: the verdicts (``harness.contract``), rendering (``harness.report.scorecard``).
"""

from __future__ import annotations

import argparse
import fnmatch
import time
from typing import Any

from harness.cli import common

__all__ = ["register"]

SCORECARD_JSON = "scorecard.json"


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "scorecard",
        help="judge targets side by side; write scorecard.md/.png/.html",
        description="Run scenarios against each target (or read saved JSON reports) and "
        "write the verdict grid with per-target totals and run time as Markdown, PNG and "
        "a self-contained HTML page.",
    )
    common.add_selection(parser, default_targets="every built-in target")
    parser.add_argument("--out", required=True, metavar="DIR", help="where to write the files")
    parser.add_argument(
        "--from",
        dest="from_reports",
        action="append",
        default=[],
        metavar="REPORT.json",
        help="render saved JSON reports instead of running (repeatable)",
    )
    parser.add_argument("--title", help="the scorecard's title")
    parser.set_defaults(func=cmd_scorecard)


def cmd_scorecard(args: argparse.Namespace) -> int:
    out = common.check_out_dir(args.out)  # first: before any case runs

    from harness.report.json_report import write_json
    from harness.report.scorecard import DEFAULT_TITLE, build_scorecard
    from harness.report.scorecard.write import write_scorecard

    if args.from_reports:
        results, wall_s = _from_reports(args)
    else:
        results, wall_s = _run(args)
    if not results:
        raise common.UsageError("no case to score: the selection matches no result")
    scorecard = build_scorecard(results, wall_s=wall_s, title=args.title or DEFAULT_TITLE)
    paths = write_scorecard(out, scorecard)
    if not args.from_reports:
        write_json(out / SCORECARD_JSON, results, wall_s=wall_s)
        paths["json"] = out / SCORECARD_JSON
    console = common.out_console()
    for t in scorecard.totals:
        c = t.counts
        console.print(
            f"[bold]{t.target}[/]: [green]{c['pass']} pass[/], [yellow]{c['safe']} safe[/], "
            f"[red]{c['fail']} fail[/]"
            + (f", {t.not_run} not run" if t.cases > c["pass"] + c["safe"] + c["fail"] else "")
            + f" in {t.run_s:.1f} s"
        )
    for path in paths.values():
        console.print(f"wrote {path}", highlight=False)
    return common.EXIT_OK


def _run(args: argparse.Namespace) -> tuple[list[Any], dict[str, float]]:
    from harness.runner import RunSettings, plan
    from harness.targets import TARGETS

    scenarios = common.exclude(common.load_scenarios(args), args.exclude)
    targets = common.selected_targets(args, default=list(TARGETS))
    settings = RunSettings(
        time_scale=common.time_scale(args), jobs=common.jobs(args), keep_timeline=False
    )
    results: list[Any] = []
    wall_s: dict[str, float] = {}
    for target in targets:
        cases = plan(common.with_overlays(args, scenarios, [target]), [target])
        if not cases:
            continue
        start = time.monotonic()
        results += common.run_with_progress(cases, settings, quiet=args.quiet, label=target)
        # rounded as the JSON keeps it, so the Markdown renders the same from either
        wall_s[target] = round(time.monotonic() - start, 3)
    return results, wall_s


def _from_reports(args: argparse.Namespace) -> tuple[list[Any], dict[str, float]]:
    from harness.report.json_report import load_json, load_wall_times

    merged: dict[tuple[str, str], Any] = {}
    wall_s: dict[str, float] = {}
    for path in args.from_reports:
        for result in load_json(path):  # a later report's case replaces an earlier one
            merged[(result.scenario, result.target)] = result
        wall_s.update(load_wall_times(path))
    results = list(merged.values())
    if args.target:
        wanted = common.selected_targets(args, to_run=False)
        results = [r for r in results if r.target in wanted]
    if args.scenarios:
        results = [
            r for r in results if any(fnmatch.fnmatchcase(r.scenario, p) for p in args.scenarios)
        ]
    results = [
        r for r in results if not any(fnmatch.fnmatchcase(r.scenario, p) for p in args.exclude)
    ]
    targets = {r.target for r in results}
    return results, {t: s for t, s in wall_s.items() if t in targets}
