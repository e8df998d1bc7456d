"""Planning a run: its settings, the cases (scenario x target), shards, and cost estimates.

``plan`` is every scenario x every target in a fixed order (scenario name, then target
order): a case with no expectation for its target runs too and is judged by the
scenario's contract verdict alone. ``Shard`` picks every N-th case of that order, so CI
machines split the catalog without talking to each other. :func:`plan_case` decides a
case's facts once (:class:`CasePlan`: does it apply, its time scale and ceiling, its
follow-up, its child); the scheduler, the child owner, the lifecycle and the judge step
read them from there. ``estimated_s`` is the rough cost the scheduler sorts by.

Not here: running a case (``harness.lifecycle``) or judging it (``harness.judge``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from harness.environment import check_time_scale
from harness.lateness import DEFAULT_VOID_RETRIES
from harness.outcome import Expected
from harness.scenario import Scenario
from harness.targets import Target, allowed_targets, expectation_key, is_target, load_target

__all__ = [
    "CHILD_START_S",
    "CasePlan",
    "DEFAULT_JOBS",
    "DEFAULT_MIN_CEILING_S",
    "DEFAULT_TARGETS",
    "DEFAULT_TIME_SCALE",
    "DEFAULT_IDLE_LANES",
    "DEFAULT_WAIT_LANES",
    "LONG_CASE_S",
    "RunSettings",
    "Shard",
    "case_time_scale",
    "estimated_s",
    "only_waits",
    "plan",
    "plan_case",
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
#: Extra workers for long cases that mostly wait (see ``harness.scheduling``): relays,
#: proxies, kernel timers and streams paced at their own time-scale floor. Four, not
#: two: with the paced streams among them (a mutants run's ~420 of ~570 case-seconds)
#: two lanes were its critical path; they cost little CPU (a few child start-ups).
DEFAULT_WAIT_LANES = 4
#: Extra workers for expected hangs: a hung child idles on a
#: socket until the outer ceiling (no CPU), so many wait side by side (hermes's 45 s
#: floor made 14 of them a queue of 45 s waits on two lanes).
DEFAULT_IDLE_LANES = 16
#: A case estimated to take this long (real seconds) or more goes to the long queue.
LONG_CASE_S = 2.5
#: How long a child may take to import its client and say ready (cold disk, busy CI);
#: a target that needs longer says so (``Target.start_s``).
CHILD_START_S = 60.0


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
    #: Extra workers that take only expected hangs (``only_waits``).
    idle_lanes: int = DEFAULT_IDLE_LANES
    #: Times a void case (the harness broke a timing promise: ``harness.lateness``) is
    #: run again before it is reported void.
    void_retries: int = DEFAULT_VOID_RETRIES
    #: Raise each case's outer ceiling to its target's ``min_ceiling_s`` (False: the
    #: scenario's ceiling as is, for ``harness posture``, whose silent call is held for
    #: a measurement, not judged against the target's own backoff).
    target_floor: bool = True

    def __post_init__(self) -> None:
        # normalised to a float: the one validator also takes the text of an option
        object.__setattr__(
            self, "time_scale", check_time_scale(self.time_scale, what="time_scale:")
        )
        if not (isinstance(self.min_ceiling_s, int | float) and self.min_ceiling_s >= 0):
            raise ValueError(
                f"min_ceiling_s: {self.min_ceiling_s!r} is not valid; allowed: a number >= 0"
            )
        for name in ("wait_lanes", "idle_lanes", "void_retries"):
            value = getattr(self, name)
            if not (isinstance(value, int) and 0 <= value <= 64):
                raise ValueError(f"{name}: {value!r} is not valid; allowed: a whole number 0..64")
        if not (isinstance(self.jobs, int) and 1 <= self.jobs <= 64):
            raise ValueError(f"jobs: {self.jobs!r} is not valid; allowed: a whole number 1..64")

    def ceiling_for(
        self, scenario: Scenario, target: str | None = None, *, time_scale: float | None = None
    ) -> float:
        """The outer ceiling in real seconds for ``scenario`` (raised by the target's own
        ``min_ceiling_s``, e.g. a client whose retry backoff does not scale)."""
        floor = self.min_ceiling_s
        if target is not None and self.target_floor:
            floor = max(floor, float(load_target(target).min_ceiling_s))
        scale = self.time_scale if time_scale is None else time_scale
        return max(scenario.ceiling_s * scale, floor)


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


@dataclass(frozen=True, kw_only=True)
class CasePlan:
    """One case's facts, decided once before it runs (:func:`plan_case`) and read by
    everything after it: the scheduler, the child owner, the lifecycle, the judge step."""

    scenario: Scenario
    target: str
    target_cls: type[Target]
    #: Why the case does not apply (the target does not speak its API); None: it runs.
    not_applicable: str | None
    time_scale: float
    #: The outer ceiling (real seconds), counted from the child's ``started``.
    ceiling_s: float
    #: The target makes the contract's follow-up call here (never from a kernel
    #: namespace, whose child cannot reach the follow-up server).
    follows_up: bool
    #: The case needs a child of its own: its ``env``, or a kernel namespace (the child
    #: runs through the namespace's command prefix). No spare serves it.
    own_child: bool
    #: A child this case leaves clean may take the target's next case.
    reuse_child: bool
    #: How long the child may take to say ``ready`` (real seconds).
    start_s: float
    #: How long after ``started`` its first request may come (``Target.start_allowance_s``).
    start_allowance_s: float
    #: The target whose expectation judges the case (``reference`` for a mutant).
    expect_as: str
    expected: Expected | None
    max_requests: int | None

    @property
    def applies(self) -> bool:
        return self.not_applicable is None

    @property
    def case(self) -> tuple[Scenario, str]:
        return self.scenario, self.target

    @property
    def only_waits(self) -> bool:
        """Expected to hang: the child idles on a socket until the outer ceiling, costing
        wall time but no CPU, so such cases can wait side by side (``idle_lanes``). Any
        backend: a held relay, a Toxiproxy ``timeout`` or a dead kernel peer idle alike."""
        return self.applies and self.expected is not None and self.expected.kind == "hung"

    @property
    def estimate_s(self) -> float:
        """A rough cost for scheduling: the whole ceiling for an expected hang or a
        kernel scenario, a quarter of it behind a relay or proxy, a tenth otherwise. A
        target that raises the ceiling because its own retry backoff runs in real time
        spends about half of that on a call expected to fail (hermes: 7-31 s, against
        0.1-9 s for most that succeed), so those go first; and a raw ``Retry-After`` in
        seconds is real time a client that honours it waits."""
        if not self.applies:
            return 0.0  # not_applicable: never run
        ceiling, expected, backend = self.ceiling_s, self.expected, self.scenario.backend
        if backend == "kernel" or (expected is not None and expected.kind == "hung"):
            return ceiling
        if backend != "server":
            return ceiling / 4
        estimate = max(ceiling / 10, min(_raw_retry_after_s(self.scenario), ceiling))
        backoff_s = float(self.target_cls.min_ceiling_s)
        if (
            backoff_s
            and expected is not None
            and expected.kind != "ok"
            and not expected.alternatives
        ):
            return max(estimate, backoff_s / 2)
        return estimate


def plan_case(
    scenario: Scenario, target: str, settings: RunSettings, *, expect_as: str | None = None
) -> CasePlan:
    """Decide one case (see :class:`CasePlan`); ``expect_as`` judges ``target`` by
    another target's expectation (default: its own, ``reference`` for a mutant)."""
    cls = load_target(target)
    key = expect_as or expectation_key(target)
    speaks = scenario.api in cls.apis
    if cls.answer_tool is not None and scenario.script.answer_tool is None:
        script = replace(scenario.script, answer_tool=cls.answer_tool)
        scenario = scenario.model_copy(update={"script": script})
    # Kernel timers (keepalive, RTO, TCP_USER_TIMEOUT) are real seconds, and a relay's own
    # latency does not shrink: such scenarios set (or imply) a floor for the time scale;
    # so does a target whose own deadlines are only as fine as its poll (hermes).
    scale = case_time_scale(scenario, target, settings.time_scale)
    own_child = bool(scenario.env) or scenario.backend == "kernel"
    return CasePlan(
        scenario=scenario,
        target=target,
        target_cls=cls,
        # Not a failure of the target and not a missing tier: the question does not apply.
        # Matched only when the scenario says so, so a target that starts to speak the API
        # (or a typo in ``api``) shows up as a mismatch instead of passing silently.
        not_applicable=(
            f"{target} does not speak api={scenario.api} (speaks {', '.join(cls.apis)})"
            if not speaks
            else _cannot_provide(scenario, target, cls)
        ),
        time_scale=scale,
        ceiling_s=settings.ceiling_for(scenario, target, time_scale=scale),
        follows_up=cls.follows_up and scenario.backend != "kernel",
        own_child=own_child,
        reuse_child=settings.reuse_children and bool(cls.reusable) and not own_child,
        start_s=max(CHILD_START_S, float(cls.start_s)),
        start_allowance_s=float(cls.start_allowance_s),
        expect_as=key,
        expected=scenario.expected_for(key),
        max_requests=_request_budget(scenario, key, cls),
    )


def _cannot_provide(scenario: Scenario, target: str, cls: type[Target]) -> str | None:
    """What the scenario needs that the target, by its kind, cannot give (None: nothing
    known before the run): a pooled connection from a target that opens a new process
    per call (``Target.pools_connections``)."""
    if cls.pools_connections or scenario.request.calls < 2:
        return None
    for rule in scenario.script.rules:
        reuse = rule.match.request_on_connection
        if rule.fault.phase.kind == "idle" or (reuse is not None and min(reuse) > 1):
            return (
                f"{target} makes every call from a new process: nothing is pooled, and "
                "the scenario's fault is on a pooled connection"
            )
    return None


def _request_budget(scenario: Scenario, key: str, cls: type[Target]) -> int | None:
    """The case's request budget: the one written for ``key``, else the scenario's times
    the requests a gateway in the target may make of each (``Target.requests_per_request``)."""
    budget = scenario.budget
    if key in budget.max_requests_for or budget.max_requests is None:
        return budget.max_requests_of(key)
    return budget.max_requests * max(1, int(cls.requests_per_request))


def case_time_scale(scenario: Scenario, target: str, run_scale: float) -> float:
    """The time scale ``scenario`` runs at against ``target`` in a run at ``run_scale``:
    the scenario's (its own floor, kernel timers in real time), raised to the target's
    floor (``Target.min_time_scale``, e.g. a client that polls its deadlines)."""
    scale = scenario.time_scale_for(run_scale)
    if scenario.backend == "kernel":
        return scale
    return max(scale, float(load_target(target).min_time_scale))


def estimated_s(case: tuple[Scenario, str], settings: RunSettings) -> float:
    """``CasePlan.estimate_s`` of ``case`` in a run with ``settings``."""
    return plan_case(*case, settings).estimate_s


def _raw_retry_after_s(scenario: Scenario) -> float:
    """The longest verbatim ``Retry-After`` of the script's rules in seconds (0: none;
    an HTTP date is not counted). Verbatim values do not scale: real seconds."""
    longest = 0.0
    for rule in scenario.script.rules:
        value = getattr(rule.fault.action, "retry_after", None)
        if isinstance(value, str) and value.strip().isdigit():
            longest = max(longest, float(value))
    return longest


def only_waits(case: tuple[Scenario, str]) -> bool:
    """``CasePlan.only_waits`` of ``case``: whether it is expected to hang."""
    return plan_case(*case, _ANY_SETTINGS).only_waits


#: only_waits does not depend on the run's settings.
_ANY_SETTINGS = RunSettings(environ={})
