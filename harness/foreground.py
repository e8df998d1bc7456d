"""Run a server in the foreground until SIGINT/SIGTERM, its base URL first on stdout.

Shared by ``harness serve``, ``harness record`` and ``harness proxy``; it sits in the
lowest layer, below both ``harness.server`` and ``harness.record``, so that the server
needs nothing of the recorder (it imports ``harness.record`` only lazily, for
cassettes). The signals are blocked before the server's thread starts (threads
inherit the mask), so ``sigwait`` here is the only receiver. Also here: the child
processes such servers run as (:func:`stop_process`, :func:`alive`).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
from collections.abc import Callable
from typing import Any, TextIO

from harness.environment import check_time_scale

__all__ = [
    "EXIT_OK",
    "EXIT_USAGE",
    "add_port",
    "add_time_scale",
    "add_upstream",
    "alive",
    "port_error",
    "run_in_foreground",
    "stop_process",
    "time_scale_error",
]

EXIT_OK = 0
EXIT_USAGE = 2


def add_port(parser: argparse.ArgumentParser, *, where: str = "on 127.0.0.1") -> None:
    """The ``--port`` option every foreground server takes (0: a free one, printed)."""
    parser.add_argument(
        "--port", type=int, default=0, help=f"port {where} (default 0: a free port, printed)"
    )


def port_error(port: int) -> str | None:
    """What is wrong with ``--port`` (one line), or None."""
    if not 0 <= port <= 65535:
        return f"--port: {port} is not valid; allowed: 0..65535"
    return None


def add_upstream(parser: argparse.ArgumentParser, *, example: str) -> None:
    """The ``--upstream URL`` option of the proxies in front of a live provider."""
    parser.add_argument(
        "--upstream", required=True, metavar="URL", help=f"the provider's base URL{example}"
    )


def add_time_scale(parser: argparse.ArgumentParser) -> None:
    """The ``--time-scale`` option of the servers that play a fault script."""
    parser.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        metavar="X",
        help="multiply every duration of the script by X (default 1.0)",
    )


def time_scale_error(value: float) -> str | None:
    """What is wrong with ``--time-scale`` (one line), or None: the word of the one
    time-scale validator (``harness.environment.check_time_scale``), so ``harness serve``
    and ``harness proxy`` take what ``harness run`` and the environment take."""
    try:
        check_time_scale(value, what="--time-scale")
    except ValueError as exc:
        return str(exc)
    return None


def run_in_foreground(
    server: Any,
    *,
    banner: Callable[[], str],
    out: TextIO,
    err: TextIO,
    start_errors: tuple[type[BaseException], ...],
    prog: str,
) -> int:
    """Start ``server``, print ``server.base_url`` then ``banner()`` (stderr), wait."""
    stop_signals = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
    try:
        try:
            server.start()
        except start_errors as exc:
            print(f"{prog}: {exc}", file=err)
            return EXIT_USAGE
        try:
            print(server.base_url, file=out, flush=True)
            print(banner(), file=err, flush=True)
            signum = signal.sigwait(stop_signals)
        finally:
            server.stop()
        print(f"stopped on {signal.Signals(signum).name}", file=err, flush=True)
        return EXIT_OK
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def alive(ident: int, *, group: bool = False) -> bool:
    """Whether process ``ident`` (with ``group``: process group ``ident``) still exists.
    Signal 0 probes without sending; one that belongs to another user exists too."""
    try:
        (os.killpg if group else os.kill)(ident, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_process(proc: subprocess.Popen[Any], grace_s: float) -> None:
    """SIGTERM, then SIGKILL if ``proc`` has not exited within ``grace_s``; reaped either way."""
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
