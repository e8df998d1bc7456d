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
``idle_lanes`` for expected hangs (which only wait), each with its own fault server and
its own pre-started target children (a child imports and warms up its client while the
previous case runs; a target whose children serve one job each, like hermes, gets its
next child started during the current case). A child whose case returned or raised and
left no leak is reused for the next case of its target (``reuse_children``); a hung or
leaky one never is. The work happens in the child processes, so the cases spread over
cores; the threads only wait on pipes.

Not here: scenario parsing (``harness.scenario``), rendering (``harness.report``).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from harness.case_result import CaseResult
from harness.judge import judge_case
from harness.lifecycle import CHILD_START_S, observe_case
from harness.planning import (
    DEFAULT_JOBS,
    DEFAULT_MIN_CEILING_S,
    DEFAULT_TARGETS,
    DEFAULT_TIME_SCALE,
    LONG_CASE_S,
    RunSettings,
    Shard,
    estimated_s,
    only_waits,
    plan,
)
from harness.scenario import Scenario
from harness.targets import expectation_key, load_target
from harness.targets.process import ChildFailed, TargetProcess

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
    with contextlib.ExitStack() as stack:
        follow_up = _FollowUp(stack, _default_server)
        result, reusable = _run_case(
            scenario,
            target,
            server=server,
            settings=settings,
            child=child,
            expect_as=expect_as,
            follow_up_url=follow_up.url_for(target),
        )
    if reusable is not None:
        reusable.finish(time.monotonic() + 5.0)
    return result


def _run_case(
    scenario: Scenario,
    target: str,
    *,
    server: Any,
    settings: RunSettings,
    child: TargetProcess | None,
    expect_as: str | None,
    follow_up_url: str | None = None,
) -> tuple[CaseResult, TargetProcess | None]:
    """:func:`run_case`, also returning the child when it is clean enough to reuse."""
    key = expect_as or expectation_key(target)
    # Kernel timers (keepalive, RTO, TCP_USER_TIMEOUT) are real seconds, and a relay's own
    # latency does not shrink: such scenarios set (or imply) a floor for the time scale.
    scale = scenario.time_scale_for(settings.time_scale)
    ceiling = settings.ceiling_for(scenario, target, time_scale=scale)
    observed, reusable = observe_case(
        scenario,
        target,
        server=server,
        settings=settings,
        child=child,
        time_scale=scale,
        ceiling_s=ceiling,
        follow_up_url=follow_up_url,
    )
    result = judge_case(
        scenario,
        target,
        observed,
        expected=scenario.expected_for(key),
        max_requests=scenario.budget.max_requests_of(key),
        time_scale=scale,
        ceiling_s=ceiling,
        keep_timeline=settings.keep_timeline,
        find_sentinel=_find_sentinel,
    )
    return result, reusable


def run_cases(
    cases: Sequence[tuple[Scenario, str]],
    *,
    settings: RunSettings = _DEFAULT_SETTINGS,
    on_result: Callable[[CaseResult], None] | None = None,
    server_factory: Callable[[], Any] | None = None,
) -> list[CaseResult]:
    """Run ``cases`` on ``settings.jobs`` workers (plus ``settings.wait_lanes`` for long,
    waiting cases); results come back in ``cases`` order.

    ``on_result`` is called (from a worker thread, under a lock) as each case finishes.
    ``server_factory`` builds a started fault server per worker (default: the embedded
    ``harness.server.FaultServer`` on 127.0.0.1, any free port).
    """
    factory = server_factory or _default_server
    results: list[CaseResult | None] = [None] * len(cases)
    # Longest first (a likely hang costs its whole ceiling), so the long cases do not all
    # end up at the tail, and same-target cases side by side so a worker reuses (or has
    # pre-started) its child; results still come back in ``cases`` order. Three queues:
    # expected hangs on the embedded server (``only_waits``: idle until the ceiling),
    # other long cases (kernel timers, proxies) and short ones. ``idle_lanes`` and
    # ``wait_lanes`` extra workers take only the first two, so waiting cases wait side
    # by side without adding to the number of cases that compete for the CPU.
    ordered = sorted(
        enumerate(cases), key=lambda item: (-estimated_s(item[1], settings), item[1][1])
    )
    idle = settings.idle_lanes > 0
    idle_queue = [c for c in ordered if idle and only_waits(c[1])]
    rest = [c for c in ordered if not (idle and only_waits(c[1]))]
    long_queue = [c for c in rest if estimated_s(c[1], settings) >= LONG_CASE_S]
    short_queue = [c for c in rest if estimated_s(c[1], settings) < LONG_CASE_S]
    queues = {
        "general": (short_queue, long_queue, idle_queue),
        "wait": (long_queue, idle_queue),
        "idle": (idle_queue,),
    }
    lock = threading.Lock()
    # Idle lanes start their children a few at a time: a burst of start-ups (hermes
    # imports ~1.3 s of CPU each) on a loaded machine overran CHILD_START_S.
    starting = threading.BoundedSemaphore(max(2, os.cpu_count() or 1))
    errors: list[BaseException] = []

    def next_case(lane: str) -> tuple[int, tuple[Scenario, str]] | None:
        with lock:
            if errors:
                return None
            for queue in queues[lane]:
                if queue:
                    return queue.pop(0)
            return None

    def peek_case(lane: str) -> tuple[Scenario, str] | None:
        with lock:
            for queue in queues[lane]:
                if queue:
                    return queue[0][1]
            return None

    def worker(lane: str) -> None:
        spares: dict[str, TargetProcess] = {}
        try:
            with factory() as server, contextlib.ExitStack() as stack:
                follow_up = _FollowUp(stack, factory)
                while (item := next_case(lane)) is not None:
                    index, (scenario, target) = item
                    child = spares.pop(target, None)
                    upcoming = peek_case(lane)
                    # Start the next case's child now, so its start-up (imports, warm-up)
                    # overlaps this case; for the same reusable target, this case's child
                    # is usually reused instead.
                    if _wants_spare(upcoming, target, spares):
                        assert upcoming is not None
                        spares[upcoming[1]] = TargetProcess.spawn(
                            upcoming[1], environ=settings.environ
                        )
                    if child is None and lane == "idle" and _wants_spare(item[1], "", {}):
                        child = _start_throttled(target, settings, starting)
                    result, reusable = _run_case(
                        scenario,
                        target,
                        server=server,
                        settings=settings,
                        child=child,
                        expect_as=None,
                        follow_up_url=follow_up.url_for(target),
                    )
                    if reusable is not None and target not in spares:
                        spares[target] = reusable
                    elif reusable is not None:
                        reusable.finish(time.monotonic() + 5.0)
                    with lock:
                        results[index] = result
                        if on_result is not None:
                            on_result(result)
        except BaseException as exc:  # reported to the caller after the other workers stop
            with lock:
                errors.append(exc)
        finally:
            for spare in spares.values():
                spare.kill()

    general = min(settings.jobs, max(len(cases), 1))
    lanes = ["general"] * general
    lanes += ["wait"] * min(settings.wait_lanes, len(long_queue))
    lanes += ["idle"] * min(settings.idle_lanes, len(idle_queue))
    threads = [
        threading.Thread(target=worker, args=(lane,), name=f"harness-{lane}-{i}", daemon=True)
        for i, lane in enumerate(lanes)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return [r for r in results if r is not None]


# --------------------------------------------------------------------------- helpers


def _start_throttled(
    target: str, settings: RunSettings, starting: threading.BoundedSemaphore
) -> TargetProcess | None:
    """A child for ``target``, started and ready while holding one of ``starting``; None
    if it failed to start (the case then starts its own and reports the failure)."""
    with starting:
        child = TargetProcess.spawn(target, environ=settings.environ)
        try:
            child.wait_ready(time.monotonic() + CHILD_START_S)
        except ChildFailed:
            return None  # already killed and reaped by the failed wait
    return child


def _wants_spare(
    upcoming: tuple[Scenario, str] | None, target: str, spares: dict[str, TargetProcess]
) -> bool:
    """Whether to pre-start a child for the upcoming case: not when one is waiting, not
    when this case's child will likely be reused (same reusable target), and not when
    the case would not use it (its own environment, a kernel namespace, another API)."""
    if upcoming is None:
        return False
    scenario, name = upcoming
    cls = load_target(name)
    if name in spares or (name == target and getattr(cls, "reusable", False)):
        return False
    if scenario.env or scenario.backend == "kernel":
        return False
    return scenario.api in getattr(cls, "apis", (scenario.api,))


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

    def url_for(self, target: str) -> str | None:
        if not getattr(load_target(target), "follows_up", False):
            return None
        if self._url is None:
            self._url = self._stack.enter_context(self._factory()).base_url
        return self._url


def _default_server() -> Any:
    from harness.server import FaultServer

    return FaultServer()
