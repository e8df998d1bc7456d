"""Hostile targets end with their case: a ``setsid`` grandchild, a 4 GiB allocation,
SIGSEGV, SIGTERM ignored. Each outcome is named, and after the case no process is left
in the child's cgroup or anywhere in /proc (``harness.cgroups``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness import cgroups
from harness.runner import RunSettings, run_case
from harness.scenario import scenario_from_dict

TESTS_DIR = str(Path(__file__).resolve().parents[1])
TARGETS = "runner.hostile_targets"

pytestmark = pytest.mark.skipif(
    cgroups.layout().unified is None, reason=f"no cgroups here: {cgroups.layout().problem}"
)


def settings(*, fork: bool = True) -> RunSettings:
    environ = {**os.environ, "PYTHONPATH": TESTS_DIR, "HARNESS_FORK_CHILDREN": "1" if fork else "0"}
    return RunSettings(time_scale=0.02, min_ceiling_s=2.0, environ=environ)


def run(server, name: str, *, fork: bool = True):
    """One case of hostile target ``name``; asserts that it left no process and no group
    behind (compared with before it: another test's child in this worker is not its)."""
    scenario = scenario_from_dict(
        {"name": name.lower(), "summary": name, "ceiling_s": 10, "expected": {}}
    )
    processes, groups = set(in_our_groups()), set(child_groups())
    result = run_case(scenario, f"{TARGETS}:{name}", server=server, settings=settings(fork=fork))
    assert set(in_our_groups()) <= processes, "a process of the case outlived it"
    assert set(child_groups()) <= groups, "the case's cgroup outlived it"
    return result


def in_our_groups() -> list[int]:
    """Every live process whose ``/proc/PID/cgroup`` names a child group of this process
    (each process's own record, not the group's list, which the code under test reads)."""
    mark = f"/harness-{os.getpid()}/"
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            text = Path(entry.path, "cgroup").read_text()
        except OSError:
            continue  # exited while we looked
        if mark in text and not is_zombie(int(entry.name)):
            found.append(int(entry.name))
    return found


def is_zombie(pid: int) -> bool:
    """Dead and waiting for its reaper, or gone: either way nothing of it runs."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def child_groups() -> list[str]:
    own = cgroups.layout().unified
    assert own is not None
    return [e.name for e in os.scandir(own) if e.is_dir()]


@pytest.mark.timeout(60)
def test_setsid_grandchild_is_a_process_leak_and_ends_with_the_case(server):
    result = run(server, "SetsidSleeper")
    stray = result.details["stray_pid"]
    assert result.outcome.kind == "ok", result.message
    assert result.leaks is not None and result.leaks.processes == 1, result.leaks
    assert "processes=1" in str(result.leaks)
    assert is_zombie(stray), f"the setsid sleeper {stray} outlived its case"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("fork", [True, False], ids=["forked", "started"])
def test_a_4gib_allocation_is_target_resources_not_hung(server, fork):
    result = run(server, "MemoryHog", fork=fork)
    assert result.outcome.label == "error(TargetResources)", result.message
    assert f"memory limit ({256 << 20} bytes)" in result.outcome.detail
    assert "clean_error" in result.failed_checks  # a runaway target, not a reported fault


@pytest.mark.timeout(60)
@pytest.mark.parametrize("fork", [True, False], ids=["forked", "started"])
def test_a_segfault_names_its_signal(server, fork):
    result = run(server, "Segfault", fork=fork)
    assert result.outcome.label == "error(TargetCrashed)", result.message
    assert "killed by SIGSEGV" in result.outcome.detail, result.outcome.detail


@pytest.mark.timeout(60)
def test_sigterm_ignored_hang_and_its_grandchild_end_at_the_ceiling(server):
    result = run(server, "IgnoresTerm")
    assert result.outcome.kind == "hung", result.message
