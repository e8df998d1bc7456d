"""``harness live``: run the live tier (or its dry run) and write reports.

    harness live [-t TARGET ...] [--dry-run] [--model M] [--max-tokens N]
                 [--call-ceiling S] [--run-ceiling S] [--seed N]
                 [--json F] [--junit F] [--markdown F]

Without ``-t`` the checks run through the in-process reference client (``session``);
``-t hermes`` (any target the runner can run: a built-in name, ``mutant:NAME``,
``package.module:Class``) runs them through that target in its child process
(``targets``): three chats on one client, a rebuild before the third. ``--dry-run``
without ``-t`` runs the in-process checks *and* every built-in target against a local
fault server; with ``-t`` only those targets.

Without ``--dry-run`` it needs ``HERMES_LIVE_TESTS=1`` and ``OPENROUTER_API_KEY`` (and
honours ``HERMES_LIVE_MODEL`` / ``HERMES_LIVE_BASE_URL``); with it, the same checks run
against an embedded fault server with a fake key. Exit status: 0 when every case did
what was expected, 1 when one did not, 2 for a usage or configuration problem (the
message names the variable or option). No traceback and no secret reaches the user.

``harness/cli.py`` wires this in with :func:`add_arguments` and :func:`run_live`;
``python -m harness.live.cli_live`` runs it on its own.

Not here: the checks themselves (``session``, ``dry_run``).
"""

from __future__ import annotations

import argparse
import os
import random
from collections.abc import Mapping, Sequence

from rich.console import Console

from harness.environment import Environment, EnvironmentError_, read_environment
from harness.live.cases import LiveRun
from harness.live.config import (
    DEFAULT_CALL_CEILING_S,
    DEFAULT_MAX_TOKENS,
    DEFAULT_RUN_CEILING_S,
    LiveConfigError,
    LiveDisabled,
    live_config,
)
from harness.live.dry_run import DRY_RUN_API_KEY, run_dry_targets
from harness.live.redact import Redactor
from harness.live.report import render_console, write_json, write_junit, write_markdown
from harness.live.session import plan_sequences
from harness.live.targets import plan_target_sequences, run_target_tier

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "add_arguments", "main", "run_live"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

HELP = "run the live tier (real provider round trips) or, with --dry-run, its local rehearsal"


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add ``harness live``'s options to ``parser`` (a subcommand parser)."""
    parser.add_argument(
        "--target",
        "-t",
        action="append",
        metavar="TARGET",
        help="run the checks through this target in its child process (repeatable): a "
        "built-in name, mutant:NAME or package.module:Class; default: the in-process "
        "reference client (with --dry-run: it and every built-in target)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="run the same checks against an embedded fault server with a fake key "
        "(no network, no switches needed)",
    )
    parser.add_argument(
        "--model", help="model name (default: HERMES_LIVE_MODEL or a cheap default)"
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=DEFAULT_MAX_TOKENS,
        help=f"per call (default {DEFAULT_MAX_TOKENS})",
    )
    parser.add_argument(
        "--call-ceiling",
        type=float,
        default=DEFAULT_CALL_CEILING_S,
        metavar="SECONDS",
        help=f"hard ceiling per call (default {DEFAULT_CALL_CEILING_S:g})",
    )
    parser.add_argument(
        "--run-ceiling",
        type=float,
        default=DEFAULT_RUN_CEILING_S,
        metavar="SECONDS",
        help=f"no call starts after this (default {DEFAULT_RUN_CEILING_S:g})",
    )
    parser.add_argument("--seed", type=int, help="seed for the echo words (default: random)")
    parser.add_argument(
        "--record",
        metavar="DIR",
        help="also record every call of the in-process checks as a cassette into DIR",
    )
    parser.add_argument("--json", metavar="FILE", help="write a JSON report")
    parser.add_argument("--junit", metavar="FILE", help="write a JUnit XML report")
    parser.add_argument("--markdown", metavar="FILE", help="write a Markdown report")
    return parser


def run_live(
    args: argparse.Namespace,
    *,
    environment: Environment | None = None,
    environ: Mapping[str, str] | None = None,
    console: Console | None = None,
    err_console: Console | None = None,
) -> int:
    """Run the tier per ``args`` (from :func:`add_arguments`); return the exit status.
    ``environment`` defaults to :func:`read_environment`; ``environ`` is what target
    children start from (scrubbed; default this process's); the table goes to
    ``console``, problems to ``err_console`` (default stderr)."""
    console = console or _wide_console()
    err = err_console or Console(stderr=True)
    try:
        env = environment if environment is not None else read_environment()
    except EnvironmentError_ as exc:
        err.print(f"harness live: {exc}", markup=False, soft_wrap=True)
        return EXIT_USAGE
    secrets = [env.openrouter_api_key, DRY_RUN_API_KEY]
    redactor = Redactor(secrets)
    problem = _usage_problem(args)  # before any call: a bad target or path costs nothing
    if problem is not None:
        err.print(f"harness live: {redactor.redact(problem)}", markup=False, soft_wrap=True)
        return EXIT_USAGE
    try:
        run = _run(args, env, redactor, environ or dict(os.environ))
    except (LiveDisabled, LiveConfigError) as exc:
        err.print(f"harness live: {redactor.redact(exc)}", markup=False, soft_wrap=True)
        return EXIT_USAGE
    render_console(run, console, redactor=redactor)
    try:
        if args.json:
            write_json(run, args.json, redactor=redactor)
        if args.junit:
            write_junit(run, args.junit, redactor=redactor)
        if args.markdown:
            write_markdown(run, args.markdown, redactor=redactor)
    except OSError as exc:
        err.print(
            f"harness live: cannot write report: {redactor.redact(exc)}",
            markup=False,
            soft_wrap=True,
        )
        return EXIT_USAGE
    return EXIT_OK if run.ok else EXIT_FAILED


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="harness live", description=HELP)
    add_arguments(parser)
    return run_live(parser.parse_args(argv))


# --------------------------------------------------------------------------- helpers


def _run(
    args: argparse.Namespace, env: Environment, redactor: Redactor, environ: Mapping[str, str]
) -> LiveRun:
    from harness.live.recording import run_dry_tier, run_live_tier  # + the fault check

    targets = list(dict.fromkeys(getattr(args, "target", None) or ()))
    record_dir = getattr(args, "record", None)  # callers may build the Namespace by hand
    if args.dry_run:
        # Bounds are the dry run's own (local calls take milliseconds); --seed applies.
        if targets:
            return run_dry_targets(
                targets, environ=environ, ci=env.ci, seed=args.seed, redactor=redactor
            )
        from harness.targets import TARGETS

        return LiveRun.combined(
            [
                run_dry_tier(seed=args.seed, redactor=redactor, record_dir=record_dir),
                run_dry_targets(
                    sorted(TARGETS), environ=environ, ci=env.ci, seed=args.seed, redactor=redactor
                ),
            ]
        )
    overrides = {
        "max_tokens": args.max_tokens,
        "call_ceiling_s": args.call_ceiling,
        "run_ceiling_s": args.run_ceiling,
    }
    if args.model:
        overrides["model"] = args.model
    config = live_config(env, **overrides)
    rng = random.Random(args.seed)
    if not targets:
        return run_live_tier(config, plan_sequences(rng), redactor=redactor, record_dir=record_dir)
    runs = [
        run_target_tier(
            config,
            target,
            plan_target_sequences(rng),
            mode="live",
            environ=environ,
            ci=env.ci,
            redactor=redactor,
        )
        for target in targets
    ]
    return LiveRun.combined(runs)


def _wide_console() -> Console:
    """stdout; not a terminal (CI logs, pipes): wide enough for the details column."""
    console = Console()
    if not console.is_terminal and console.width < 160:
        console = Console(width=160)
    return console


def _usage_problem(args: argparse.Namespace) -> str | None:
    """A bad ``--target`` or an unwritable report path, as one line (or None)."""
    from harness.targets import TARGETS, is_target
    from harness.writable import file_problem

    for target in getattr(args, "target", None) or ():
        if not is_target(target):
            return (
                f"--target {target!r} is not valid; allowed: {', '.join(sorted(TARGETS))}, "
                "mutant:NAME or package.module:Class"
            )
    for option in ("json", "junit", "markdown"):
        value = getattr(args, option)
        if value:
            problem = file_problem(value)
            if problem is not None:
                return f"--{option} {value}: {problem}"
    return None


if __name__ == "__main__":
    raise SystemExit(main())
