"""``harness serve``, ``bench``, ``live``, ``mutants``, ``record`` and ``proxy``: thin
wiring to modules that own their options (loaded only when the command runs).

Not here: the fault server (``harness.server``), the benchmarks (``harness.bench``),
the live tier (``harness.live``), mutation testing (``harness.mutants_cli``), recording
and the fault proxy (``harness.record``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from harness.cli.common import UsageError, add_passthrough, optional

__all__ = ["register"]

_BENCHMARKS = {
    "server": ("harness.bench.server_cli", "main"),
    "watchdog": ("harness.bench.watchdog", "run_watchdog_bench"),
    "netem": ("harness.bench.netem", "main"),
    "proxy": ("harness.bench.proxy", "main"),
    "guard": ("harness.bench.guard", "main"),
    "fuzz": ("harness.bench.fuzz", "main"),
}
#: Commands whose options a module owns (its ``add_arguments``), run by one function of
#: it with the parsed options: name -> (module, that function, help, description).
_OWN_OPTIONS = {
    "mutants": (
        "harness.mutants_cli",
        "run_mutants",
        "run the catalog against known-bad stacks; kills and score",
        "Run the catalog against known-bad variants of the reference stack; print kills "
        "and the mutation score.",
    ),
    "record": (
        "harness.record.cli_record",
        "run_record",
        "record real traffic: a proxy writing one cassette per exchange",
        "Record real traffic: a proxy that writes one cassette per exchange.",
    ),
    "proxy": (
        "harness.record.cli_proxy",
        "run_proxy",
        "fault proxy: scripted faults on a live upstream's stream",
        "Inject scripted faults into a live provider's stream.",
    ),
}


def register(commands: Any) -> None:
    # serve parses its own options: building them imports the server, which every other
    # command would pay for at start-up.
    add_passthrough(commands, "serve", cmd_serve, help="run the fault server on its own")

    bench = commands.add_parser(
        "bench",
        help="benchmarks: server, watchdog, netem, proxy, guard, fuzz",
        description="Run a benchmark and print ours-vs-baseline tables.",
    )
    bench.add_argument("which", choices=tuple(_BENCHMARKS))
    bench.add_argument("rest", nargs=argparse.REMAINDER, help="options passed to the benchmark")
    bench.set_defaults(func=cmd_bench)

    add_passthrough(
        commands, "live", cmd_live, help="the live tier (real provider), or --dry-run locally"
    )
    for name, (_, _, what, _) in _OWN_OPTIONS.items():
        add_passthrough(commands, name, _own_options(name), help=what)


def cmd_serve(args: argparse.Namespace) -> int:
    module = "harness.server.cli_serve"
    serve_args = optional(module, "serve_args", what="harness serve")
    argument_error = optional(module, "argument_error", what="harness serve")
    args = _parsed(
        module,
        args.rest,
        prog="harness serve",
        description="Run the fault server in the foreground until Ctrl-C / SIGTERM; "
        "point any OpenAI client at the printed base URL.",
    )
    problem = argument_error(args)
    if problem is not None:
        raise UsageError(problem)
    return int(serve_args(args) or 0)


def cmd_bench(args: argparse.Namespace) -> int:
    module, name = _BENCHMARKS[args.which]
    func = optional(module, name, what=f"harness bench {args.which}")
    return int(func(list(args.rest)) or 0)


def cmd_live(args: argparse.Namespace) -> int:
    main_live = optional("harness.live.cli_live", "main", what="harness live")
    return int(main_live(list(args.rest)) or 0)


def _parsed(module: str, rest: Sequence[str], *, prog: str, description: str) -> argparse.Namespace:
    """``rest`` parsed with the options of ``module.add_arguments`` (the command's own)."""
    add_arguments = optional(module, "add_arguments", what=prog)
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_arguments(parser)
    return parser.parse_args(list(rest))


def _own_options(name: str) -> Callable[[argparse.Namespace], int]:
    """``harness NAME``: its module's options parsed, then its run function."""
    module, runner, _, description = _OWN_OPTIONS[name]
    prog = f"harness {name}"

    def run(args: argparse.Namespace) -> int:
        func = optional(module, runner, what=prog)
        return int(func(_parsed(module, args.rest, prog=prog, description=description)) or 0)

    return run
