"""``harness report merge`` and ``harness report diff``: work with saved JSON reports.

Not here: the report formats (``harness.report``).
"""

from __future__ import annotations

import argparse
from typing import Any

from harness.cli import common
from harness.cli.report_diff import register_diff

__all__ = ["register"]


def register(commands: Any) -> None:
    report = commands.add_parser(
        "report",
        help="work with JSON reports",
        description="Work with JSON reports written by 'harness run --json'.",
    )
    report_commands = report.add_subparsers(title="report commands", metavar="COMMAND")
    merge = report_commands.add_parser(
        "merge",
        help="merge JSON shards into one report",
        description="Merge the JSON reports of 'harness run --shard K/N' "
        "runs; exit 1 if any case mismatched.",
    )
    merge.add_argument("files", nargs="+", metavar="SHARD.json")
    common.add_report_options(merge, json_help="write the merged JSON report")
    merge.set_defaults(func=cmd_merge)
    register_diff(report_commands)
    report.set_defaults(func=lambda _args: (report.print_help(), common.EXIT_INPUT)[1])


def cmd_merge(args: argparse.Namespace) -> int:
    common.check_report_paths(args)

    from harness.report import merge_json, render_console, write_junit, write_markdown
    from harness.report.json_report import write_json

    results = merge_json(args.files)
    render_console(
        results, console=common.out_console(), title=f"merged {len(args.files)} report(s)"
    )
    if args.json:
        write_json(args.json, results)
    if args.junit:
        write_junit(args.junit, results)
    if args.markdown:
        write_markdown(args.markdown, results)
    return common.EXIT_OK if all(r.matched for r in results) else common.EXIT_MISMATCH
