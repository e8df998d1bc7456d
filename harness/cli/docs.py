"""``harness docs``: write (or check) the generated pages of ``docs/``.

::

    harness docs [--out DIR] [--check]

Writes ``DIR/faults.md`` (default ``docs/``) from the fault-action registry
(:mod:`harness.faults.reference`). ``--check`` writes nothing and exits 1 when the file
differs from what the registry gives (the test suite runs the same comparison).

Not here: the scorecard (``harness scorecard --out docs/scorecard``; ``bash ci/docs``
runs both).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.cli.common import EXIT_MISMATCH, EXIT_OK, check_out_dir

__all__ = ["register"]


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "docs",
        help="write the generated docs pages (faults.md)",
        description="Write docs/faults.md from the fault-action registry; --check "
        "compares instead and exits 1 when it is stale.",
    )
    parser.add_argument("--out", default="docs", metavar="DIR", help="the docs directory")
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.set_defaults(func=cmd_docs)


def cmd_docs(args: argparse.Namespace) -> int:
    from harness.faults.reference import render_faults_page

    pages = {"faults.md": render_faults_page()}
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
