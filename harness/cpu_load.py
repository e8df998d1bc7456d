"""How starved the machine's CPUs are, and the throttle that holds a run's next case
while they are.

A run's cases are judged on time: a child that waits for a CPU misses a scaled deadline
that it would have met (a first byte at 0.25 s), and the harness's own lateness is
charged to the client. Eight workers and their lanes on a 2-core machine drove the load
to 18-20 by themselves (issue 38). So a run does not start another case on a worker
beyond :func:`floor` (one per CPU) while the CPUs are starved: the kernel's CPU pressure
(``/proc/pressure/cpu``, ``some``: the share of time at least one runnable task waited
for a CPU), taken as a rate between two readings of its ``total`` at least
:data:`WINDOW_S` apart, is at or above :data:`DEFAULT_PRESSURE_LIMIT`. Where the kernel
has no PSI, the 1-minute load average per CPU (``/proc/loadavg``) stands in, against
:data:`DEFAULT_LOAD_PER_CPU`; with neither, nothing is held. The choice of source is
:func:`source_for`, a pure function of which files exist.

A held worker waits on a condition that a finishing case signals, and measures again at
most every :data:`RECHECK_S`; a run always keeps :func:`floor` cases going, so it ends.

Not here: which case comes next (``harness.scheduling``), the workers (``harness.runner``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "DEFAULT_LOAD_PER_CPU",
    "DEFAULT_PRESSURE_LIMIT",
    "RECHECK_S",
    "WINDOW_S",
    "Throttle",
    "floor",
    "pressure_reader",
    "source_for",
    "starved",
]

#: CPU pressure (``some``, 0..1) at or above which no case starts beyond the floor: most
#: of the time something runnable waited for a CPU.
DEFAULT_PRESSURE_LIMIT = 0.7
#: Without PSI: the 1-minute load average per CPU at or above which no case starts.
DEFAULT_LOAD_PER_CPU = 3.0
#: The shortest window a pressure rate is taken over (shorter: the last one is reused).
WINDOW_S = 1.0
#: How often a held worker measures again when no case ended meanwhile.
RECHECK_S = 0.5
PSI_CPU = "/proc/pressure/cpu"
LOADAVG = "/proc/loadavg"


def floor(cpus: int) -> int:
    """Cases that always run, starved or not: one per CPU (and at least one, so a run
    on a machine busy with others still ends)."""
    return max(1, cpus)


def source_for(*, has_psi: bool, has_loadavg: bool) -> str:
    """Which reading a run uses: ``psi``, ``loadavg`` or ``none``."""
    return "psi" if has_psi else "loadavg" if has_loadavg else "none"


@dataclass(frozen=True)
class Reading:
    """One measurement: its source and value (pressure 0..1, or load per CPU)."""

    source: str
    value: float


def starved(
    reading: Reading | None,
    *,
    pressure_limit: float = DEFAULT_PRESSURE_LIMIT,
    load_per_cpu: float = DEFAULT_LOAD_PER_CPU,
) -> bool:
    """Whether ``reading`` says the CPUs are too starved to start another case."""
    if reading is None:
        return False
    limit = pressure_limit if reading.source == "psi" else load_per_cpu
    return reading.value >= limit


def _psi_total(text: str) -> float | None:
    """The ``some`` line's ``total`` (microseconds) of ``/proc/pressure/cpu``."""
    for line in text.splitlines():
        if line.startswith("some "):
            for field in line.split()[1:]:
                key, _, value = field.partition("=")
                if key == "total" and value.isdigit():
                    return float(value)
    return None


def pressure_reader(
    *, cpus: int, read_file: Callable[[str], str] | None = None
) -> Callable[[], Reading | None]:
    """A function that measures now (thread-safe: the throttle calls it under its lock)."""
    read = read_file or _read_text
    source = source_for(has_psi=os.path.exists(PSI_CPU), has_loadavg=os.path.exists(LOADAVG))
    last: list[tuple[float, float]] = []  # (monotonic, total) of the window's start
    value: list[float] = []

    def psi() -> Reading | None:
        total = _psi_total(read(PSI_CPU))
        if total is None:
            return None
        now = time.monotonic()
        if not last:
            last.append((now, total))
            return None  # the first reading has no window yet: hold nothing on it
        started, before = last[0]
        if now - started >= WINDOW_S:
            value[:] = [min(max((total - before) / ((now - started) * 1e6), 0.0), 1.0)]
            last[0] = (now, total)
        return Reading("psi", value[0]) if value else None

    def loadavg() -> Reading | None:
        fields = read(LOADAVG).split()
        return Reading("loadavg", float(fields[0]) / max(cpus, 1)) if fields else None

    return {"psi": psi, "loadavg": loadavg}.get(source, lambda: None)


def _read_text(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


class Throttle:
    """Holds a worker's next case while the CPUs are starved and :func:`floor` cases run."""

    def __init__(
        self,
        *,
        cpus: int | None = None,
        read: Callable[[], Reading | None] | None = None,
        pressure_limit: float = DEFAULT_PRESSURE_LIMIT,
        recheck_s: float = RECHECK_S,
    ) -> None:
        self.cpus = cpus or os.cpu_count() or 1
        self.floor = floor(self.cpus)
        self.pressure_limit = pressure_limit
        self._read = read or pressure_reader(cpus=self.cpus)
        self._recheck_s = recheck_s
        self._cond = threading.Condition()
        self._running = 0
        #: the most cases that ran at once, how many starts waited, the highest reading
        self.peak = 0
        self.held = 0
        self.worst: Reading | None = None
        self._stopped = False

    def admit(self) -> None:
        """Wait until this worker may start a case (returns at once below the floor)."""
        with self._cond:
            waited = False
            while not self._stopped and self._running >= self.floor:
                reading = self._read()
                if reading is not None and (self.worst is None or reading.value > self.worst.value):
                    self.worst = reading
                if not starved(reading, pressure_limit=self.pressure_limit):
                    break
                waited = True
                self._cond.wait(self._recheck_s)  # a finishing case wakes it sooner
            self.held += waited
            self._running += 1
            self.peak = max(self.peak, self._running)

    def release(self) -> None:
        """A case this throttle admitted is done."""
        with self._cond:
            self._running -= 1
            self._cond.notify()

    def stop(self) -> None:
        """The run is stopping: let every held worker go (it finds the queue empty)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def describe(self, workers: int) -> str:
        """The run's line about its workers, before it starts."""
        return (
            f"workers: {workers} on {self.cpus} CPU(s); beyond {self.floor} at once only while "
            f"CPU pressure is under {self.pressure_limit:.0%}"
        )

    def summary(self) -> str:
        """The run's line about its workers, after it ran."""
        worst = "" if self.worst is None else f", worst {_shown(self.worst)}"
        return f"workers: at most {self.peak} cases at once; {self.held} start(s) held{worst}"


def _shown(reading: Reading) -> str:
    if reading.source == "psi":
        return f"CPU pressure {reading.value:.0%}"
    return f"load {reading.value:.1f} per CPU"
