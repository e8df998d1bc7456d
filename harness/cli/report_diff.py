"""``harness report diff BASE.json HEAD.json``: what a change did to the catalog.

Prints the Markdown of the diff (``harness.report.diff``), writes it with ``--markdown``
and its JSON with ``--json``; exits 1 when a group ``--fail-on`` names has a case
(default: regressions only), 2 on an unreadable report or a bad option.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.cli.common import EXIT_MISMATCH, EXIT_OK, UsageError, check_report_paths

__all__ = ["register_diff"]


def register_diff(report_commands: Any) -> None:
    from harness.report.diff import (
        DEFAULT_LATENCY_NOISE_RATIO,
        DEFAULT_LATENCY_NOISE_S,
        FAIL_ON,
    )

    diff = report_commands.add_parser(
        "diff",
        help="what changed between a base and a head report",
        description="Compare two JSON reports case by case (verdict, failed checks, "
        "outcome, requests, latency beyond noise): regressions, fixes and other changes. "
        "Exit 1 when a --fail-on group has a case, 2 on bad input.",
    )
    diff.add_argument("base", metavar="BASE.json")
    diff.add_argument("head", metavar="HEAD.json")
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
    diff.add_argument("--title", default="Transport gate: base vs head", help="Markdown heading")
    diff.add_argument("--json", metavar="FILE", help="write the diff as JSON")
    diff.add_argument("--markdown", metavar="FILE", help="write the diff as Markdown")
    diff.set_defaults(func=cmd_diff)


def cmd_diff(args: argparse.Namespace) -> int:
    import json

    from harness.report.diff import diff_files
    from harness.report.diff_markdown import render_diff_markdown

    for option in ("latency_noise", "latency_noise_ratio"):
        value = getattr(args, option)
        if not value >= 0:
            raise UsageError(f"--{option.replace('_', '-')} {value}: must be a number >= 0")
    check_report_paths(args, ("json", "markdown"))
    diff = diff_files(
        args.base,
        args.head,
        latency_noise_s=args.latency_noise,
        latency_noise_ratio=args.latency_noise_ratio,
    )
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
