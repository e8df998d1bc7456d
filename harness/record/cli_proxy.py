"""``harness proxy --upstream URL [--script FILE] [--port P]``: the SSE-aware fault proxy.

Prints its own base URL on the first line of stdout (it stands in for ``URL``), forwards
every request to the live upstream and applies the fault script to the real stream:
``event:N`` counts the upstream's SSE events as they arrive, rules match per attempt,
and the fault server's timeline is at ``GET /_harness/timeline``. With no script (or an
empty one) it is transparent. ``--out DIR`` also records cassettes. Bad input: one line
on stderr naming the file or option, the field and the allowed values, exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from harness.foreground import (
    EXIT_USAGE,
    add_port,
    add_time_scale,
    add_upstream,
    parse_and_run,
    port_error,
    run_in_foreground,
    time_scale_error,
)

__all__ = ["add_arguments", "main", "run_proxy"]


def main(argv: Sequence[str] | None = None) -> int:
    description = "Inject scripted faults into a live provider's stream."
    return parse_and_run(argv, "harness proxy", description, add_arguments, run_proxy)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_upstream(parser, example=", e.g. https://openrouter.ai/api/v1")
    parser.add_argument(
        "--script", metavar="FILE", help="fault script, TOML or JSON (default: no faults)"
    )
    add_port(parser)
    add_time_scale(parser)
    parser.add_argument("--out", metavar="DIR", help="also record one cassette per exchange here")


def run_proxy(
    args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    from harness.faults import FaultScript
    from harness.record.front import FaultProxy
    from harness.server.cli_serve import ScriptFileError, build_error, load_script_file
    from harness.server.fault_server import ServerError

    out, err = out or sys.stdout, err or sys.stderr
    prog = "harness proxy"
    problem = port_error(args.port) or time_scale_error(args.time_scale)
    if problem is not None:
        print(f"{prog}: {problem}", file=err)
        return EXIT_USAGE
    try:
        script = load_script_file(args.script) if args.script else FaultScript()
        proxy = FaultProxy(
            args.upstream, script, port=args.port, time_scale=args.time_scale, out_dir=args.out
        )
    except (ScriptFileError, ValueError, ServerError) as exc:
        print(build_error(prog, exc, args.script), file=err)
        return EXIT_USAGE
    except OSError as exc:
        print(f"{prog}: --out: {args.out}: {exc.strerror or exc}", file=err)
        return EXIT_USAGE
    rules = len(script.rules)
    return run_in_foreground(
        proxy,
        banner=lambda: (
            f"fault proxy for {proxy.upstream.base_url} on {proxy.url} "
            f"({rules} rule(s), time_scale={args.time_scale}); Ctrl-C to stop"
        ),
        out=out,
        err=err,
        start_errors=(ServerError,),
        prog=prog,
    )
