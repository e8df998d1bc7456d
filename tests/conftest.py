"""Fixtures shared by test directories.

``live_dry_run_every_target``: one ``harness live --dry-run`` with every report and
``--record``, through the in-process checks, the fault check and every built-in target
(~80 s of child processes). tests/live/test_targets.py asserts its target coverage and
tests/record/test_secrets.py that no file or log of it keeps the key; running it once for
both halves that cost. The root conftest's ``XDIST_GROUPS`` keeps both on one worker.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.server import FaultServer

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class DryRun:
    """The finished run: its process, and ``out`` holding only what the run wrote."""

    done: subprocess.CompletedProcess[str]
    out: Path

    @property
    def report(self) -> Path:
        return self.out / "r.json"

    @property
    def tapes(self) -> Path:
        return self.out / "tapes"


@pytest.fixture(scope="session")
def live_dry_run_every_target(tmp_path_factory: pytest.TempPathFactory) -> DryRun:
    out = tmp_path_factory.mktemp("live-dry-run")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "harness", "live", "--dry-run", "--seed", "9"),
            *("--record", str(out / "tapes"), "--json", str(out / "r.json")),
            *("--junit", str(out / "r.xml"), "--markdown", str(out / "r.md")),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=400,  # every built-in target spawns its child three times (~80 s; 146 s with the third-party targets beside a CI run)
    )
    return DryRun(done, out)


# The fault server fixtures of the project's own tests, in one place. They run the server
# in real time: the tests script real-time durations against fixed client deadlines, so
# the plugin's ``fault_server`` (which follows the run's time scale, and
# $HARNESS_TIME_SCALE) is overridden here by one from the plugin's own factory with the
# time scale pinned; tests/test_plugin.py checks the plugin's fixtures as a user has them.


@pytest.fixture
def fault_server(fault_server_factory: Callable[..., FaultServer]) -> FaultServer:
    """A fault server for one test, in real time (its script: ``fault_server.load``)."""
    return fault_server_factory(time_scale=1.0)


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    """One healthy fault server, in real time, shared by a module's tests."""
    with FaultServer() as srv:
        yield srv
