"""The runner: scenario x target -> :class:`CaseResult`, one case at a time or many in parallel.

For one case the runner loads the scenario's fault script into a fault server, hands
the target child process a :class:`~harness.targets.base.Job`, and waits for its
result until the **outer ceiling** (``max(ceiling_s * time_scale, min_ceiling_s)``);
a child that has not answered by then is killed and the case is ``hung``. It then reads
the child's leaks from /proc (descriptors, threads, sockets in CLOSE-WAIT or still
ESTABLISHED after the client was closed), the server's request count and timeline, and
classifies the outcome (:func:`harness.outcome.classify`).

Accounting, per case: the server's count of LLM API requests (``requests``, judged
against the scenario's optional ``[budget] max_requests``), next to the client's own
view (``attempts``), and the requests that arrived after the call had returned
(``late_requests``); ``unaccounted_requests`` is what the client cannot account for.
With ``leaks`` (threads and ESTABLISHED / CLOSE-WAIT sockets still held after the call
returned), a client that fires requests nobody waits for, or returns while a worker still
holds a socket, shows up in every report.

A target that does not speak the scenario's API (``Target.apis``) is not run: the case is
``not_applicable``, as expected only where the scenario says so.

``min_ceiling_s`` exists because a bare SDK's own retry backoff (0.5 s, 1 s) runs in
real time whatever the time scale: below ~3 s a correct SDK retry would be called hung.

Parallelism: ``jobs`` worker threads, each with its own fault server and its own
pre-started target children (a child imports and warms up its client while the
previous case runs). A child whose case returned or raised and left no leak is reused
for the next case of its target (``reuse_children``); a hung or leaky one never is. The work happens in the child processes, so the cases spread over cores; the
threads only wait on pipes. ``shard`` picks every N-th case of a deterministic order,
so CI machines split the catalog without talking to each other.

Not here: scenario parsing (``harness.scenario``), rendering (``harness.report``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.environment import read_environment
from harness.leaks import Leaks, leaks_between, snapshot
from harness.outcome import Expected, Outcome, classify, detection_latency
from harness.scenario import Scenario
from harness.targets import allowed_targets, expectation_key, is_target, load_target
from harness.targets.base import Job
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

#: ``harness run``'s default: 1 scenario second = 50 ms. Fault timings stay well above
#: scheduler noise on a loaded 2-core machine (a 1 s pacing becomes 50 ms, not 10 ms),
#: and the catalog still finishes in well under a minute because hung cases are bounded
#: by ``DEFAULT_MIN_CEILING_S`` rather than by their scaled ceiling.
DEFAULT_TIME_SCALE = 0.05
DEFAULT_MIN_CEILING_S = 3.0
DEFAULT_TARGETS = ("reference", "openai-sdk")
#: Clean children are reused and short cases wait on paced streams, so two workers per
#: core keep the cores busy; more made 0.01-scale deadlines flaky on a loaded 2-core box.
DEFAULT_JOBS = max(1, min(2 * (os.cpu_count() or 1), 8))
#: The request paths that are LLM calls (others, e.g. GET /v1/models probes, are not counted).
LLM_APIS = ("chat", "responses", "messages")
#: Scenarios with this tag (or ``alive = true``) are slow but alive: an attempt killed and
#: retried there is a ``false_kill`` even when the retry returns the full reply.
NO_FALSE_KILL_TAG = "no-false-kill"
#: Extra workers for long cases that mostly wait (see ``run_cases``).
DEFAULT_WAIT_LANES = 2
#: A case estimated to take this long (real seconds) or more goes to the long queue.
LONG_CASE_S = 2.5
#: How long a child may take to import its client and say ready (cold disk, busy CI).
CHILD_START_S = 60.0
#: Leak re-reads after a result: a closing thread or socket may need a moment to go.
LEAK_SETTLE_READS = 10
LEAK_SETTLE_S = 0.02


@dataclass(frozen=True)
class Shard:
    """``K/N``: the K-th (1-based) of N deterministic slices of the case list."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        try:
            k, n = (int(p) for p in text.split("/"))
        except ValueError:
            raise ValueError(
                f"--shard {text!r} is not valid; allowed: K/N with 1 <= K <= N"
            ) from None
        if not 1 <= k <= n:
            raise ValueError(f"--shard {text!r} is not valid; allowed: K/N with 1 <= K <= N")
        return cls(k, n)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True, kw_only=True)
class RunSettings:
    """One run's settings. ``time_scale`` multiplies every scenario duration."""

    time_scale: float = DEFAULT_TIME_SCALE
    min_ceiling_s: float = DEFAULT_MIN_CEILING_S
    jobs: int = 1
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ), repr=False)
    keep_timeline: bool = True
    #: Before killing a hung target, collect its thread stacks (``harness explain``).
    dump_hung_stacks: bool = False
    #: Run the next case in a child whose last case left no leak (saves its start-up).
    reuse_children: bool = True
    #: Extra workers that take only long, mostly waiting cases (expected hangs, kernel).
    wait_lanes: int = DEFAULT_WAIT_LANES

    def __post_init__(self) -> None:
        if not (isinstance(self.time_scale, int | float) and 0 < self.time_scale <= 100):
            raise ValueError(
                f"time_scale: {self.time_scale!r} is not valid; allowed: a number > 0 and <= 100"
            )
        if not (isinstance(self.min_ceiling_s, int | float) and self.min_ceiling_s >= 0):
            raise ValueError(
                f"min_ceiling_s: {self.min_ceiling_s!r} is not valid; allowed: a number >= 0"
            )
        if not (isinstance(self.wait_lanes, int) and 0 <= self.wait_lanes <= 64):
            raise ValueError(
                f"wait_lanes: {self.wait_lanes!r} is not valid; allowed: a whole number 0..64"
            )
        if not (isinstance(self.jobs, int) and 1 <= self.jobs <= 64):
            raise ValueError(f"jobs: {self.jobs!r} is not valid; allowed: a whole number 1..64")

    def ceiling_for(
        self, scenario: Scenario, target: str | None = None, *, time_scale: float | None = None
    ) -> float:
        """The outer ceiling in real seconds for ``scenario`` (raised by the target's own
        ``min_ceiling_s``, e.g. a client whose retry backoff does not scale)."""
        floor = self.min_ceiling_s
        if target is not None:
            floor = max(floor, float(getattr(load_target(target), "min_ceiling_s", 0.0)))
        scale = self.time_scale if time_scale is None else time_scale
        return max(scenario.ceiling_s * scale, floor)


@dataclass(frozen=True)
class CaseResult:
    """Everything the reports need about one scenario x target case.

    ``expected`` is the expectation's text, ``""`` when the target has none for this
    scenario: then ``matched`` is True (nothing to regress against) and ``gated`` False.
    """

    scenario: str
    target: str
    expected: str
    outcome: Outcome
    matched: bool
    time_scale: float
    ceiling_s: float
    elapsed_s: float | None = None
    latency_s: float | None = None
    #: LLM API requests the server received during the case (its own count).
    requests: int | None = None
    max_requests: int | None = None
    #: What the process still held after the call returned (threads, sockets by state).
    leaks: Leaks | None = None
    #: The client's own view: how many requests it says it made (None: it does not say).
    attempts: int | None = None
    #: Requests the server received after the call had already returned or raised:
    #: a worker nobody waits for is still sending.
    late_requests: int | None = None
    finish_reason: str | None = None
    message: str = ""
    summary: str = ""
    timeline: tuple[Mapping[str, Any], ...] = ()
    client_events: tuple[tuple[float, str, str], ...] = ()
    t_started: float | None = None
    #: Extra facts the target reported (``CallResult.details``), carried as they came.
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def unaccounted_requests(self) -> int:
        """Requests the client cannot account for: the server saw more than the client
        says it made, or some arrived after the call was over (0 when unknown)."""
        beyond = 0
        if self.requests is not None and self.attempts is not None:
            beyond = max(self.requests - self.attempts, 0)
        return max(beyond, self.late_requests or 0)

    @property
    def gated(self) -> bool:
        """True when an expectation judged this case (it counts for the exit status)."""
        return bool(self.expected)

    @property
    def over_budget(self) -> bool:
        return (
            self.max_requests is not None
            and self.requests is not None
            and self.requests > self.max_requests
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "target": self.target,
            "expected": self.expected,
            "outcome": self.outcome.to_dict(),
            "actual": self.outcome.label,
            "matched": self.matched,
            "time_scale": self.time_scale,
            "ceiling_s": self.ceiling_s,
            "elapsed_s": self.elapsed_s,
            "latency_s": self.latency_s,
            "requests": self.requests,
            "max_requests": self.max_requests,
            "over_budget": self.over_budget,
            "late_requests": self.late_requests,
            "unaccounted_requests": self.unaccounted_requests,
            "leaks": None if self.leaks is None else self.leaks.to_dict(),
            "attempts": self.attempts,
            "finish_reason": self.finish_reason,
            "message": self.message,
            "summary": self.summary,
            "timeline": [dict(e) for e in self.timeline],
            "client_events": [list(e) for e in self.client_events],
            "t_started": self.t_started,
            "details": dict(self.details),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CaseResult:
        leaks = data.get("leaks")
        return cls(
            scenario=data["scenario"],
            target=data["target"],
            expected=data["expected"],
            outcome=Outcome.from_dict(data["outcome"]),
            matched=bool(data["matched"]),
            time_scale=float(data["time_scale"]),
            ceiling_s=float(data["ceiling_s"]),
            elapsed_s=data.get("elapsed_s"),
            latency_s=data.get("latency_s"),
            requests=data.get("requests"),
            max_requests=data.get("max_requests"),
            leaks=None if leaks is None else Leaks(**leaks),
            attempts=data.get("attempts"),
            late_requests=data.get("late_requests"),
            finish_reason=data.get("finish_reason"),
            message=data.get("message", ""),
            summary=data.get("summary", ""),
            timeline=tuple(data.get("timeline") or ()),
            client_events=tuple(tuple(e) for e in data.get("client_events") or ()),
            t_started=data.get("t_started"),
            details=dict(data.get("details") or {}),
        )


def plan(
    scenarios: Sequence[Scenario],
    targets: Sequence[str] = DEFAULT_TARGETS,
    *,
    shard: Shard | None = None,
) -> list[tuple[Scenario, str]]:
    """The cases to run: every scenario x every target, in a fixed order (scenario name,
    then target order), sliced by ``shard``. A case with no expectation for its target
    runs too: it is judged by the scenario's contract verdict alone."""
    unknown = [t for t in targets if not is_target(t)]
    if unknown:
        raise ValueError(f"unknown target {unknown[0]!r}; allowed: {allowed_targets()}")
    cases = [(s, t) for s in sorted(scenarios, key=lambda s: s.name) for t in targets]
    if shard is not None:
        cases = [c for i, c in enumerate(cases) if i % shard.count == shard.index - 1]
    return cases


def run_case(
    scenario: Scenario,
    target: str,
    *,
    server: Any,
    settings: RunSettings = RunSettings(),
    child: TargetProcess | None = None,
    expect_as: str | None = None,
) -> CaseResult:
    """Run one case on ``server`` (a started ``FaultServer``).

    ``child``, if given, is a pre-started target process for ``target`` (the runner's warm
    spare); it is consumed. ``expect_as`` judges the target by another target's
    expectation (a ``mutant:`` target is judged by ``reference`` by default).
    """
    result, reusable = _run_case(
        scenario, target, server=server, settings=settings, child=child, expect_as=expect_as
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
) -> tuple[CaseResult, TargetProcess | None]:
    """:func:`run_case`, also returning the child when it is clean enough to reuse."""
    expected = scenario.expected_for(expect_as or expectation_key(target))
    # Kernel timers (keepalive, RTO, TCP_USER_TIMEOUT) are real seconds, and a relay's own
    # latency does not shrink: such scenarios set (or imply) a floor for the time scale.
    scale = scenario.time_scale_for(settings.time_scale)
    ceiling = settings.ceiling_for(scenario, target, time_scale=scale)
    apis = getattr(load_target(target), "apis", None)
    if apis is not None and scenario.api not in apis:
        # Not a failure of the target and not a missing tier: the question does not apply.
        # Matched only when the scenario says so, so a target that starts to speak the API
        # (or a typo in ``api``) shows up as a mismatch instead of passing silently.
        detail = f"{target} does not speak api={scenario.api} (speaks {', '.join(apis)})"
        outcome = Outcome("not_applicable", detail=detail)
        result = CaseResult(
            scenario=scenario.name,
            target=target,
            expected=_expected_str(expected),
            outcome=outcome,
            matched=expected is None or expected.matches(outcome),
            time_scale=scale,
            ceiling_s=ceiling,
            message=detail,
            summary=scenario.summary,
        )
        return result, child
    missing = _missing_prerequisite(scenario.backend)
    if missing is not None:
        ci = read_environment(settings.environ).ci
        detail = f"CI requires this tier: {missing}" if ci else f"skipped: {missing}"
        result = CaseResult(
            scenario=scenario.name,
            target=target,
            expected=_expected_str(expected),
            outcome=Outcome("skipped", detail=detail),
            matched=not ci,
            time_scale=scale,
            ceiling_s=ceiling,
            message=detail,
            summary=scenario.summary,
        )
        return result, child
    with _network(scenario, server=server, time_scale=scale) as net:
        net.server.load(scenario.script, time_scale=scale)
        net.server.reply_source = _cassette_source(scenario, scale)
        if child is None or scenario.env or net.command_prefix:
            if child is not None:
                child.kill()
            child = TargetProcess.spawn(
                target,
                environ=settings.environ,
                extra_env=scenario.env,
                command_prefix=net.command_prefix,
            )
        job = Job(
            base_url=net.base_url,
            api=scenario.api,
            stream=scenario.stream,
            messages=tuple(scenario.request.messages()),
            model=scenario.request.model,
            max_tokens=scenario.request.max_tokens,
            calls=scenario.request.calls,
            rebuild_after=scenario.request.rebuild_after,
            pause_s=scenario.request.pause_s,
            settings=scenario.watchdog.as_settings(),
            time_scale=scale,
        )
        report: dict[str, Any] | None
        reusable: TargetProcess | None = None
        stacks = ""
        leaks: Leaks | None = None
        started_t: float | None = None
        try:
            child.wait_ready(time.monotonic() + CHILD_START_S)
            baseline = snapshot(child.pid)
            if scenario.backend == "kernel":
                net.watch(child.pid)
            net.arm(timeout=ceiling)
            child.run(job.to_dict())
            first = child.wait_started(time.monotonic() + CHILD_START_S)
            if first.get("event") == "result":
                report = first
            else:
                started_t = float(first["t"])
                report = child.wait_result(started_t + ceiling)
            if report is None:
                stacks = child.dump_stacks() if settings.dump_hung_stacks else ""
                child.kill()
            else:
                leaks = _settled_leaks(child.pid, baseline)
                if (
                    settings.reuse_children
                    and leaks is not None
                    and leaks.total == 0
                    and not scenario.env
                    and not net.command_prefix
                    and getattr(load_target(target), "reusable", False)
                ):
                    reusable = child
                else:
                    child.finish(time.monotonic() + 5.0)
        except ChildFailed as exc:
            child.kill()
            report = {
                "status": "crashed",
                "error": "TargetCrashed",
                "mro": ["TargetCrashed"],
                "message": str(exc)[-500:],
            }
        timeline = [
            e.to_dict() if hasattr(e, "to_dict") else dict(e) for e in net.server.timeline()
        ]
        timeline = sorted(timeline + list(net.events()), key=lambda e: e["t"])
        # Only LLM API calls count: a target's metadata probes (GET /v1/models ...) are not
        # requests the call made, and they carry no reply text.
        records = [r for r in net.server.requests() if getattr(r, "api", None) in LLM_APIS]
    outcome = classify(
        report,
        expected_text=_expected_text(records),
        alive=scenario.is_alive,
        find_sentinel=_find_sentinel,
    )
    outcome = _hidden_false_kill(outcome, scenario, records)
    error_t = report.get("t") if report and report.get("status") == "raised" else None
    end_t = report.get("t") if report else None
    result = CaseResult(
        scenario=scenario.name,
        target=target,
        expected=_expected_str(expected),
        outcome=outcome,
        matched=False,
        time_scale=scale,
        ceiling_s=ceiling,
        elapsed_s=None if (end_t is None or started_t is None) else float(end_t) - started_t,
        latency_s=detection_latency(timeline, error_t),
        requests=len(records),
        max_requests=scenario.budget.max_requests_of(expect_as or expectation_key(target)),
        leaks=leaks,
        attempts=_client_attempts(report, calls=scenario.request.calls),
        late_requests=_late_requests(records, end_t),
        finish_reason=(report or {}).get("finish_reason"),
        message=_message(report, outcome) + (f"\n{stacks}" if stacks else ""),
        summary=scenario.summary,
        timeline=tuple(timeline) if settings.keep_timeline else (),
        client_events=tuple(tuple(e) for e in (report or {}).get("events") or ()),
        t_started=started_t,
        details=dict((report or {}).get("details") or {}),
    )
    return _with_match(result, expected), reusable


def run_cases(
    cases: Sequence[tuple[Scenario, str]],
    *,
    settings: RunSettings = RunSettings(),
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
    # end up at the tail; results still come back in ``cases`` order. Long cases mostly
    # wait (a hung target, a kernel timer), so ``wait_lanes`` extra workers take only
    # those, without adding to the number of cases that compete for the CPU.
    ordered = sorted(enumerate(cases), key=lambda item: -_estimated_s(item[1], settings))
    long_queue = [c for c in ordered if _estimated_s(c[1], settings) >= LONG_CASE_S]
    short_queue = [c for c in ordered if _estimated_s(c[1], settings) < LONG_CASE_S]
    lock = threading.Lock()
    errors: list[BaseException] = []

    def next_case(lane: bool) -> tuple[int, tuple[Scenario, str]] | None:
        with lock:
            if errors:
                return None
            for queue in (long_queue,) if lane else (short_queue, long_queue):
                if queue:
                    return queue.pop(0)
            return None

    def peek_target(lane: bool) -> str | None:
        with lock:
            for queue in (long_queue,) if lane else (short_queue, long_queue):
                if queue:
                    return queue[0][1][1]
            return None

    def worker(lane: bool) -> None:
        spares: dict[str, TargetProcess] = {}
        try:
            with factory() as server:
                while (item := next_case(lane)) is not None:
                    index, (scenario, target) = item
                    child = spares.pop(target, None)
                    upcoming = peek_target(lane)
                    # Start the next case's child now, so its start-up overlaps this case;
                    # for the same target, this case's child is usually reused instead.
                    if upcoming is not None and upcoming != target and upcoming not in spares:
                        spares[upcoming] = TargetProcess.spawn(upcoming, environ=settings.environ)
                    result, reusable = _run_case(
                        scenario,
                        target,
                        server=server,
                        settings=settings,
                        child=child,
                        expect_as=None,
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
    lanes = min(settings.wait_lanes, len(long_queue))
    threads = [
        threading.Thread(
            target=worker, args=(i >= general,), name=f"harness-worker-{i}", daemon=True
        )
        for i in range(general + lanes)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return [r for r in results if r is not None]


# --------------------------------------------------------------------------- helpers


def _estimated_s(case: tuple[Scenario, str], settings: RunSettings) -> float:
    """A rough cost for scheduling: the whole ceiling for an expected hang or a kernel
    scenario, a quarter of it behind a relay or proxy, a tenth otherwise."""
    scenario, target = case
    if scenario.api not in getattr(load_target(target), "apis", (scenario.api,)):
        return 0.0  # not_applicable: never run
    ceiling = settings.ceiling_for(
        scenario, time_scale=scenario.time_scale_for(settings.time_scale)
    )
    expected = scenario.expected_for(expectation_key(target))
    if scenario.backend == "kernel" or (expected is not None and expected.kind == "hung"):
        return ceiling
    if scenario.backend != "server":
        return ceiling / 4
    return ceiling / 10


def _expected_str(expected: Expected | None) -> str:
    return "" if expected is None else str(expected)


def _with_match(result: CaseResult, expected: Expected | None) -> CaseResult:
    if expected is None:  # nothing to regress against: the verdict alone judges it
        return dataclasses.replace(result, matched=True)
    matched = expected.matches(result.outcome) and not result.over_budget
    return dataclasses.replace(result, matched=matched)


class _DirectNetwork:
    """The default path: the target talks to the fault server itself (no netem import)."""

    command_prefix: tuple[str, ...] = ()

    def __init__(self, server: Any) -> None:
        self.server = server
        self.base_url = server.base_url

    def watch(self, pid: int) -> None:
        """Nothing to watch: no kernel backend."""

    def arm(self, *, timeout: float) -> None:
        """Nothing deferred: every fault is in the server's script."""

    def events(self) -> list[dict[str, Any]]:
        return []


@contextlib.contextmanager
def _network(scenario: Scenario, *, server: Any, time_scale: float) -> Iterator[Any]:
    """The path between target and server for one case (``harness.netem.backends``)."""
    if scenario.network is None or scenario.backend == "server":
        yield _DirectNetwork(server)
        return
    from harness.netem.backends import network_backend
    from harness.server import FaultServer

    with network_backend(
        scenario.network,
        server=server,
        time_scale=time_scale,
        server_factory=lambda host: FaultServer(host=host, allow_remote=True),
    ) as net:
        yield net


_PREREQ_LOCK = threading.Lock()


def _missing_prerequisite(backend: str) -> str | None:
    """Why ``backend`` cannot run on this machine (None when it can).

    Serialised: the kernel probe makes a namespace with a per-process name, so two
    workers probing at once would trip over each other (the result is cached)."""
    with _PREREQ_LOCK:
        return _missing_unlocked(backend)


def _missing_unlocked(backend: str) -> str | None:
    if backend == "toxiproxy":
        from harness.netem.prereq import toxiproxy_missing

        return toxiproxy_missing()
    if backend == "kernel":
        from harness.netem.prereq import netns_missing

        return netns_missing()
    return None


def _settled_leaks(pid: int, baseline: Any) -> Leaks | None:
    """Leaks after the call; re-read a few times (bounded) so a thread or socket that is
    already on its way out is not counted. A real leak survives every read."""
    leaks = leaks_between(baseline, snapshot(pid))
    for _ in range(LEAK_SETTLE_READS):
        if leaks is None or leaks.total == 0:
            break
        time.sleep(LEAK_SETTLE_S)  # a measurement grace, not synchronisation
        leaks = leaks_between(baseline, snapshot(pid))
    return leaks


def _hidden_false_kill(outcome: Outcome, scenario: Scenario, records: Sequence[Any]) -> Outcome:
    """An ``ok`` on a slow-but-alive scenario (``alive = true``, or tagged
    ``no-false-kill``) that took more requests than calls: some attempt was killed (and
    retried) although the stream was alive -- a false kill the final reply would
    otherwise hide. Not applied to scenarios that are merely fault-free: there a retry
    is judged by the request budget."""
    calls = scenario.request.calls
    slow_but_alive = scenario.is_alive and (
        scenario.alive is True or NO_FALSE_KILL_TAG in scenario.tags
    )
    # Only where the script is the whole story: a relay / proxy / kernel fault is not in
    # the script, so such a scenario's "alive" cannot rule out a legitimate retry.
    if outcome.kind != "ok" or not slow_but_alive or scenario.backend != "server":
        return outcome
    if len(records) <= calls:
        return outcome
    return Outcome(
        "false_kill",
        detail=f"the full reply came back, but only after {len(records)} requests for {calls} "
        "call(s): an attempt on a live stream was killed and retried",
    )


def _client_attempts(report: Mapping[str, Any] | None, *, calls: int) -> int | None:
    """How many requests the client says it made: a returned result's ``attempts`` (for
    several calls, the sum the target reports), a raised one's list of attempt errors
    (``RetriesExhausted``) or the attempt number of the error. None when it does not say,
    or when a raised call was not the first of several (the earlier calls are unknown)."""
    if not report:
        return None
    attempts = report.get("attempts")
    if report.get("status") == "returned":
        return attempts if isinstance(attempts, int) and not isinstance(attempts, bool) else None
    if report.get("status") != "raised" or calls > 1:
        return None
    errors = report.get("attempt_errors")
    if isinstance(errors, list) and errors:
        return len(errors)
    attempt = report.get("attempt")
    return attempt if isinstance(attempt, int) and not isinstance(attempt, bool) else None


def _late_requests(records: Sequence[Any], end_t: Any) -> int | None:
    """Requests that started after the call returned or raised at ``end_t`` (None: the
    call never ended, e.g. hung)."""
    if not isinstance(end_t, int | float):
        return None
    return sum(1 for r in records if float(getattr(r, "t_start", 0.0)) > float(end_t))


def _cassette_source(scenario: Scenario, scale: float) -> Any:
    """A scenario's cassette as the server's reply source (None: synthetic replies)."""
    if scenario.cassette is None:
        return None
    from harness.record.replay import load_replay_source

    return load_replay_source([scenario.cassette], time_scale=scale)


def _expected_text(records: Iterable[Any]) -> str | None:
    """The reply a healthy request got: the last request without a fault, else the last."""
    records = list(records)
    if not records:
        return None
    healthy = [r for r in records if getattr(r, "fault", None) is None]
    chosen = (healthy or records)[-1]
    return getattr(chosen, "expected_text", None)


def _find_sentinel(text: str) -> str | None:
    from harness.live.sentinels import find_sentinels

    findings = find_sentinels(text, where="reply")
    return findings[0].describe() if findings else None


def _message(report: Mapping[str, Any] | None, outcome: Outcome) -> str:
    if report is None:
        return outcome.detail
    if report.get("status") in ("raised", "crashed"):
        causes = report.get("causes") or []
        cause = f" (from {causes[0]})" if causes else ""
        return f"{report.get('error')}: {report.get('message', '')}{cause}"[:600]
    return outcome.detail


def _default_server() -> Any:
    from harness.server import FaultServer

    return FaultServer()
