"""``harness live``: run the live tier (or its dry run) and write reports.

    harness live [--dry-run] [--model M] [--max-tokens N] [--call-ceiling S]
                 [--run-ceiling S] [--seed N] [--json F] [--junit F] [--markdown F]

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
import random
from collections.abc import Sequence

from rich.console import Console

from harness.environment import Environment, EnvironmentError_, read_environment
from harness.live.config import (
    DEFAULT_CALL_CEILING_S,
    DEFAULT_MAX_TOKENS,
    DEFAULT_RUN_CEILING_S,
    LiveConfigError,
    LiveDisabled,
    live_config,
)
from harness.live.dry_run import DRY_RUN_API_KEY
from harness.live.redact import Redactor
from harness.live.report import render_console, write_json, write_junit, write_markdown
from harness.live.session import LiveRun, plan_sequences

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "add_arguments", "main", "run_live"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

HELP = "run the live tier (real provider round trips) or, with --dry-run, its local rehearsal"


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add ``harness live``'s options to ``parser`` (a subcommand parser)."""
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
        "--record", metavar="DIR", help="also record every call as a cassette into DIR"
    )
    parser.add_argument("--json", metavar="FILE", help="write a JSON report")
    parser.add_argument("--junit", metavar="FILE", help="write a JUnit XML report")
    parser.add_argument("--markdown", metavar="FILE", help="write a Markdown report")
    return parser


def run_live(
    args: argparse.Namespace,
    *,
    environment: Environment | None = None,
    console: Console | None = None,
    err_console: Console | None = None,
) -> int:
    """Run the tier per ``args`` (from :func:`add_arguments`); return the exit status.
    ``environment`` defaults to :func:`read_environment`; the table goes to ``console``,
    problems to ``err_console`` (default stderr)."""
    console = console or Console()
    err = err_console or Console(stderr=True)
    try:
        env = environment if environment is not None else read_environment()
    except EnvironmentError_ as exc:
        err.print(f"harness live: {exc}", markup=False, soft_wrap=True)
        return EXIT_USAGE
    secrets = [env.openrouter_api_key, DRY_RUN_API_KEY]
    redactor = Redactor(secrets)
    try:
        run = _run(args, env, redactor)
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


def _run(args: argparse.Namespace, env: Environment, redactor: Redactor) -> LiveRun:
    from harness.live.recording import run_dry_tier, run_live_tier  # + the fault check

    record_dir = getattr(args, "record", None)  # callers may build the Namespace by hand
    if args.dry_run:
        # Bounds are the dry run's own (local calls take milliseconds); --seed applies.
        return run_dry_tier(seed=args.seed, redactor=redactor, record_dir=record_dir)
    overrides = {
        "max_tokens": args.max_tokens,
        "call_ceiling_s": args.call_ceiling,
        "run_ceiling_s": args.run_ceiling,
    }
    if args.model:
        overrides["model"] = args.model
    config = live_config(env, **overrides)
    sequences = plan_sequences(random.Random(args.seed))
    return run_live_tier(config, sequences, redactor=redactor, record_dir=record_dir)


if __name__ == "__main__":
    raise SystemExit(main())
