"""The target children of a run, owned in one place: started, kept warm for a worker's
next case, handed to a case (or replaced by one of the case's own), reused or stopped.

Every child a case runs in comes from here (:func:`spawn`): a worker's :class:`Spares`
starts the next case's child while the current case runs, so its start-up (imports,
warm-up) overlaps; a case that needs a child of its own (``CasePlan.own_child``: its
``env``, a kernel namespace) gets a new one (:func:`child_for_case`); after the case the
child is kept for the target's next case only when :func:`keeps` says so. Which parent
processes fork their children from a warm copy is ``harness.targets.runtime.forking``'s.

Not here: the case itself (``harness.lifecycle``), which case comes next
(``harness.scheduling``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from harness.planning import CasePlan, RunSettings
from harness.targets.runtime.process import ChildFailed, TargetProcess

__all__ = ["STARTING_AT_ONCE", "Spares", "child_for_case", "keeps", "spawn"]

#: Children for idle lanes start this many at a time: a burst of start-ups (hermes
#: imports ~1.3 s of CPU each) on a loaded machine overran their start-up wait.
STARTING_AT_ONCE = max(2, os.cpu_count() or 1)
#: How long a child that is done may take to exit after ``exit``.
FINISH_S = 5.0


def spawn(
    plan: CasePlan, settings: RunSettings, *, command_prefix: Sequence[str] = ()
) -> TargetProcess:
    """A new child for ``plan``'s target, with the case's own environment on top."""
    extra_env: Mapping[str, str] = plan.scenario.env
    return TargetProcess.spawn(
        plan.target,
        environ=settings.environ,
        extra_env=dict(extra_env) or None,
        command_prefix=command_prefix,
    )


def child_for_case(
    plan: CasePlan,
    child: TargetProcess | None,
    settings: RunSettings,
    *,
    command_prefix: Sequence[str] = (),
) -> TargetProcess:
    """The child that runs ``plan``'s case: ``child`` (a warm spare), unless there is
    none or the case needs one of its own (then the spare is stopped)."""
    if child is not None and not plan.own_child:
        return child
    if child is not None:
        child.kill()
    return spawn(plan, settings, command_prefix=command_prefix)


def keeps(plan: CasePlan, report: Mapping[str, Any] | None, leaks: Any) -> bool:
    """Whether the child of a finished case takes the target's next case: the plan
    allows it, the case returned or raised and left no leak, and the child did not
    decline another job (``"reuse": false``)."""
    return (
        plan.reuse_child
        and report is not None
        and leaks is not None
        and leaks.total == 0
        and report.get("reuse") is not False
    )


class Spares:
    """One worker's warm children, one per target at most (used from its thread only)."""

    def __init__(self, settings: RunSettings, starting: threading.BoundedSemaphore) -> None:
        self._settings = settings
        #: shared by a run's workers: how many idle-lane children start at once
        self._starting = starting
        self._spares: dict[str, TargetProcess] = {}

    def for_case(
        self, plan: CasePlan, upcoming: CasePlan | None, *, lane: str
    ) -> TargetProcess | None:
        """The warm child for ``plan`` (None: the case starts its own), after starting
        the next case's (``upcoming``) so its start-up overlaps this case, and stopping
        the ones neither will use. An idle lane starts its children through the run's
        throttle instead, just before the case."""
        child = self._spares.pop(plan.target, None)
        self._drop(keep=None if upcoming is None else upcoming.target)
        if lane != "idle" and upcoming is not None and self._wants(upcoming, plan.target):
            self._spares[upcoming.target] = spawn(upcoming, self._settings)
        if child is None and lane == "idle" and self._wants(plan, None):
            child = self._start_throttled(plan)
        return child

    def give_back(self, plan: CasePlan, child: TargetProcess | None) -> None:
        """A clean child after ``plan``'s case: kept for the target's next case unless
        a spare already waits for it."""
        if child is None:
            return
        if plan.target in self._spares:
            child.finish(time.monotonic() + FINISH_S)
        else:
            self._spares[plan.target] = child

    def close(self) -> None:
        """Stop every spare (the worker is done)."""
        self._drop(keep=None)

    def _drop(self, *, keep: str | None) -> None:
        for name in [name for name in self._spares if name != keep]:
            self._spares.pop(name).kill()

    def _wants(self, upcoming: CasePlan, current: str | None) -> bool:
        """Whether to pre-start a child for ``upcoming``: not when one is waiting, not
        when the current case's child will likely be reused (same reusable target), and
        not when the case would not use it (a child of its own, another API)."""
        name = upcoming.target
        if name in self._spares or (name == current and upcoming.target_cls.reusable):
            return False
        return upcoming.applies and not upcoming.own_child

    def _start_throttled(self, plan: CasePlan) -> TargetProcess | None:
        """A child for ``plan``, started and ready while holding one of the run's start
        slots; None if it failed to start (the case then starts its own and reports it)."""
        with self._starting:
            child = spawn(plan, self._settings)
            try:
                child.wait_ready(time.monotonic() + plan.start_s)
            except ChildFailed:
                return None  # already killed and reaped by the failed wait
            except BaseException:
                child.kill()  # interrupted: no child outlives the run
                raise
        return child
