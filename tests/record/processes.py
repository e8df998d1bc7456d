"""Run a ``harness`` command as a child process that prints its base URL first."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Running:
    base_url: str
    proc: subprocess.Popen[str]
    stderr: str = ""


@contextlib.contextmanager
def harness(*args: str) -> Iterator[Running]:
    """Start ``python -m harness ARGS``; yield once its first stdout line (the base URL)
    is read; on exit SIGTERM it, require exit 0, and keep its stderr in ``.stderr``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        first = proc.stdout.readline().strip()  # the test's timeout bounds this read
        if not first:
            raise AssertionError(f"harness {' '.join(args)} printed no URL: {proc.stderr.read()}")
        running = Running(first, proc)
        yield running
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=15)
        running.stderr = err
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def run_harness(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )
