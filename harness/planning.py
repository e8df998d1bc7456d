"""Planning a run: its settings, the cases (scenario x target), shards, and cost estimates.

``plan`` is every scenario x every target in a fixed order (scenario name, then target
order): a case with no expectation for its target runs too and is judged by the
scenario's contract verdict alone. ``Shard`` picks every N-th case of that order, so CI
machines split the catalog without talking to each other. ``estimated_s`` is the rough
cost the scheduler (``harness.runner.run_cases``) sorts by.

Not here: running a case (``harness.lifecycle``) or judging it (``harness.judge``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from harness.environment import check_time_scale
from harness.scenario import Scenario
from harness.targets import allowed_targets, expectation_key, is_target, load_target

__all__ = [
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

    def __post_init__(self) -> None:
        # normalised to a float: the one validator also takes the text of an option
        object.__setattr__(
            self, "time_scale", check_time_scale(self.time_scale, what="time_scale:")
        )
        if not (isinstance(self.min_ceiling_s, int | float) and self.min_ceiling_s >= 0):
            raise ValueError(
                f"min_ceiling_s: {self.min_ceiling_s!r} is not valid; allowed: a number >= 0"
            )
        for name in ("wait_lanes", "idle_lanes"):
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
        if target is not None:
            floor = max(floor, float(getattr(load_target(target), "min_ceiling_s", 0.0)))
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


def case_time_scale(scenario: Scenario, target: str, run_scale: float) -> float:
    """The time scale ``scenario`` runs at against ``target`` in a run at ``run_scale``:
    the scenario's (its own floor, kernel timers in real time), raised to the target's
    floor (``Target.min_time_scale``, e.g. a client that polls its deadlines)."""
    scale = scenario.time_scale_for(run_scale)
    if scenario.backend == "kernel":
        return scale
    return max(scale, float(getattr(load_target(target), "min_time_scale", 0.0) or 0.0))


def estimated_s(case: tuple[Scenario, str], settings: RunSettings) -> float:
    """A rough cost for scheduling: the whole ceiling for an expected hang or a kernel
    scenario, a quarter of it behind a relay or proxy, a tenth otherwise. The ceiling is
    the target's (raised by its ``min_ceiling_s``). A target that raises it because its
    own retry backoff runs in real time spends about half of that on a call expected to
    fail (hermes: 7-31 s, against 0.1-9 s for most that succeed), so those go first; and
    a raw ``Retry-After`` in seconds is real time a client that honours it waits."""
    scenario, target = case
    cls = load_target(target)
    if scenario.api not in getattr(cls, "apis", (scenario.api,)):
        return 0.0  # not_applicable: never run
    ceiling = settings.ceiling_for(
        scenario, target, time_scale=case_time_scale(scenario, target, settings.time_scale)
    )
    expected = scenario.expected_for(expectation_key(target))
    if scenario.backend == "kernel" or (expected is not None and expected.kind == "hung"):
        return ceiling
    if scenario.backend != "server":
        return ceiling / 4
    estimate = max(ceiling / 10, min(_raw_retry_after_s(scenario), ceiling))
    backoff_s = float(getattr(cls, "min_ceiling_s", 0.0) or 0.0)
    if backoff_s and expected is not None and expected.kind != "ok" and not expected.alternatives:
        return max(estimate, backoff_s / 2)
    return estimate


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
    """Whether ``case`` is expected to hang: its child sits idle on a socket until the
    outer ceiling, costing wall time but no CPU, so such cases can wait side by side
    (``RunSettings.idle_lanes``). Any backend: a held relay, a Toxiproxy ``timeout`` or
    a dead kernel peer idle the same way (each case has its own path)."""
    scenario, target = case
    if scenario.api not in getattr(load_target(target), "apis", (scenario.api,)):
        return False
    expected = scenario.expected_for(expectation_key(target))
    return expected is not None and expected.kind == "hung"
