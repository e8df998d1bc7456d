"""The ``harness`` command: run the catalog, list it, explain one case, score clients, serve.

::

    harness run [SCENARIO|PATTERN ...] [--target T ...] [--time-scale X] [--jobs N]
                [--shard K/N] [--json F] [--junit F] [--markdown F]
    harness list
    harness explain SCENARIO [--target T]
    harness scorecard --out DIR [--target T ...] [SCENARIO|PATTERN ...] | --from R.json ...
    harness serve [...]                 (the fault server on its own)
    harness live [...]                  (the live tier; see harness live --help)
    harness mutants [...]               (mutation testing; see harness mutants --help)
    harness record --upstream URL --out DIR   (recording proxy; see harness record --help)
    harness proxy --upstream URL --script F   (fault proxy on a live upstream)
    harness bench server|watchdog|netem|proxy|guard|fuzz [...]
    harness report merge SHARD.json ... [--json F] [--junit F] [--markdown F]
    harness report diff BASE.json HEAD.json [--fail-on G] [--json F] [--markdown F]
    harness posture -t T [-t T2 ...] [--hold-s S] [--json F]   (socket posture per target)
    harness fuzz -t T [--api A] [--examples N | --minutes M] [--seed S] [--out DIR] [-j N]
    harness repro SCENARIO -t T --out DIR   (a standalone pytest directory for one case)

Exit status: 0 when every outcome matches its expectation, 1 when some do not,
2 on a usage or input error (bad scenario file, unknown target, bad option, a report
path that cannot be written). Errors are one line on stderr, never a traceback.

Each command group is a module of this package with a ``register(commands)`` function
(``commands`` is argparse's sub-parser action); adding a command is a module and one
line in :data:`COMMAND_MODULES`. Shared options and helpers are in
:mod:`harness.cli.common`.

Not here: the runner's logic (``harness.runner``) or rendering (``harness.report``).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from harness.cli.common import (
    EXIT_INPUT,
    EXIT_MISMATCH,
    EXIT_OK,
    PASSTHROUGH,
    UsageError,
    input_errors,
    optional,
)

__all__ = [
    "COMMAND_MODULES",
    "EXIT_INPUT",
    "EXIT_MISMATCH",
    "EXIT_OK",
    "UsageError",
    "build_parser",
    "main",
]

#: The command groups, in ``harness --help`` order; each module has ``register(commands)``.
COMMAND_MODULES = (
    "harness.cli.run",
    "harness.cli.scorecard",
    "harness.cli.tools",
    "harness.cli.reports",
    "harness.cli.posture",
    "harness.cli.docs",
    "harness.cli.fuzz",
)

# Kept for callers of the former single-module CLI.
_optional = optional


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``harness`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if argv and argv[0] in PASSTHROUGH:
        # These commands own their options (and --help); argparse would eat "--help".
        args = argparse.Namespace(func=PASSTHROUGH[argv[0]], rest=argv[1:])
    else:
        args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_INPUT
    try:
        return int(args.func(args))
    except UsageError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `harness list | head`: the reader left, nothing to report
        sys.stderr.close()
        return EXIT_OK
    except input_errors() as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return EXIT_INPUT


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Transport-fault regression harness for LLM clients.",
        epilog="Exit status: 0 all outcomes as expected, 1 mismatches, 2 usage or input error.",
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(commands)
    return parser
