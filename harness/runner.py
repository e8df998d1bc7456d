"""The runner: scenario x target -> :class:`CaseResult`, one case at a time or many in parallel.

A case is three steps, each in its own module: planning (``harness.planning``: settings,
the case list, shards), the child lifecycle (``harness.lifecycle``: fault script,
network path, target child, the outer ceiling, leaks) and the pure judge step
(``harness.judge``: outcome, accounting, expectation and contract verdict, building the
``CaseResult`` once). This module ties them together and schedules cases on workers.

The outer ceiling is ``max(ceiling_s * time_scale, min_ceiling_s)``; ``min_ceiling_s``
exists because a bare SDK's own retry backoff (0.5 s, 1 s) runs in real time whatever
the time scale: below ~3 s a correct SDK retry would be called hung.

Parallelism: ``jobs`` worker threads, plus ``wait_lanes`` for long cases and
``idle_lanes`` for expected hangs (which only wait; which case a lane takes next is
``harness.scheduling``'s), each with its own fault server and its own pre-started
target children (a child imports and warms up its client while the
previous case runs; a target whose children serve one job each, like hermes, gets its
next child started during the current case). A child whose case returned or raised and
left no leak is reused for the next case of its target (``reuse_children``); a hung or
leaky one never is. The work happens in the child processes, so the cases spread over
cores; the threads only wait on pipes. A general or wait lane starts its next case
through the run's :class:`~harness.cpu_load.Throttle`: beyond one case per CPU, only
while the CPUs are not starved (measured: the kernel's CPU pressure), so the run's own
load does not become the lateness its cases are judged by; idle lanes only wait.

Not here: scenario parsing (``harness.scenario``), rendering (``harness.report``).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from harness.case_result import CaseResult
from harness.children import STARTING_AT_ONCE, Spares
from harness.cpu_load import Throttle
from harness.judge import judge_case
from harness.lifecycle import Observed, observe_case
from harness.planning import (
    DEFAULT_JOBS,
    DEFAULT_MIN_CEILING_S,
    DEFAULT_TARGETS,
    DEFAULT_TIME_SCALE,
    CasePlan,
    RunSettings,
    Shard,
    plan,
    plan_case,
)
from harness.scenario import Scenario
from harness.scheduling import CaseQueue
from harness.targets.runtime.process import TargetProcess

__all__ = [
    "DEFAULT_JOBS",
    "DEFAULT_MIN_CEILING_S",
    "DEFAULT_TARGETS",
    "DEFAULT_TIME_SCALE",
    "CaseResult",
    "RunSettings",
    "Shard",
    "plan",
    "run_case",
    "run_cases",
]

#: Frozen, so one shared default is safe.
_DEFAULT_SETTINGS = RunSettings()


def run_case(
    scenario: Scenario,
    target: str,
    *,
    server: Any,
    settings: RunSettings = _DEFAULT_SETTINGS,
    child: TargetProcess | None = None,
    expect_as: str | None = None,
) -> CaseResult:
    """Run one case on ``server`` (a started ``FaultServer``).

    ``child``, if given, is a pre-started target process for ``target`` (the runner's warm
    spare); it is consumed. ``expect_as`` judges the target by another target's
    expectation (a ``mutant:`` target is judged by ``reference`` by default).
    """
    case = plan_case(scenario, target, settings, expect_as=expect_as)
    with contextlib.ExitStack() as stack:
        follow_up = _FollowUp(stack, _default_server)
        observed, reusable = observe_case(
            case,
            server=server,
            settings=settings,
            child=child,
            follow_up_url=follow_up.url_for(case),
        )
    result = _judged(case, observed, settings)
    if reusable is not None:
        reusable.finish(time.monotonic() + 5.0)
    return result


def _until_not_void(once: Callable[[], CaseResult], retries: int) -> CaseResult:
    """Run a case (``once``) and again while the harness's own lateness voided it, at
    most ``retries`` more times; the result says how many reruns it took."""
    result = once()
    reruns = 0
    while result.void and reruns < retries:
        reruns += 1
        result = once()
    return replace(result, reruns=reruns) if reruns else result


def _judged(case: CasePlan, observed: Observed, settings: RunSettings) -> CaseResult:
    return judge_case(
        case, observed, keep_timeline=settings.keep_timeline, find_sentinel=_find_sentinel
    )


def run_cases(
    cases: Sequence[tuple[Scenario, str]],
    *,
    settings: RunSettings = _DEFAULT_SETTINGS,
    on_result: Callable[[CaseResult], None] | None = None,
    server_factory: Callable[[], Any] | None = None,
    throttle: Throttle | None = None,
) -> list[CaseResult]:
    """Run ``cases`` on ``settings.jobs`` workers (plus ``settings.wait_lanes`` for long,
    waiting cases and ``settings.idle_lanes`` for expected hangs); results come back in
    ``cases`` order. The first error a worker meets stops the run and is raised, after
    every worker has stopped and killed its spare children.

    ``on_result`` is called (from a worker thread, under a lock) as each case finishes.
    ``server_factory`` builds a started fault server per worker (default: the embedded
    ``harness.server.FaultServer`` on 127.0.0.1, any free port). ``throttle`` holds
    the general and wait lanes' next case while the CPUs are starved (default: one
    measuring this machine; its ``summary()`` says what it did).
    """
    throttle = throttle or Throttle()
    factory = server_factory or _default_server
    results: list[CaseResult | None] = [None] * len(cases)
    # Kinds, lanes and which case a worker takes next: ``harness.scheduling`` (a worker
    # stays on its target, so its clean child is reused); results still come back in
    # ``cases`` order.
    queue = CaseQueue([plan_case(s, t, settings) for s, t in cases], settings)
    lock = threading.Lock()
    starting = threading.BoundedSemaphore(STARTING_AT_ONCE)
    errors: list[BaseException] = []

    def worker(lane: str, name: str) -> None:
        spares = Spares(settings, starting)  # this worker's children (harness.children)
        current: str | None = None
        # an expected hang only waits: its lane never adds to the CPU's queue
        throttled = throttle if lane != "idle" else None
        try:
            with factory() as server, contextlib.ExitStack() as stack:
                follow_up = _FollowUp(stack, factory)
                while True:
                    # taken first, then admitted: a take may wait for a capped target's
                    # workers to come back, which they could not while it held an admission
                    if (item := queue.take(lane, name, current)) is None:
                        break
                    if throttled is not None:
                        throttled.admit()
                    try:
                        index, case = item
                        current = case.target
                        upcoming = queue.peek(lane, name, case.target)

                        def once(case: CasePlan = case, upcoming: Any = upcoming) -> CaseResult:
                            observed, reusable = observe_case(
                                case,
                                server=server,
                                settings=settings,
                                child=spares.for_case(case, upcoming, lane=lane),
                                follow_up_url=follow_up.url_for(case),
                            )
                            spares.give_back(case, reusable)
                            return _judged(case, observed, settings)

                        # a void case's reruns hold the same admission as its first try
                        result = _until_not_void(once, settings.void_retries)
                    finally:
                        if throttled is not None:
                            throttled.release()
                    with lock:
                        results[index] = result
                        if on_result is not None:
                            on_result(result)
        except BaseException as exc:  # reported to the caller after the other workers stop
            queue.stop()
            throttle.stop()
            with lock:
                errors.append(exc)
        finally:
            spares.close()

    general = min(settings.jobs, max(len(cases), 1))
    lanes = ["general"] * general
    lanes += ["wait"] * min(settings.wait_lanes, queue.count("long"))
    lanes += ["idle"] * min(settings.idle_lanes, queue.count("idle"))
    threads = [
        threading.Thread(
            target=worker, args=(lane, f"{lane}-{i}"), name=f"harness-{lane}-{i}", daemon=True
        )
        for i, lane in enumerate(lanes)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    done = [r for r in results if r is not None]
    if len(done) < len(cases):  # a gate that ran part of its cases must not pass as whole
        never = [f"{s.name}[{t}]" for (s, t), r in zip(cases, results, strict=True) if r is None]
        raise RuntimeError(
            f"{len(never)} of {len(cases)} cases were never run: {', '.join(never[:5])}"
        )
    return done


# --------------------------------------------------------------------------- helpers


def _find_sentinel(text: str) -> str | None:
    from harness.sentinels import find_sentinels

    findings = find_sentinels(text, where="reply")
    return findings[0].describe() if findings else None


class _FollowUp:
    """The fault-free server a worker's follow-up calls go to, started on first use (only
    for a target that makes them: ``Target.follows_up``)."""

    def __init__(self, stack: contextlib.ExitStack, factory: Callable[[], Any]) -> None:
        self._stack = stack
        self._factory = factory
        self._url: str | None = None

    def url_for(self, case: CasePlan) -> str | None:
        if not case.follows_up:
            return None
        if self._url is None:
            self._url = self._stack.enter_context(self._factory()).base_url
        return self._url


def _default_server() -> Any:
    from harness.server import FaultServer

    return FaultServer()
