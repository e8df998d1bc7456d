"""Leaks are read the same way every time: a socket a client dropped without closing
counts whether or not an automatic collection ran during the call (the child keeps the
collector off from the job until its next command: ``targets.runtime.protocol.serve``),
and a worker still holding its socket after the call is a leak even when it would close
it by itself a second later (what is open after the call returned is the fact; waiting
for an abandoned worker to finish put the verdict on top of its timing: hermes's Codex
workers read an abandoned stream until the server ends it, 4-7 s after the call)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.runner import RunSettings, run_case
from harness.scenario import scenario_from_dict

TESTS_DIR = str(Path(__file__).resolve().parents[1])
SETTINGS = RunSettings(time_scale=0.02, environ={**os.environ, "PYTHONPATH": TESTS_DIR})
SCENARIO = scenario_from_dict({"name": "leak", "summary": "leak", "expected": {"reference": "ok"}})


def run(target: str, server):
    return run_case(
        SCENARIO,
        f"runner.targets_double:{target}",
        server=server,
        settings=SETTINGS,
        expect_as="reference",
    )


@pytest.mark.timeout(90)
def test_a_socket_left_to_the_collector_is_a_leak_every_time(server):
    seen = [run("GarbageSocketTarget", server).leaks for _ in range(3)]
    assert all(leaks is not None and leaks.established == 1 and leaks.fds == 1 for leaks in seen), (
        seen
    )


@pytest.mark.timeout(60)
def test_a_socket_closed_before_the_return_is_no_leak(server):
    result = run("ClosingSocketTarget", server)
    assert result.leaks is not None and result.leaks.total == 0, result.leaks
    assert "no_leaks" not in result.failed_checks


@pytest.mark.timeout(60)
def test_a_worker_that_would_close_its_socket_a_second_later_is_a_leak(server):
    result = run("LingeringTarget", server)
    assert result.leaks is not None and result.leaks.established == 1, result.leaks
    assert result.leaks.threads == 1 and "no_leaks" in result.failed_checks


@pytest.mark.timeout(60)
def test_a_thread_that_never_ends_is_a_leak(server):
    result = run("LeakyTarget", server)
    assert result.leaks is not None and result.leaks.threads == 1, result.leaks
    assert "no_leaks" in result.failed_checks
