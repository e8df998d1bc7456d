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
    RunSettings,
    Shard,
    case_time_scale,
    plan,
)
from harness.scenario import Scenario
from harness.scheduling import CaseQueue
from harness.targets import expectation_key, load_target
from harness.targets.runtime.process import ChildFailed, TargetProcess

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

#: Children for idle lanes start this many at a time: a burst of start-ups (hermes
#: imports ~1.3 s of CPU each) on a loaded machine overran CHILD_START_S.
STARTING_AT_ONCE = max(2, os.cpu_count() or 1)
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
    # latency does not shrink: such scenarios set (or imply) a floor for the time scale;
    # so does a target whose own deadlines are only as fine as its poll (hermes).
    scale = case_time_scale(scenario, target, settings.time_scale)
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
    waiting cases and ``settings.idle_lanes`` for expected hangs); results come back in
    ``cases`` order. The first error a worker meets stops the run and is raised, after
    every worker has stopped and killed its spare children.

    ``on_result`` is called (from a worker thread, under a lock) as each case finishes.
    ``server_factory`` builds a started fault server per worker (default: the embedded
    ``harness.server.FaultServer`` on 127.0.0.1, any free port).
    """
    factory = server_factory or _default_server
    results: list[CaseResult | None] = [None] * len(cases)
    # Kinds, lanes and which case a worker takes next: ``harness.scheduling`` (a worker
    # stays on its target, so its clean child is reused); results still come back in
    # ``cases`` order.
    queue = CaseQueue(cases, settings)
    lock = threading.Lock()
    starting = threading.BoundedSemaphore(STARTING_AT_ONCE)
    errors: list[BaseException] = []

    def worker(lane: str, name: str) -> None:
        spares: dict[str, TargetProcess] = {}
        current: str | None = None
        try:
            with factory() as server, contextlib.ExitStack() as stack:
                follow_up = _FollowUp(stack, factory)
                while (item := queue.take(lane, name, current)) is not None:
                    index, (scenario, target) = item
                    current = target
                    child = spares.pop(target, None)
                    upcoming = queue.peek(lane, name, target)
                    _drop_spares(spares, keep=None if upcoming is None else upcoming[1])
                    # Start the next case's child now, so its start-up (imports, warm-up)
                    # overlaps this case; for the same reusable target, this case's child
                    # is usually reused instead. Not on an idle lane: its cases start
                    # their children through the throttle below.
                    if lane != "idle" and _wants_spare(upcoming, target, spares):
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
            queue.stop()
            with lock:
                errors.append(exc)
        finally:
            _drop_spares(spares, keep=None)

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
    return [r for r in results if r is not None]


# --------------------------------------------------------------------------- helpers


def _drop_spares(spares: dict[str, TargetProcess], *, keep: str | None) -> None:
    """Kill the idle children a worker will not use (it moved on to another target)."""
    for name in [name for name in spares if name != keep]:
        spares.pop(name).kill()


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
        except BaseException:
            child.kill()  # interrupted: no child outlives the run
            raise
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
