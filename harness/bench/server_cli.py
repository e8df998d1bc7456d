"""The options of ``harness bench server``: parse, validate (exit 2 naming the option),
measure, print, write ``--json``.

Not here: measuring (``server.py``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from harness.bench import server
from harness.bench.common import finish, whole_numbers
from harness.bench.server import (
    DEFAULT_CONCURRENCY,
    DEFAULT_HELD,
    DEFAULT_PACED_STREAMS,
    DEFAULT_RUNS,
    DEFAULT_STREAMS,
    QUICK,
    TIMING_PRIORITIES,
    measure_servers,
)
from harness.bench.server_children import SERVER_KINDS
from harness.bench.server_table import render

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """``harness bench server [--quick] [--servers a,b] [--json PATH] ...``; see ``--help``."""
    parser = argparse.ArgumentParser(
        prog="harness bench server", description=server.__doc__.split("\n\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="small counts: a smoke test")
    parser.add_argument("--held", type=int, help=f"streams held at once (default {DEFAULT_HELD})")
    parser.add_argument("--runs", type=int, help=f"runs per cell, >= 3 (default {DEFAULT_RUNS})")
    parser.add_argument(
        "--concurrency",
        help="burst streams in flight, comma-separated (default "
        + ",".join(map(str, DEFAULT_CONCURRENCY))
        + ")",
    )
    parser.add_argument(
        "--streams", type=int, help=f"streams per burst run (default {DEFAULT_STREAMS})"
    )
    parser.add_argument(
        "--paced-streams", type=int, help=f"streams per paced run (default {DEFAULT_PACED_STREAMS})"
    )
    parser.add_argument(
        "--servers", help=f"comma-separated, ours first (default: {','.join(SERVER_KINDS)})"
    )
    parser.add_argument("--no-baseline", action="store_true", help="measure only the fault server")
    parser.add_argument(
        "--timing-priority",
        choices=TIMING_PRIORITIES,
        help="scheduling in the timeline phase (default realtime as root, else none)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(list(argv or []))
    base: dict[str, Any] = dict(QUICK) if args.quick else {}
    names = ("held", "runs", "streams", "paced_streams")
    base.update(whole_numbers(parser, args, names, least={"runs": 3}))
    if args.concurrency is not None:
        base["concurrency"] = _int_list(parser, "--concurrency", args.concurrency)
    servers = ("ours",) if args.no_baseline else SERVER_KINDS
    if args.servers is not None:
        servers = tuple(s.strip() for s in args.servers.split(",") if s.strip())
        bad = [s for s in servers if s not in SERVER_KINDS]
        if bad or not servers:
            parser.error(
                f"--servers: {args.servers!r} is not valid; allowed: comma-separated {', '.join(SERVER_KINDS)}"
            )
    result = measure_servers(servers=servers, timing_priority=args.timing_priority, **base)
    return finish(result, render, args.json)


def _int_list(parser: argparse.ArgumentParser, option: str, text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        parser.error(
            f"{option}: {text!r} is not valid; allowed: comma-separated whole numbers >= 1"
        )
    return values
