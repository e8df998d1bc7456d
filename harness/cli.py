"""The ``harness`` command: run the catalog, list it, explain one case, serve, bench, merge.

::

    harness run [SCENARIO|PATTERN ...] [--target T ...] [--time-scale X] [--jobs N]
                [--shard K/N] [--json F] [--junit F] [--markdown F]
    harness list
    harness explain SCENARIO [--target T]
    harness serve [...]                 (the fault server on its own)
    harness live [...]                  (the live tier; see harness live --help)
    harness mutants [...]               (mutation testing; see harness mutants --help)
    harness record --upstream URL --out DIR   (recording proxy; see harness record --help)
    harness proxy --upstream URL --script F   (fault proxy on a live upstream)
    harness bench server|watchdog|netem|proxy|guard [...]
    harness report merge SHARD.json ... [--json F] [--junit F] [--markdown F]

Exit status: 0 when every outcome matches its expectation, 1 when some do not,
2 on a usage or input error (bad scenario file, unknown target, bad option). Errors
are one line on stderr, never a traceback.

Not here: the runner's logic (``harness.runner``) or rendering (``harness.report``).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["EXIT_INPUT", "EXIT_MISMATCH", "EXIT_OK", "build_parser", "main"]

EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_INPUT = 2

_TIME_SCALE_HELP = (
    "multiply every scenario duration by this factor: 1.0 replays real provider timings "
    "(reproduce a hang), 0.01 is fast CI (default: $HARNESS_TIME_SCALE, else {default})"
)


class UsageError(Exception):
    """Bad input from the user; printed as one line, exit 2."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``harness`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if argv and argv[0] in _PASSTHROUGH:
        # These commands own their options (and --help); argparse would eat "--help".
        args = argparse.Namespace(func=_PASSTHROUGH[argv[0]], rest=argv[1:])
    else:
        args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_INPUT
    try:
        return int(args.func(args))
    except UsageError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `harness list | head`: the reader left, nothing to report
        sys.stderr.close()
        return EXIT_OK
    except _input_errors() as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return EXIT_INPUT


def build_parser() -> argparse.ArgumentParser:
    from harness.runner import DEFAULT_JOBS, DEFAULT_TIME_SCALE
    from harness.server.cli_serve import add_arguments as add_serve_arguments

    parser = argparse.ArgumentParser(
        prog="harness",
        description="Transport-fault regression harness for LLM clients.",
        epilog="Exit status: 0 all outcomes as expected, 1 mismatches, 2 usage or input error.",
    )
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    run = sub.add_parser(
        "run",
        help="run scenarios against targets and print the matrix",
        description="Run catalog scenarios on the embedded fault server against "
        "each target; with no SCENARIO, the whole catalog.",
    )
    run.add_argument(
        "scenarios",
        nargs="*",
        metavar="SCENARIO|PATTERN",
        help="scenario names or globs (e.g. 'stall_*'); default: all",
    )
    _add_common(run, default_scale=DEFAULT_TIME_SCALE)
    run.add_argument(
        "--exclude",
        "-x",
        action="append",
        default=[],
        metavar="PATTERN",
        help="leave out scenarios matching this glob (repeatable), e.g. 'kernel_*'",
    )
    run.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=DEFAULT_JOBS,
        help=f"cases run in parallel (default {DEFAULT_JOBS})",
    )
    run.add_argument(
        "--shard", metavar="K/N", help="run the K-th of N deterministic slices of the cases"
    )
    run.add_argument("--json", metavar="FILE", help="write the JSON report (mergeable shards)")
    run.add_argument("--junit", metavar="FILE", help="write JUnit XML")
    run.add_argument("--markdown", metavar="FILE", help="write a Markdown summary")
    run.add_argument(
        "--fail-on-leaks",
        action="store_true",
        help="also exit 1 when a case leaves descriptors, threads or sockets behind",
    )
    run.add_argument(
        "--dump-stacks",
        action="store_true",
        help="before stopping a hung target, print where its threads were stuck",
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
    run.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    run.set_defaults(func=_cmd_run)

    lst = sub.add_parser("list", help="list the catalog", description="List catalog scenarios.")
    lst.add_argument(
        "--scenarios-dir", metavar="DIR", help="scenario directory (default: the catalog)"
    )
    lst.set_defaults(func=_cmd_list)

    explain = sub.add_parser(
        "explain",
        help="run one scenario and print its timeline",
        description="Run one scenario and print server and client events on "
        "one time axis, the fault marked.",
    )
    explain.add_argument("scenario", metavar="SCENARIO")
    _add_common(explain, default_scale=DEFAULT_TIME_SCALE)
    explain.set_defaults(func=_cmd_explain)

    serve = sub.add_parser(
        "serve",
        help="run the fault server on its own",
        description="Run the fault server in the foreground until Ctrl-C / SIGTERM; "
        "point any OpenAI client at the printed base URL.",
    )
    add_serve_arguments(serve)
    serve.set_defaults(func=_cmd_serve)

    bench = sub.add_parser(
        "bench",
        help="benchmarks: server, watchdog, netem, proxy, guard",
        description="Run a benchmark and print ours-vs-baseline tables.",
    )
    bench.add_argument("which", choices=("server", "watchdog", "netem", "proxy", "guard"))
    bench.add_argument("rest", nargs=argparse.REMAINDER, help="options passed to the benchmark")
    bench.set_defaults(func=_cmd_bench)

    live = sub.add_parser(
        "live",
        help="the live tier (real provider), or --dry-run locally",
        add_help=False,
        description="Run the live tier (options: harness live --help).",
    )
    live.add_argument("rest", nargs=argparse.REMAINDER)
    live.set_defaults(func=_cmd_live)

    for name, what in _RECORD_COMMANDS.items():  # harness.record owns their options
        rec = sub.add_parser(name, help=what, add_help=False, description=what)
        rec.add_argument("rest", nargs=argparse.REMAINDER)
        rec.set_defaults(func=_PASSTHROUGH[name])

    mutants = sub.add_parser(
        "mutants",
        help="run the catalog against known-bad stacks; kills and score",
        add_help=False,
        description="Mutation testing (options: harness mutants --help).",
    )
    mutants.add_argument("rest", nargs=argparse.REMAINDER)
    mutants.set_defaults(func=_cmd_mutants)

    report = sub.add_parser(
        "report",
        help="work with JSON reports",
        description="Work with JSON reports written by 'harness run --json'.",
    )
    report_sub = report.add_subparsers(title="report commands", metavar="COMMAND")
    merge = report_sub.add_parser(
        "merge",
        help="merge JSON shards into one report",
        description="Merge the JSON reports of 'harness run --shard K/N' "
        "runs; exit 1 if any case mismatched.",
    )
    merge.add_argument("files", nargs="+", metavar="SHARD.json")
    merge.add_argument("--json", metavar="FILE", help="write the merged JSON report")
    merge.add_argument("--junit", metavar="FILE", help="write JUnit XML")
    merge.add_argument("--markdown", metavar="FILE", help="write a Markdown summary")
    merge.set_defaults(func=_cmd_merge)
    report.set_defaults(func=lambda _args: (report.print_help(), EXIT_INPUT)[1])
    return parser


# --------------------------------------------------------------------------- commands


def _cmd_run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from harness.report import render_console, write_junit, write_markdown
    from harness.report.json_report import write_json
    from harness.runner import RunSettings, Shard, plan, run_cases

    targets = _targets(args)
    scenarios = _with_overlays(
        args, _exclude(_load(args), args.exclude), targets, args.expectations
    )
    if args.write_expectations:
        _check_writable(args.write_expectations, "--write-expectations", targets)
    shard = Shard.parse(args.shard) if args.shard else None
    settings = RunSettings(
        time_scale=_time_scale(args),
        jobs=args.jobs,
        keep_timeline=bool(args.json),
        dump_hung_stacks=args.dump_stacks,
    )
    cases = plan(scenarios, targets, shard=shard)
    if not cases:
        raise UsageError("no case to run: no scenario selected")
    err = Console(stderr=True)
    results = _run_with_progress(cases, settings, err, quiet=args.quiet, run_cases=run_cases)
    out = _out_console()
    render_console(
        results,
        console=out,
        title=f"time_scale={settings.time_scale}" + (f"  shard {shard}" if shard else ""),
    )
    if args.json:
        write_json(args.json, results, shard=str(shard) if shard else None)
    if args.junit:
        write_junit(args.junit, results)
    if args.markdown:
        write_markdown(args.markdown, results)
    if args.write_expectations:
        from harness.expectations import write_overlay

        write_overlay(args.write_expectations, targets[0], results)
    failed = any(not r.matched for r in results)
    if args.fail_on_leaks:
        failed = failed or any(r.leaks is not None and r.leaks.total > 0 for r in results)
    return EXIT_MISMATCH if failed else EXIT_OK


def _cmd_list(args: argparse.Namespace) -> int:
    import re

    from rich.markup import escape

    scenarios = _load(args)
    out = _out_console()
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
    return EXIT_OK


def _cmd_explain(args: argparse.Namespace) -> int:

    from harness.report import render_timeline
    from harness.runner import RunSettings, plan, run_cases

    scenarios = _load(args, patterns=[args.scenario])
    if len(scenarios) != 1:
        raise UsageError(
            f"explain takes one scenario; {args.scenario!r} matches "
            f"{', '.join(s.name for s in scenarios)}"
        )
    settings = RunSettings(time_scale=_time_scale(args), jobs=1, dump_hung_stacks=True)
    targets = _targets(args)
    cases = plan(_with_overlays(args, scenarios, targets, ()), targets)
    out = _out_console()
    out.print(f"[bold]{scenarios[0].name}[/]: {scenarios[0].summary}")
    if scenarios[0].references:
        out.print(f"references: {', '.join(scenarios[0].references)}")
    results = run_cases(cases, settings=settings)
    for result in results:
        render_timeline(result, console=out)
    return EXIT_OK if all(r.matched for r in results) else EXIT_MISMATCH


def _cmd_serve(args: argparse.Namespace) -> int:
    serve = _optional("harness.server.cli_serve", "serve", what="harness serve")
    argument_error = _optional("harness.server.cli_serve", "argument_error", what="harness serve")
    from harness.environment import check_time_scale

    check_time_scale(args.time_scale, what="--time-scale")
    problem = argument_error(args)
    if problem is not None:
        raise UsageError(problem)
    return int(
        serve(
            args.host,
            args.port,
            args.script,
            args.time_scale,
            args.allow_remote,
            cassettes=args.cassette,
        )
        or 0
    )


def _cmd_bench(args: argparse.Namespace) -> int:
    module, name = {
        "server": ("harness.bench.server", "run_server_bench"),
        "watchdog": ("harness.bench.watchdog", "run_watchdog_bench"),
        "netem": ("harness.bench.netem", "main"),
        "proxy": ("harness.bench.proxy", "main"),
        "guard": ("harness.bench.guard", "main"),
    }[args.which]
    func = _optional(module, name, what=f"harness bench {args.which}")
    return int(func(list(args.rest)) or 0)


def _cmd_live(args: argparse.Namespace) -> int:
    main_live = _optional("harness.live.cli_live", "main", what="harness live")
    return int(main_live(list(args.rest)) or 0)


def _cmd_mutants(args: argparse.Namespace) -> int:
    add_arguments = _optional("harness.mutants_cli", "add_arguments", what="harness mutants")
    run_mutants = _optional("harness.mutants_cli", "run_mutants", what="harness mutants")
    parser = argparse.ArgumentParser(
        prog="harness mutants",
        description="Run the catalog against known-bad variants of the "
        "reference stack; print kills and the mutation score.",
    )
    add_arguments(parser)
    return int(run_mutants(parser.parse_args(list(args.rest))) or 0)


def _cmd_record_module(module: str) -> Any:
    return lambda args: int(_optional(module, "main", what="harness")(list(args.rest)) or 0)


_RECORD_COMMANDS = {
    "record": "record real traffic: a proxy writing one cassette per exchange",
    "proxy": "fault proxy: scripted faults on a live upstream's stream",
}
_PASSTHROUGH = {
    "live": _cmd_live,
    "mutants": _cmd_mutants,
    "record": _cmd_record_module("harness.record.cli_record"),
    "proxy": _cmd_record_module("harness.record.cli_proxy"),
}


def _cmd_merge(args: argparse.Namespace) -> int:

    from harness.report import merge_json, render_console, write_junit, write_markdown
    from harness.report.json_report import write_json

    results = merge_json(args.files)
    render_console(results, console=_out_console(), title=f"merged {len(args.files)} report(s)")
    if args.json:
        write_json(args.json, results)
    if args.junit:
        write_junit(args.junit, results)
    if args.markdown:
        write_markdown(args.markdown, results)
    return EXIT_OK if all(r.matched for r in results) else EXIT_MISMATCH


# --------------------------------------------------------------------------- helpers


def _add_common(parser: argparse.ArgumentParser, *, default_scale: float) -> None:
    from harness.targets import allowed_targets

    parser.add_argument(
        "--target",
        "-t",
        action="append",
        metavar="TARGET",
        help=f"target to run (repeatable); one of {allowed_targets()}; "
        "default: reference and openai-sdk",
    )
    parser.add_argument(
        "--time-scale", type=float, metavar="X", help=_TIME_SCALE_HELP.format(default=default_scale)
    )
    parser.add_argument(
        "--scenarios-dir", metavar="DIR", help="scenario directory (default: the catalog)"
    )


def _load(args: argparse.Namespace, patterns: Sequence[str] | None = None) -> list[Any]:
    from harness.scenario import CATALOG_DIR, load_catalog, load_scenario, select

    patterns = list(
        args.scenarios if patterns is None and hasattr(args, "scenarios") else patterns or []
    )
    files = [p for p in patterns if p.endswith(".toml") and Path(p).is_file()]
    names = [p for p in patterns if p not in files]
    scenarios = [load_scenario(p) for p in files]
    if names or not files:
        catalog = load_catalog(args.scenarios_dir or CATALOG_DIR)
        scenarios += select(catalog, names)
    return scenarios


def _exclude(scenarios: list[Any], patterns: Sequence[str]) -> list[Any]:
    import fnmatch

    return [s for s in scenarios if not any(fnmatch.fnmatchcase(s.name, p) for p in patterns)]


def _targets(args: argparse.Namespace) -> list[str]:
    from harness.runner import DEFAULT_TARGETS
    from harness.targets import allowed_targets, is_target

    targets = args.target or list(DEFAULT_TARGETS)
    for t in targets:
        if not is_target(t):
            raise UsageError(f"--target {t!r} is not valid; allowed: {allowed_targets()}")
    return list(dict.fromkeys(targets))


def _with_overlays(
    args: argparse.Namespace, scenarios: list[Any], targets: Sequence[str], files: Sequence[str]
) -> list[Any]:
    from harness.expectations import with_overlays
    from harness.scenario import CATALOG_DIR

    return with_overlays(scenarios, targets, files, catalog_dir=args.scenarios_dir or CATALOG_DIR)


def _check_writable(path: str, flag: str, targets: Sequence[str]) -> None:
    """Fail before any case runs: a run whose output cannot be written is wasted."""
    import os

    if len(targets) != 1:
        raise UsageError(f"{flag} records one target; got {len(targets)}: {', '.join(targets)}")
    parent = Path(path).parent
    if Path(path).is_dir() or not parent.is_dir() or not os.access(parent, os.W_OK):
        raise UsageError(f"{flag} {path}: cannot write there")


def _time_scale(args: argparse.Namespace) -> float:
    from harness.environment import check_time_scale, read_environment
    from harness.runner import DEFAULT_TIME_SCALE

    if args.time_scale is not None:
        return check_time_scale(args.time_scale, what="--time-scale")
    return read_environment().time_scale or DEFAULT_TIME_SCALE


def _run_with_progress(
    cases: Sequence[Any], settings: Any, console: Any, *, quiet: bool, run_cases: Any
) -> list[Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    if quiet:
        return run_cases(cases, settings=settings)
    with Progress(
        TextColumn("[bold]running"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("", total=len(cases))

        def on_result(result: Any) -> None:
            mark = "" if result.matched else " [red]MISMATCH[/]"
            progress.update(
                task,
                advance=1,
                description=f"{result.scenario} [{result.target}] {result.outcome.label}{mark}",
            )

        return run_cases(cases, settings=settings, on_result=on_result)


def _out_console() -> Any:
    """stdout console; not a terminal (CI logs, pipes): wide enough for the matrix."""
    from rich.console import Console

    console = Console()
    if not console.is_terminal and console.width < 160:
        console = Console(width=160)
    return console


def _optional(module: str, name: str, *, what: str) -> Any:
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            raise UsageError(
                f"{what} is not available in this build ({module} is missing)"
            ) from None
        raise
    func = getattr(mod, name, None)
    if func is None:
        raise UsageError(f"{what} is not available in this build ({module}.{name} is missing)")
    return func


def _input_errors() -> tuple[type[BaseException], ...]:
    from harness.environment import EnvironmentError_
    from harness.report.json_report import ReportError
    from harness.scenario import ScenarioError

    return (ScenarioError, ReportError, EnvironmentError_, ValueError)


if __name__ == "__main__":  # `python -m harness.cli` as well as `python -m harness`
    raise SystemExit(main())
