"""What the ``harness`` commands share: exit codes, the usage error, the scenario and
target selection options, report-path checks, the progress bar and the stdout console.

Report paths are checked *before* any case runs (:func:`check_report_paths`): a run
that would end by failing to write its report fails at once instead, naming the path.

Not here: any one command (the sibling modules), running or rendering.
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "EXIT_INPUT",
    "EXIT_MISMATCH",
    "EXIT_OK",
    "PASSTHROUGH",
    "UsageError",
    "add_passthrough",
    "add_report_options",
    "add_selection",
    "add_target_options",
    "check_out_dir",
    "check_report_paths",
    "exclude",
    "input_errors",
    "jobs",
    "load_scenarios",
    "optional",
    "out_console",
    "run_with_progress",
    "selected_targets",
    "time_scale",
    "with_overlays",
]

EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_INPUT = 2

#: Commands that parse their own options (``harness live --help`` is theirs): name -> func.
PASSTHROUGH: dict[str, Callable[[argparse.Namespace], int]] = {}

# The parser is built before every command, so it must not import the runner (pydantic,
# the catalog model): its defaults are restated here and pinned by tests/test_cli.py.
DEFAULT_TIME_SCALE_TEXT = "0.05"
DEFAULT_JOBS_TEXT = "twice the cores, at most 8"
_TIME_SCALE_HELP = (
    "multiply every scenario duration by this factor: 1.0 replays real provider timings "
    f"(reproduce a hang), 0.01 is fast CI (default: $HARNESS_TIME_SCALE, else "
    f"{DEFAULT_TIME_SCALE_TEXT})"
)


class UsageError(Exception):
    """Bad input from the user; printed as one line, exit 2."""


# --------------------------------------------------------------------------- options


def add_target_options(parser: argparse.ArgumentParser, *, default: str) -> None:
    """``--target``, ``--time-scale`` and ``--scenarios-dir``."""
    from harness.targets import allowed_targets

    parser.add_argument(
        "--target",
        "-t",
        action="append",
        metavar="TARGET",
        help=f"target to run (repeatable): {allowed_targets()}; default: {default}",
    )
    parser.add_argument(
        "--time-scale",
        type=float,
        metavar="X",
        help=_TIME_SCALE_HELP,
    )
    parser.add_argument(
        "--scenarios-dir", metavar="DIR", help="scenario directory (default: the catalog)"
    )
    parser.add_argument(
        "--target-python",
        metavar="PYTHON",
        help="the interpreter package.module:Class targets run in (e.g. another venv's "
        "bin/python; it needs only the client: checked before any case runs)",
    )


def add_selection(parser: argparse.ArgumentParser, *, default_targets: str) -> None:
    """What ``harness run`` and ``harness scorecard`` select: scenarios (names or globs),
    ``--exclude``, targets, ``--time-scale``, ``--scenarios-dir``, ``--jobs``, ``--quiet``."""
    parser.add_argument(
        "scenarios",
        nargs="*",
        metavar="SCENARIO|PATTERN",
        help="scenario names, globs (e.g. 'stall_*') or .toml files; default: all",
    )
    add_target_options(parser, default=default_targets)
    parser.add_argument(
        "--exclude",
        "-x",
        action="append",
        default=[],
        metavar="PATTERN",
        help="leave out scenarios matching this glob (repeatable), e.g. 'kernel_*'",
    )
    parser.add_argument(
        "--jobs",
        "-j",
        type=int,
        help=(
            f"workers for short cases (default: {DEFAULT_JOBS_TEXT}); cases that mostly "
            "wait (relays, kernel timers, paced streams, expected hangs) run on extra lanes "
            "beside them, so more cases than this may run at once"
        ),
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar")


def add_report_options(parser: argparse.ArgumentParser, *, json_help: str) -> None:
    parser.add_argument("--json", metavar="FILE", help=json_help)
    parser.add_argument("--junit", metavar="FILE", help="write JUnit XML")
    parser.add_argument("--markdown", metavar="FILE", help="write a Markdown summary")


def add_passthrough(
    commands: Any, name: str, func: Callable[[argparse.Namespace], int], *, help: str
) -> None:
    """A command whose options are its own (``harness NAME --help`` reaches it)."""
    parser = commands.add_parser(
        name, help=help, add_help=False, description=f"{help} (options: harness {name} --help)."
    )
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    parser.set_defaults(func=func)
    PASSTHROUGH[name] = func


# --------------------------------------------------------------------------- report paths


def check_report_paths(
    args: argparse.Namespace, options: Sequence[str] = ("json", "junit", "markdown")
) -> None:
    """Raise :class:`UsageError` naming the first ``--OPTION PATH`` that cannot be
    written (:func:`harness.writable.file_problem`: the real probe, nothing left behind)."""
    from harness.writable import file_problem

    for option in options:
        value = getattr(args, option.replace("-", "_"), None)
        if value:
            problem = file_problem(value)
            if problem is not None:
                raise UsageError(f"--{option} {value}: {problem}")


def positive_int(text: str) -> int:
    """An option's value as a whole number >= 1 (argparse's ``type=``)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number >= 1")
    return value


def check_out_dir(value: str, *, option: str = "--out") -> Path:
    """Create the output directory ``value`` if needed and check it can hold files."""
    from harness.writable import directory_problem

    problem = directory_problem(value)
    if problem is not None:
        raise UsageError(f"{option} {value}: {problem}")
    return Path(value)


# --------------------------------------------------------------------------- selection


def load_scenarios(args: argparse.Namespace, patterns: Sequence[str] | None = None) -> list[Any]:
    """Scenarios named by ``patterns`` (default: ``args.scenarios``): ``.toml`` files as
    they are, names and globs from ``--scenarios-dir`` or the catalog."""
    from harness.paths import CATALOG_DIR
    from harness.scenario import load_catalog, load_scenario, select

    if patterns is None:
        patterns = getattr(args, "scenarios", None) or []
    patterns = list(patterns)
    files = [p for p in patterns if p.endswith(".toml") and Path(p).is_file()]
    names = [p for p in patterns if p not in files]
    scenarios = [load_scenario(p) for p in files]
    if names or not files:
        catalog = load_catalog(args.scenarios_dir or CATALOG_DIR)
        scenarios += select(catalog, names)
    return scenarios


def exclude(scenarios: list[Any], patterns: Sequence[str]) -> list[Any]:
    return [s for s in scenarios if not any(fnmatch.fnmatchcase(s.name, p) for p in patterns)]


def selected_targets(
    args: argparse.Namespace, default: Sequence[str] | None = None, *, to_run: bool = True
) -> list[str]:
    """``--target`` values (default ``default``, else the runner's), each one checked
    (``to_run``: also that it can be loaded and its child started)."""
    from harness.runner import DEFAULT_TARGETS
    from harness.targets import allowed_targets, is_target

    targets = args.target or list(default or DEFAULT_TARGETS)
    for t in targets:
        if not is_target(t):
            raise UsageError(f"--target {t!r} is not valid; allowed: {allowed_targets()}")
    targets = list(dict.fromkeys(targets))
    if to_run:
        check_runnable(targets, python=getattr(args, "target_python", None))
    return targets


def check_runnable(targets: Sequence[str], *, python: str | None) -> None:
    """Each target can be loaded and its child's interpreter has what it needs, before
    any case runs (one line, exit 2); ``python`` (``--target-python``) is handed to
    every child start through the environment the runner passes on."""
    from harness.environment import TARGET_PYTHON_VAR
    from harness.targets.runtime.preflight import TargetProblem, check_targets

    try:
        check_targets(list(targets), python=python)
    except TargetProblem as exc:
        raise UsageError(str(exc)) from None
    if python is not None:
        os.environ[TARGET_PYTHON_VAR] = python  # read by RunSettings.environ's default


def with_overlays(
    args: argparse.Namespace,
    scenarios: list[Any],
    targets: Sequence[str],
    files: Sequence[str] = (),
) -> list[Any]:
    """``scenarios`` with the expectations overlays for ``targets`` merged in (the shipped
    ones under ``harness/catalog/expectations/`` and ``files``)."""
    from harness.expectations import with_overlays as merged
    from harness.paths import CATALOG_DIR

    return merged(scenarios, targets, files, catalog_dir=args.scenarios_dir or CATALOG_DIR)


def jobs(args: argparse.Namespace) -> int:
    from harness.runner import DEFAULT_JOBS

    return DEFAULT_JOBS if args.jobs is None else args.jobs


def time_scale(args: argparse.Namespace) -> float:
    """``--time-scale`` (checked), else ``HARNESS_TIME_SCALE``, else the runner's default."""
    from harness.environment import check_time_scale, read_environment
    from harness.runner import DEFAULT_TIME_SCALE

    if args.time_scale is not None:
        return check_time_scale(args.time_scale, what="--time-scale")
    return read_environment().time_scale or DEFAULT_TIME_SCALE


# --------------------------------------------------------------------------- output


def run_with_progress(
    cases: Sequence[Any], settings: Any, *, quiet: bool, label: str = "running"
) -> list[Any]:
    """Run ``cases`` with a transient progress bar on stderr (none with ``quiet``); first
    the run's one line when its children run without cgroups (``harness.cgroups.note``),
    and the run's workers before and after (``harness.cpu_load.Throttle``)."""
    from harness.cgroups import note
    from harness.cpu_load import Throttle

    if (line := note()) is not None:
        print(line, file=sys.stderr)
    throttle = Throttle()
    print(throttle.describe(settings.jobs), file=sys.stderr)
    results = _run_with_progress(cases, settings, quiet=quiet, label=label, throttle=throttle)
    print(throttle.summary(), file=sys.stderr)
    return results


def _run_with_progress(
    cases: Sequence[Any], settings: Any, *, quiet: bool, label: str, throttle: Any
) -> list[Any]:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from harness.runner import run_cases

    if quiet:
        return run_cases(cases, settings=settings, throttle=throttle)
    with Progress(
        TextColumn(f"[bold]{label}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=Console(stderr=True),
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

        return run_cases(cases, settings=settings, on_result=on_result, throttle=throttle)


def out_console() -> Any:
    """stdout console; not a terminal (CI logs, pipes): wide enough for the matrix."""
    from rich.console import Console

    console = Console()
    if not console.is_terminal and console.width < 160:
        console = Console(width=160)
    return console


def optional(module: str, name: str, *, what: str) -> Any:
    """``module.name``, or a :class:`UsageError` saying ``what`` is not in this build."""
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


def input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that are the user's input at fault: one line, exit 2."""
    from harness.environment import EnvironmentError_
    from harness.report.json_report import ReportError
    from harness.scenario import ScenarioError

    return (ScenarioError, ReportError, EnvironmentError_, ValueError)
