"""``harness docs``: write (or check) the generated pages of ``docs/``.

::

    harness docs [--out DIR] [--check]

Writes ``DIR/faults.md`` (default ``docs/``) from the fault-action registry
(:mod:`harness.faults.reference`) and the checks table of ``DIR/contract.md`` from the
contract-check registry (:mod:`harness.contract.check`; the rest of that page is prose,
so the table is rewritten only where the page is). ``--check`` writes nothing and exits 1
when a file differs from what the registries give (the test suite runs the same
comparison).

Not here: the scorecard (``harness scorecard --out docs/scorecard``; ``bash ci/docs``
runs both).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.cli.common import EXIT_INPUT, EXIT_MISMATCH, EXIT_OK, check_out_dir

__all__ = ["register"]


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "docs",
        help="write the generated docs pages (faults.md, the checks of contract.md)",
        description="Write docs/faults.md from the fault-action registry and the checks "
        "table of docs/contract.md from the check registry; --check compares instead and "
        "exits 1 when one is stale.",
    )
    parser.add_argument("--out", default="docs", metavar="DIR", help="the docs directory")
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.set_defaults(func=cmd_docs)


def cmd_docs(args: argparse.Namespace) -> int:
    from harness.contract.check import splice_checks_table
    from harness.faults.reference import render_faults_page

    pages = {"faults.md": render_faults_page()}
    contract_page = Path(args.out) / "contract.md"
    if contract_page.is_file():  # generated in part: only where the page is
        try:
            pages["contract.md"] = splice_checks_table(contract_page.read_text(encoding="utf-8"))
        except ValueError as exc:
            print(f"{contract_page}: {exc}", file=sys.stderr)
            return EXIT_INPUT
    if args.check:
        stale = [
            name
            for name, text in pages.items()
            if not (Path(args.out) / name).is_file()
            or (Path(args.out) / name).read_text(encoding="utf-8") != text
        ]
        for name in stale:
            print(
                f"{Path(args.out) / name}: stale; run: harness docs --out {args.out}",
                file=sys.stderr,
            )
        return EXIT_MISMATCH if stale else EXIT_OK
    out = check_out_dir(args.out)
    for name, text in pages.items():
        (out / name).write_text(text, encoding="utf-8")
        print(out / name)
    return EXIT_OK
