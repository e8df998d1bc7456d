"""What a process holds right now, read from /proc: descriptors, threads, TCP sockets by state.

The runner snapshots a target child once when it is ready (the baseline) and once after
its call returned and its client was closed; :func:`leaks_between` is the difference.
A socket in CLOSE-WAIT is one the peer closed and the process never did -- the
signature of hermes-agent #10324.

Linux only; elsewhere :func:`snapshot` returns None and leaks are reported as unknown.
The socket table is read with :mod:`harness.tcpstate`. A snapshot covers the process and
its descendants (a ``command:`` target's program and whatever it forks), so a leak is
counted wherever in the tree it sits.

:func:`runqueue_waits` reads how long each thread of the tree has waited for a CPU
(``/proc/<pid>/task/<tid>/schedstat``, nanoseconds on the run queue); the difference
over a case (:func:`starved_s`) is how long the machine kept the target from running --
the harness's load, not the client's doing (``harness.lateness``); readings stamped
during the case give it between two moments (:func:`starved_between`).

Not here: deciding what a leak means for an outcome (``harness.runner``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness import tcpstate

__all__ = [
    "Leaks",
    "ProcessSnapshot",
    "descendants",
    "leaks_between",
    "runqueue_waits",
    "snapshot",
    "starved_between",
    "starved_s",
]


@dataclass(frozen=True)
class ProcessSnapshot:
    """Descriptor count, thread count and the TCP states of the sockets the process owns."""

    fds: int
    threads: int
    tcp_states: tuple[str, ...]

    def count(self, state: str) -> int:
        return sum(1 for s in self.tcp_states if s == state)


@dataclass(frozen=True)
class Leaks:
    """Growth since the baseline, plus sockets left in states that mean trouble."""

    fds: int
    threads: int
    close_wait: int
    established: int
    #: Processes the child started that are still there (its cgroup, ``harness.cgroups``:
    #: a ``setsid`` grandchild is no descendant any more); 0 in reports made before it.
    processes: int = 0

    @property
    def total(self) -> int:
        growth = max(self.fds, 0) + max(self.threads, 0)
        return growth + self.close_wait + self.established + self.processes

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)

    def __str__(self) -> str:
        if self.total == 0:
            return "0"
        parts = [f"{n}={v}" for n, v in self.to_dict().items() if v > 0]
        return " ".join(parts)


#: A bound on the processes one snapshot walks (a fork bomb must not stall the runner).
MAX_TREE_PROCESSES = 256


def snapshot(pid: int, *, proc: Path = Path("/proc")) -> ProcessSnapshot | None:
    """Read the descriptors, threads and socket states of ``pid`` and its descendants;
    None if ``pid`` is unreadable or gone (a descendant that exits meanwhile is skipped)."""
    try:
        fd_targets, threads = _process_holdings(proc / str(pid))
        for child in descendants(pid, proc=proc):
            try:
                child_fds, child_threads = _process_holdings(proc / str(child))
            except (FileNotFoundError, ProcessLookupError, PermissionError, NotADirectoryError):
                continue  # exited between the listing and the read
            fd_targets += child_fds
            threads += child_threads
        inodes = {int(t[len("socket:[") : -1]) for t in fd_targets if t.startswith("socket:[")}
        sockets = tcpstate.snapshot(netns_pid=pid, inodes=inodes, proc=str(proc)) if inodes else []
    except (FileNotFoundError, ProcessLookupError, PermissionError, NotADirectoryError):
        return None
    except tcpstate.TcpStateError:  # the table went with the process, or is unreadable
        return None
    states = [s.state for s in sockets]
    return ProcessSnapshot(fds=len(fd_targets), threads=threads, tcp_states=tuple(sorted(states)))


def _process_holdings(base: Path) -> tuple[list[str], int]:
    """One process's descriptor targets and thread count."""
    fd_targets = []
    for entry in os.scandir(base / "fd"):
        try:
            fd_targets.append(os.readlink(entry.path))
        except FileNotFoundError:  # closed while we listed
            continue
    return fd_targets, len(os.listdir(base / "task"))


def descendants(pid: int, *, proc: Path = Path("/proc")) -> list[int]:
    """Every live descendant of ``pid`` (from ``/proc/<pid>/task/<tid>/children``),
    breadth first, at most ``MAX_TREE_PROCESSES``."""
    found: list[int] = []
    queue = [pid]
    while queue and len(found) < MAX_TREE_PROCESSES:
        parent = queue.pop(0)
        try:
            tasks = os.listdir(proc / str(parent) / "task")
        except OSError:
            continue
        for tid in tasks:
            try:
                text = (proc / str(parent) / "task" / tid / "children").read_text()
            except OSError:
                continue
            for child in (int(c) for c in text.split()):
                if child not in found and len(found) < MAX_TREE_PROCESSES:
                    found.append(child)
                    queue.append(child)
    return found


def leaks_between(before: ProcessSnapshot | None, after: ProcessSnapshot | None) -> Leaks | None:
    """What ``after`` holds beyond ``before`` (None when either is unknown)."""
    if before is None or after is None:
        return None
    return Leaks(
        fds=after.fds - before.fds,
        threads=after.threads - before.threads,
        close_wait=max(after.count("CLOSE_WAIT") - before.count("CLOSE_WAIT"), 0),
        established=max(after.count("ESTABLISHED") - before.count("ESTABLISHED"), 0),
    )


def runqueue_waits(pid: int, *, proc: Path = Path("/proc")) -> dict[int, float]:
    """Seconds each thread of ``pid`` and its descendants has waited on a CPU run queue
    since it started (the second field of ``schedstat``), by thread id; empty where the
    kernel does not keep the figure or the process is gone."""
    waits: dict[int, float] = {}
    for process in (pid, *descendants(pid, proc=proc)):
        try:
            tids = os.listdir(proc / str(process) / "task")
        except OSError:
            continue
        for tid in tids:
            try:
                fields = (proc / str(process) / "task" / tid / "schedstat").read_text().split()
                waits[int(tid)] = int(fields[1]) / 1e9
            except (OSError, IndexError, ValueError):
                continue  # exited meanwhile, or no schedstat in this kernel
    return waits


def starved_s(before: Mapping[int, float], after: Mapping[int, float]) -> float | None:
    """The longest any one thread waited for a CPU between two readings (a thread born
    meanwhile counts from zero); None when the second reading is empty (unknown)."""
    if not after:
        return None
    return max(wait - before.get(tid, 0.0) for tid, wait in after.items())


def starved_between(
    readings: Sequence[tuple[float, Mapping[int, float]]], t0: float, t1: float
) -> float | None:
    """The longest any one thread waited for a CPU from ``t0`` to ``t1``, by the first
    :func:`runqueue_waits` reading stamped at or after each (``(time, waits)``, in time
    order); None when either has none, or both are the same reading."""
    first = next((w for t, w in readings if t >= t0), None)
    last = next((w for t, w in readings if t >= t1), None)
    if first is None or last is None or first is last:
        return None
    return starved_s(first, last)
