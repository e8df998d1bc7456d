"""``harness record --upstream URL --out DIR [--port P]``: the recording proxy.

Prints its own base URL on the first line of stdout (it stands in for ``URL``: point
the client there), forwards every request to the upstream and writes one cassette per
exchange into ``DIR`` (credentials removed). Runs until SIGINT/SIGTERM. Bad input: one
line on stderr naming the option and the allowed values, exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from harness.foreground import (
    EXIT_USAGE,
    add_port,
    add_upstream,
    parse_and_run,
    port_error,
    run_in_foreground,
)

__all__ = ["add_arguments", "main", "run_record"]


def main(argv: Sequence[str] | None = None) -> int:
    description = "Record real traffic: a proxy that writes one cassette per exchange."
    return parse_and_run(argv, "harness record", description, add_arguments, run_record)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_upstream(
        parser, example=" as a client would configure it, e.g. https://openrouter.ai/api/v1"
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="directory for the cassettes")
    add_port(parser)


def run_record(
    args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    from harness.record.front import Recorder
    from harness.server.fault_server import ServerError

    out, err = out or sys.stdout, err or sys.stderr
    problem = port_error(args.port)
    if problem is not None:
        print(f"harness record: {problem}", file=err)
        return EXIT_USAGE
    try:
        recorder = Recorder(args.upstream, out_dir=args.out, port=args.port)
    except (ValueError, ServerError) as exc:
        print(f"harness record: {exc}", file=err)
        return EXIT_USAGE
    except OSError as exc:
        print(f"harness record: --out: {args.out}: {exc.strerror or exc}", file=err)
        return EXIT_USAGE
    return run_in_foreground(
        recorder,
        banner=lambda: (
            f"recording {recorder.upstream.base_url} into {args.out} "
            f"via {recorder.url}; Ctrl-C to stop"
        ),
        out=out,
        err=err,
        start_errors=(ServerError,),
        prog="harness record",
    )
