"""``harness serve``: run the fault server in the foreground until SIGINT or SIGTERM.

The CLI module parses arguments and calls :func:`serve`; this module loads the
optional script file, prints the base URL, waits for a signal and shuts down
cleanly. A script file is TOML (``.toml``) or JSON (anything else) holding a
FaultScript table, either at the top level or under a ``[script]`` table. Every
error is one line on stderr naming the file, the field and the allowed values, with
exit status 2; no traceback reaches the user.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from harness.faults import FaultScript, FaultSpecError, script_from_dict
from harness.foreground import (
    EXIT_OK,
    EXIT_USAGE,
    add_port,
    add_time_scale,
    port_error,
    run_in_foreground,
    time_scale_error,
)
from harness.server.fault_server import DEFAULT_HOST, LOCAL_HOSTS, FaultServer, ServerError

__all__ = [
    "EXIT_OK",
    "EXIT_USAGE",
    "add_arguments",
    "argument_error",
    "build_error",
    "load_script_file",
    "main",
    "serve",
    "serve_args",
]


class ScriptFileError(ValueError):
    """A script file cannot be read or does not hold a valid FaultScript."""


def main(argv: Sequence[str] | None = None) -> int:
    """``harness serve [--host H] [--port P] [--script FILE] [--time-scale X] [--allow-remote]``."""
    parser = argparse.ArgumentParser(
        prog="harness serve", description="Run the fault server until Ctrl-C."
    )
    add_arguments(parser)
    args = parser.parse_args(list(argv or []))
    problem = argument_error(args)
    if problem is not None:
        parser.error(problem)
    return serve_args(args)


def serve_args(args: argparse.Namespace) -> int:
    """:func:`serve` with the options :func:`add_arguments` parsed (shared by
    :func:`main` and ``harness.cli``, so a new option is passed on in one place)."""
    return serve(
        args.host,
        args.port,
        args.script,
        args.time_scale,
        args.allow_remote,
        cassettes=args.cassette,
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``harness serve`` (shared by :func:`main` and ``harness.cli``)."""
    parser.add_argument(
        "--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST})"
    )
    add_port(parser, where="to bind")
    parser.add_argument(
        "--script",
        metavar="FILE",
        help="fault script: TOML or JSON FaultScript table (default: no faults)",
    )
    add_time_scale(parser)
    parser.add_argument(
        "--cassette",
        action="append",
        default=[],
        metavar="FILE",
        help="answer from recorded cassettes (a file or a directory; repeatable), byte-exact, "
        "with the script's faults at event:N / bytes:N of the recorded stream",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow binding a non-loopback host (reachable from the network; prints a warning)",
    )


def argument_error(args: argparse.Namespace) -> str | None:
    """What is wrong with parsed :func:`add_arguments` options (one line), or None."""
    return port_error(args.port) or time_scale_error(args.time_scale)


def serve(
    host: str | Sequence[str],
    port: int = 0,
    script_path: str | Path | None = None,
    time_scale: float = 1.0,
    allow_remote: bool = False,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    cassettes: Sequence[str | Path] = (),
) -> int:
    """Serve until SIGINT/SIGTERM; returns the process exit status.

    Given a list of command-line arguments instead of a host, parses them (``main``).
    """
    if not isinstance(host, str):
        return main(host)
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        script = load_script_file(script_path) if script_path is not None else FaultScript()
        source = None
        if cassettes:  # the CLI side only: the server itself never imports harness.record
            from harness.record.replay import load_replay_source

            source = load_replay_source(cassettes, time_scale=time_scale, script=script)
        server = FaultServer(
            script,
            host=host,
            port=port,
            time_scale=time_scale,
            allow_remote=allow_remote,
            reply_source=source,
        )
    except (ScriptFileError, ServerError, ValueError) as exc:
        print(build_error("harness serve", exc, script_path), file=err)
        return EXIT_USAGE
    if host not in LOCAL_HOSTS:
        print(
            f"harness serve: warning: binding to non-loopback host {host}: "
            "it is reachable from the network",
            file=err,
            flush=True,
        )
    return run_in_foreground(
        server,
        banner=lambda: f"fault server on {server.url} (time_scale={time_scale}); Ctrl-C to stop",
        out=out,
        err=err,
        start_errors=(ServerError,),
        prog="harness serve",
    )


def build_error(prog: str, exc: BaseException, script_path: str | Path | None) -> str:
    """The one line for a server that could not be built from its script file: a script
    the server refuses (a ``FaultSpecError``: an action it cannot perform) names the file;
    a ``ScriptFileError`` names it already."""
    where = f"{script_path}: " if isinstance(exc, FaultSpecError) and script_path else ""
    return f"{prog}: {where}{exc}"


def load_script_file(path: str | Path) -> FaultScript:
    """Read a TOML or JSON script file; errors name the file, field and allowed values."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScriptFileError(f"{p}: cannot read script file: {exc.strerror or exc}") from exc
    try:
        data: Any = tomllib.loads(text) if p.suffix.lower() == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        kind = "TOML" if p.suffix.lower() == ".toml" else "JSON"
        raise ScriptFileError(f"{p}: not valid {kind}: {exc}") from exc
    if isinstance(data, dict) and isinstance(data.get("script"), dict):
        data = data["script"]
    try:
        return script_from_dict(data)
    except FaultSpecError as exc:
        raise ScriptFileError(f"{p}: {exc}") from exc
