"""``harness report diff BASE.json HEAD.json``: what a change did to the catalog; and
``harness report noise RUN.json...``: how often that diff goes red on an unchanged build.

``diff`` prints the Markdown of the diff (``harness.report.diff``), writes it with
``--markdown`` and its JSON with ``--json``; exits 1 when a group ``--fail-on`` names has
a case (default: regressions only), 2 on an unreadable report or a bad option. ``noise``
diffs each report against the next (``harness.report.diff_noise``), prints one line per
pair and how many were quiet; exits 1 when one was not.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.cli.common import EXIT_MISMATCH, EXIT_OK, UsageError, check_report_paths

__all__ = ["register_diff"]


def register_diff(report_commands: Any) -> None:
    diff = report_commands.add_parser(
        "diff",
        help="what changed between a base and a head report",
        description="Compare two JSON reports case by case (verdict, failed checks, "
        "outcome, requests and latency beyond noise, transport settings): regressions, "
        "fixes, other changes and accepted variations, with the cause under each. "
        "Exit 1 when a --fail-on group has a case, 2 on bad input.",
    )
    diff.add_argument("base", metavar="BASE.json")
    diff.add_argument("head", metavar="HEAD.json")
    _noise_options(diff)
    diff.add_argument("--title", default="Transport gate: base vs head", help="Markdown heading")
    diff.add_argument("--json", metavar="FILE", help="write the diff as JSON")
    diff.add_argument("--markdown", metavar="FILE", help="write the diff as Markdown")
    diff.set_defaults(func=cmd_diff)
    noise = report_commands.add_parser(
        "noise",
        help="how often report diff goes red between runs of one build",
        description="Diff each JSON report of one build against the next (N reports: "
        "N-1 pairs); print each pair, the cases that made pairs loud, and how many pairs "
        "were quiet. Exit 1 when a pair was not quiet, 2 on bad input.",
    )
    noise.add_argument("runs", nargs="+", metavar="RUN.json")
    _noise_options(noise)
    noise.add_argument("--json", metavar="FILE", help="write the counts as JSON")
    noise.set_defaults(func=cmd_noise)


def _noise_options(diff: Any) -> None:
    """The options ``diff`` and ``noise`` share: what fails, and what is noise."""
    from harness.report.diff import (
        DEFAULT_LATENCY_NOISE_RATIO,
        DEFAULT_LATENCY_NOISE_S,
        DEFAULT_REQUESTS_NOISE,
        FAIL_ON,
    )

    diff.add_argument(
        "--fail-on",
        choices=tuple(FAIL_ON),
        default="regression",
        help="exit 1 on: regression (default), change (a regression or any other change "
        "but a fix), any (fixes too), never",
    )
    diff.add_argument(
        "--latency-noise",
        type=float,
        default=DEFAULT_LATENCY_NOISE_S,
        metavar="S",
        help=f"latency moves under S seconds are noise (default {DEFAULT_LATENCY_NOISE_S})",
    )
    diff.add_argument(
        "--latency-noise-ratio",
        type=float,
        default=DEFAULT_LATENCY_NOISE_RATIO,
        metavar="R",
        help="...and so are moves under R times the smaller latency "
        f"(default {DEFAULT_LATENCY_NOISE_RATIO})",
    )
    diff.add_argument(
        "--requests-noise",
        type=int,
        default=DEFAULT_REQUESTS_NOISE,
        metavar="N",
        help="a request count that moved by at most N under the same outcome is noise "
        f"(default {DEFAULT_REQUESTS_NOISE})",
    )


def _noise_settings(args: argparse.Namespace) -> dict[str, Any]:
    for option in ("latency_noise", "latency_noise_ratio", "requests_noise"):
        value = getattr(args, option)
        if not value >= 0:
            raise UsageError(f"--{option.replace('_', '-')} {value}: must be a number >= 0")
    return {
        "latency_noise_s": args.latency_noise,
        "latency_noise_ratio": args.latency_noise_ratio,
        "requests_noise": args.requests_noise,
    }


def cmd_diff(args: argparse.Namespace) -> int:
    import json

    from harness.report.diff import diff_files
    from harness.report.diff_markdown import render_diff_markdown

    settings = _noise_settings(args)
    check_report_paths(args, ("json", "markdown"))
    diff = diff_files(args.base, args.head, **settings)
    text = render_diff_markdown(diff, title=args.title)
    sys.stdout.write(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as fh:
            fh.write(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(diff.to_dict(), fh, indent=2)
            fh.write("\n")
    return EXIT_MISMATCH if diff.fails(args.fail_on) else EXIT_OK


def cmd_noise(args: argparse.Namespace) -> int:
    import json

    from harness.report.diff_noise import measure_noise, render_noise

    settings = _noise_settings(args)
    check_report_paths(args, ("json",))
    report = measure_noise(args.runs, fail_on=args.fail_on, **settings)
    sys.stdout.write(render_noise(report))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report.to_dict(), fh, indent=2)
            fh.write("\n")
    return EXIT_OK if report.quiet == len(report.diffs) else EXIT_MISMATCH
