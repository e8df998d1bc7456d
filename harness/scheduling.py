"""Which case a worker takes next: the run's cases in kinds and per-target groups.

The cases are their plans (``harness.planning.CasePlan``, decided once). Three kinds of
case: expected hangs (``only_waits``: the child idles until the ceiling), other long
ones (``estimate_s`` >= ``LONG_CASE_S``: kernel timers, relays, proxies; or
a scenario that raises its own time scale above the run's, so it paces in near real
time) and short ones. A lane takes kinds in its order (``LANE_KINDS``): a general worker short
cases first, then long, then idle ones; a wait lane long then idle; an idle lane only
expected hangs, so waiting cases wait side by side without adding to the cases that
compete for the CPU.

Within a kind the cases are grouped by target, each group longest first. A worker takes
the longest case left, but stays on its own target unless another target's longest
case is ``SWITCH_COST_S`` longer, so its clean child is reused (~1.7 s of CPU per child
start-up here); among equals it moves to the target with the most estimated work left
per worker already on it, so the workers spread over the targets instead of all
switching target at the same boundary (8 mutant stacks in one shared longest-first
queue cost 4 workers a child start-up at nearly every target boundary). A target with
``Target.max_parallel`` is taken by at most that many workers at once (and as many
idle lanes, or ``Target.idle_parallel``: its expected hangs only wait).

Not here: running a case (``harness.runner``, ``harness.lifecycle``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from harness.planning import LONG_CASE_S, CasePlan, RunSettings

__all__ = ["LANE_KINDS", "SWITCH_COST_S", "CaseQueue"]

#: What moving to another target costs a worker: a child start-up (imports and warm-up,
#: ~1.7 s of CPU for the reference client; hermes's more).
SWITCH_COST_S = 2.0
#: lane -> the kinds of case it takes, in order of preference.
LANE_KINDS: dict[str, tuple[str, ...]] = {
    "general": ("short", "long", "idle"),
    "wait": ("long", "idle"),
    "idle": ("idle",),
}


class CaseQueue:
    """The cases not yet taken, shared by the workers of one run (thread-safe)."""

    def __init__(self, cases: Sequence[CasePlan], settings: RunSettings) -> None:
        self._lock = threading.Condition()
        self._stopped = False
        #: kind -> target -> [(estimate, index, case)], longest first
        self._groups: dict[str, dict[str, list[tuple[float, int, CasePlan]]]] = {
            kind: {} for kind in ("short", "long", "idle")
        }
        #: worker -> the target it is on (its child's), for spreading the workers
        self._on: dict[str, str] = {}
        #: worker -> its lane (the ``Target.max_parallel`` cap counts idle lanes apart)
        self._lanes: dict[str, str] = {}
        for index, case in enumerate(cases):
            estimate = case.estimate_s
            kind = self._kind(case, estimate, settings)
            self._groups[kind].setdefault(case.target, []).append((estimate, index, case))
        for groups in self._groups.values():
            for group in groups.values():
                group.sort(key=lambda item: (-item[0], item[1]))

    @staticmethod
    def _kind(case: CasePlan, estimate: float, settings: RunSettings) -> str:
        if settings.idle_lanes > 0 and case.only_waits:
            return "idle"
        # A scenario with a time-scale floor of its own (slow-but-alive pacing, a relay,
        # kernel timers) paces in near real time with wide margins: it waits, and its
        # seconds (10 s for a keep-alive stream at 0.2) kept the general workers busy.
        floored = case.time_scale > settings.time_scale
        return "long" if estimate >= LONG_CASE_S or floored else "short"

    def count(self, kind: str) -> int:
        """How many cases of ``kind`` are left."""
        with self._lock:
            return sum(len(group) for group in self._groups[kind].values())

    def stop(self) -> None:
        """No more cases for anyone (a worker failed: the run ends)."""
        with self._lock:
            self._stopped = True
            self._lock.notify_all()

    def take(
        self, lane: str, worker: str, current: str | None, *, block: bool = True
    ) -> tuple[int, CasePlan] | None:
        """The next case for ``worker`` on ``lane`` (``current``: the target of the case
        it ran last), removed from the queue; None when its lane has nothing left.

        A case left whose target is at its ``Target.max_parallel`` is waited for (until
        a worker running one of its cases comes back for its next), not given up: the
        workers on the target may be on a lane that cannot take it (a wait lane takes no
        short case), and a worker that left would leave the case to nobody (2026-12-06:
        two wait lanes on litellm-proxy+openai-sdk's long cases sent every general worker
        away; 50 of its 97 cases never ran). ``block=False``: None at once instead."""
        with self._lock:
            self._on.pop(worker, None)  # it runs nothing now: no longer one of the cap
            self._lock.notify_all()
            while True:
                found = self._choose(lane, worker, current)
                if found is not None:
                    break
                if not block or self._stopped or not self._left_for(lane):
                    return None
                self._lock.wait()
            kind, target = found
            _, index, case = self._groups[kind][target].pop(0)
            if not self._groups[kind][target]:
                del self._groups[kind][target]
            self._on[worker] = target
            self._lanes[worker] = lane
            return index, case

    def _left_for(self, lane: str) -> bool:
        """Is any case left of a kind ``lane`` takes (whatever the caps say now)?"""
        return any(self._groups[kind] for kind in LANE_KINDS[lane])

    def peek(self, lane: str, worker: str, current: str | None) -> CasePlan | None:
        """The case ``take`` would return now, left in the queue."""
        with self._lock:
            found = self._choose(lane, worker, current)
            return None if found is None else self._groups[found[0]][found[1]][0][2]

    def _choose(self, lane: str, worker: str, current: str | None) -> tuple[str, str] | None:
        if self._stopped:
            return None
        others = [t for w, t in self._on.items() if w != worker]
        # The cap counts idle lanes apart: an expected hang only waits, so a target's
        # hangs wait beside its running cases instead of queueing behind them.
        idle = lane == "idle"
        rivals = [
            t for w, t in self._on.items() if w != worker and (self._lanes[w] == "idle") == idle
        ]
        for kind in LANE_KINDS[lane]:
            groups = {t: g for t, g in self._groups[kind].items() if not _full(g, t, rivals, idle)}
            if groups:
                best = min(
                    groups,
                    key=lambda t: _rank(groups[t], t, current, others, self._capped_left(t)),  # noqa: B023 - called at once
                )
                return kind, best
        return None

    def _capped_left(self, target: str) -> float:
        """The wall time ``target``'s cases left need at the least if it has a
        ``Target.max_parallel`` cap: their estimated work over the cap (idle lanes
        apart); 0 for an uncapped target."""
        cap = 0
        work = 0.0
        for kind in ("short", "long"):
            group = self._groups[kind].get(target)
            if group:
                cap = group[0][2].target_cls.max_parallel
                work += sum(item[0] for item in group)
        return work / cap if cap > 0 else 0.0


def _full(
    group: list[tuple[float, int, CasePlan]], target: str, others: list[str], idle: bool = False
) -> bool:
    """Does ``target`` already have its ``Target.max_parallel`` workers (other than this
    one; on idle lanes its ``Target.idle_parallel``)? Then this worker leaves it to them:
    they stay on it until its cases are done."""
    cls = group[0][2].target_cls
    cap = (cls.idle_parallel or cls.max_parallel) if idle else cls.max_parallel
    return cap > 0 and others.count(target) >= cap


def _rank(
    group: list[tuple[float, int, CasePlan]],
    target: str,
    current: str | None,
    others: list[str],
    capped_left: float = 0.0,
) -> tuple[float, float, str]:
    """Sort key for the next target: the longest path first (a long case left for the
    tail is the wall time, and so is the work of a target capped at a few workers:
    ``capped_left``), the worker's own target counted ``SWITCH_COST_S`` longer (a
    switch costs a child start-up); then most estimated work left per worker on it, so
    workers spread over the targets; the name breaks ties, so the choice is
    deterministic."""
    head = max(group[0][0], capped_left) + (SWITCH_COST_S if target == current else 0.0)
    left = sum(item[0] for item in group) or float(len(group))
    return (-head, -left / (1 + others.count(target)), target)
