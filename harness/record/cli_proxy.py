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
from collections.abc import Callable
from typing import TextIO, TypeVar

from harness.foreground import (
    EXIT_USAGE,
    add_port,
    add_time_scale,
    add_upstream,
    port_error,
    run_in_foreground,
    time_scale_error,
)

__all__ = ["add_arguments", "run_front", "run_proxy"]

F = TypeVar("F")


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
    from harness.server.cli_serve import load_script_file

    def build() -> FaultProxy:
        script = load_script_file(args.script) if args.script else FaultScript()
        return FaultProxy(
            args.upstream, script, port=args.port, time_scale=args.time_scale, out_dir=args.out
        )

    def banner(proxy: FaultProxy) -> str:
        return (
            f"fault proxy for {proxy.upstream.base_url} on {proxy.url} "
            f"({len(proxy.script.rules)} rule(s), time_scale={args.time_scale}); Ctrl-C to stop"
        )

    return run_front(args, build, banner, prog="harness proxy", out=out, err=err)


def run_front(
    args: argparse.Namespace,
    build: Callable[[], F],
    banner: Callable[[F], str],
    *,
    prog: str,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """A front of this package (the proxy, the recorder) from ``args``, in the
    foreground: the options it has checked, then ``build()``; bad input is one line
    on ``err`` and exit 2."""
    from harness.server.cli_serve import build_error
    from harness.server.fault_server import ServerError

    out, err = out or sys.stdout, err or sys.stderr
    scale = getattr(args, "time_scale", None)
    problem = port_error(args.port) or (None if scale is None else time_scale_error(scale))
    if problem is not None:
        print(f"{prog}: {problem}", file=err)
        return EXIT_USAGE
    try:
        front = build()
    except (ValueError, ServerError) as exc:  # a ScriptFileError is a ValueError
        print(build_error(prog, exc, getattr(args, "script", None)), file=err)
        return EXIT_USAGE
    except OSError as exc:
        print(f"{prog}: --out: {args.out}: {exc.strerror or exc}", file=err)
        return EXIT_USAGE
    return run_in_foreground(
        front,
        banner=lambda: banner(front),
        out=out,
        err=err,
        start_errors=(ServerError,),
        prog=prog,
    )
