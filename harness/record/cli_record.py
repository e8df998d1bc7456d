"""``harness record --upstream URL --out DIR [--port P]``: the recording proxy.

Prints its own base URL on the first line of stdout (it stands in for ``URL``: point
the client there), forwards every request to the upstream and writes one cassette per
exchange into ``DIR`` (credentials removed). Runs until SIGINT/SIGTERM. Bad input: one
line on stderr naming the option and the allowed values, exit 2.
"""

from __future__ import annotations

import argparse
from typing import TextIO

from harness.foreground import add_port, add_upstream

__all__ = ["add_arguments", "run_record"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_upstream(
        parser, example=" as a client would configure it, e.g. https://openrouter.ai/api/v1"
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="directory for the cassettes")
    add_port(parser)


def run_record(
    args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    from harness.record.cli_proxy import run_front
    from harness.record.front import Recorder

    def build() -> Recorder:
        return Recorder(args.upstream, out_dir=args.out, port=args.port)

    def banner(recorder: Recorder) -> str:
        return (
            f"recording {recorder.upstream.base_url} into {args.out} "
            f"via {recorder.url}; Ctrl-C to stop"
        )

    return run_front(args, build, banner, prog="harness record", out=out, err=err)
