"""The search: drawn scenarios run as real cases, a failure shrunk, confirmed, handed on.

The property is "the contract verdict is not ``fail``". Each example is a scenario dict
from :func:`harness.fuzz.strategies.scenario_data`, validated by the scenario loader and
run as one case through the runner's public :func:`harness.runner.run_cases` (the target's
child process, the same judge, contract, lineage and fault-reached rules as ``harness run``).

One *round* is one Hypothesis run (reuse the example database, generate, shrink). The
first failure of a group not yet found (:func:`harness.fuzz.findings.group_key`: the
failed checks, and the outcome kind where it decides one, so one bug is one finding) is
claimed by the round and shrunk by Hypothesis; any other
failure in that round, or a failure of a group already found, passes, so the search
goes on to new groups in the next round. Results are cached by scenario content:
Hypothesis replays an example several times while it shrinks, and the cache keeps the
replay that reports the minimal example consistent. Confirmation is not cached: the
shrunk scenario is run :attr:`FuzzSettings.confirm` more times and is ``confirmed`` only
if it fails in its group every time, else ``timing_sensitive`` with its rate. A shrink
stops at ``shrink_cases`` runs or ``shrink_s`` seconds; a shrunk form that fails on no
replay gives way to the unshrunk script when that one fails on every replay.

A failing example counts only when the reference target meets the contract on it (it is
run there too, once, cached): a script whose contract even the reference fails (a
stream alive but slower than the ceiling, a dropped text delta no client can notice)
says something about the contract, not the target. Those are kept apart, one per group
(:attr:`SearchReport.unsatisfiable`), and never claim a group.

With :attr:`FuzzSettings.same_as` the property is also "the outcome kind equals that
target's": every example runs there too (cached), and a passing case whose kind differs
(``ok`` where the other raised, ``error`` where it recovered) fails in a group of its own
(``differs:ok/error``; :func:`harness.fuzz.findings.differs_key`), shrunk and confirmed
the same way; the other side is not rerun on replays.

Stopping (``--examples`` used up, ``--minutes`` over, Ctrl-C): generation ends at once
(:class:`Stop`, which Hypothesis lets through as it does KeyboardInterrupt). A shrink
under way when time is over or Ctrl-C came answers examples it has not run as passing,
so it ends within a few cached replays and its finding is still written, unconfirmed;
a spent example budget lets it (and its confirmation) finish.

Workers (``-j``): each runs its own rounds (seed + worker) with the one shared budget,
cache, database and set of groups.

Not here: the settings and the report (``harness.fuzz.settings``), the budget and its
clock (``harness.fuzz.budget``), the strategies
(``harness.fuzz.strategies``), writing findings (``harness.fuzz.findings``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis.database import DirectoryBasedExampleDatabase

from harness.fuzz.budget import Budget, Stop
from harness.fuzz.findings import (
    Finding,
    GroupKey,
    differs_key,
    group_key,
    is_difference,
)
from harness.fuzz.settings import FuzzSettings, SearchReport
from harness.fuzz.strategies import scenario_data
from harness.runner import CaseResult, RunSettings, run_cases
from harness.scenario import scenario_from_dict

__all__ = ["Search", "Stop", "run_search"]


class _Found(AssertionError):
    """A claimed group failed on this example (raised into Hypothesis)."""

    def __init__(self, key: GroupKey, data: dict[str, Any], result: CaseResult) -> None:
        super().__init__(f"{key}: {data['summary']}")
        self.key, self.data, self.result = key, data, result


@dataclass
class _Round:
    worker: int
    key: GroupKey | None = None
    shrink_runs: int = 0
    first_seen_s: float | None = None
    first: dict[str, Any] | None = None


class Search:
    """Run the search; ``on_finding`` is called (under a lock) as each finding is made,
    ``on_case`` after every case run."""

    def __init__(
        self,
        config: FuzzSettings,
        *,
        on_finding: Callable[[Finding], None] | None = None,
        on_case: Callable[[CaseResult], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self._on_finding = on_finding
        self._on_case = on_case
        self._lock = threading.Lock()
        self._cache: dict[str, CaseResult] = {}
        self._claims: dict[GroupKey, int] = {}
        self.report = SearchReport()
        self._run_settings = RunSettings(time_scale=config.time_scale, jobs=1, keep_timeline=False)
        self._budget = Budget(
            examples=config.examples, minutes=config.minutes, shrink_s=config.shrink_s, clock=clock
        )

    # ------------------------------------------------------------------ public

    def run(self) -> SearchReport:
        """Search until the budget is spent; Ctrl-C stops it with the findings so far."""
        self._budget.start()
        errors: list[BaseException] = []
        threads = [
            threading.Thread(target=self._worker, args=(i, errors), daemon=True)
            for i in range(max(1, self.config.jobs))
        ]
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(timeout=0.2)
        except KeyboardInterrupt:
            self.stop("interrupted")
            for t in threads:
                t.join()
        self.report.elapsed_s = self._budget.elapsed()
        self.report.stopped_by = self._budget.stopped_by or "examples"
        if errors:
            raise errors[0]
        return self.report

    def stop(self, why: str) -> None:
        self._budget.stop(why)

    # ------------------------------------------------------------------ rounds

    def _worker(self, worker: int, errors: list[BaseException]) -> None:
        try:
            for round_no in range(1 << 30):  # ends when the budget is spent
                if self._budget.stopped or not self._round(worker, round_no):
                    return
        except Stop:
            return
        except BaseException as exc:  # reported by run() after the other workers stop
            errors.append(exc)
            self.stop("error")

    def _round(self, worker: int, round_no: int) -> bool:
        """One Hypothesis run; True when another round should follow (it made a finding,
        or it ended with budget left and drew something new)."""
        state = _Round(worker)
        remaining = self._budget.remaining()
        if remaining == 0:
            self.stop("examples")
            return False

        def prop(data: dict[str, Any]) -> None:
            result = self._example(data, state)
            if result is None:
                return
            key = self._failure(data, result, state)
            if key is None:
                return
            if not self._replay_agrees(data, key, result, state):
                return  # failed once, passed when replayed: timing, not worth a shrink
            with self._lock:
                # after a stop (Ctrl-C reaches the children too) nothing new is claimed
                if state.key is None and key not in self._claims and not self._budget.stopped:
                    self._claims[key] = worker
                    state.key = key
                    state.first = data
                    state.first_seen_s = self._budget.elapsed()
            if key == state.key:
                raise _Found(key, data, result)

        test = settings(
            database=None
            if self.config.database is None
            else DirectoryBasedExampleDatabase(str(self.config.database)),
            max_examples=remaining if remaining is not None else 1_000_000,
            phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
            deadline=None,
            derandomize=False,
            report_multiple_bugs=False,
            suppress_health_check=list(HealthCheck),
            print_blob=False,
        )(
            given(
                scenario_data(
                    self.config.apis,
                    self.config.actions,
                    self.config.backends,
                    self.config.durations,
                )
            )(prop)
        )
        test = seed(self.config.seed * 1_000_003 + worker * 7919 + round_no)(test)
        # One database entry per target: a rerun replays this target's past findings first.
        test._hypothesis_internal_database_key = f"harness.fuzz:{self.config.target}".encode()
        before = self._budget.spent
        try:
            test()
        except _Found as found:
            self._finish(found, state)
            return True
        # Hypothesis counts the replays the cache answered: go on while the budget lasts
        # and the round still drew something new
        return self._budget.spent > before and self._budget.remaining() != 0

    def _example(self, data: dict[str, Any], state: _Round) -> CaseResult | None:
        """The example's result: cached, run, or None (not run: the shrink is over)."""
        name = data["name"]
        with self._lock:
            cached = self._cache.get(name)
        if cached is not None:
            return cached
        if state.key is None:
            self._budget.check()
        elif (
            self._budget.shrink_over(state.first_seen_s)
            or state.shrink_runs >= self.config.shrink_cases
        ):
            return None
        else:
            state.shrink_runs += 1
        result = self._run(data)
        with self._lock:
            self._cache[name] = result
            if state.key is None:
                self._budget.spend_example()
                self.report.examples = self._budget.spent
        return result

    def _failure(self, data: dict[str, Any], result: CaseResult, state: _Round) -> GroupKey | None:
        """The group this example fails in, or None: a failed verdict whose contract the
        reference meets, or (``same_as``) an outcome kind the other target did not have."""
        if result.verdict == "fail":
            key = group_key(result)
            # a contract nobody meets is not the target's bug
            return key if self._met_by_reference(data, key, result, state) else None
        if self.config.same_as is not None:
            self._other(data, self.config.same_as, state)  # run it once, then read below
        return self._key_again(data, result)

    def _key_again(self, data: dict[str, Any], again: CaseResult) -> GroupKey | None:
        """A run's group: its failed verdict's, or its difference from ``same_as``'s
        cached result (never rerun for a replay)."""
        if again.verdict == "fail":
            return group_key(again)
        if self.config.same_as is None:
            return None
        other = self._cached(data, self.config.same_as)
        return None if other is None else differs_key(again, other)

    def _cached(self, data: dict[str, Any], target: str) -> CaseResult | None:
        with self._lock:
            return self._cache.get(f"{data['name']}@{target}")

    def _other(self, data: dict[str, Any], target: str, state: _Round) -> CaseResult | None:
        """``target``'s result on this example: cached, run, or None (the shrink is over)."""
        other = self._cached(data, target)
        if other is None:
            if state.key is not None and self._budget.shrink_over(state.first_seen_s):
                return None  # the shrink is over: not run, not a failure
            other = self._run(data, target)
            with self._lock:
                self._cache[f"{data['name']}@{target}"] = other
        return other

    def _met_by_reference(
        self, data: dict[str, Any], key: GroupKey, result: CaseResult, state: _Round
    ) -> bool:
        """Does the reference target meet the contract this example failed (True when
        there is no reference to ask)? Asked only of failing examples; cached; one that
        the reference fails too is kept apart (``SearchReport.unsatisfiable``)."""
        reference = self.config.reference
        if reference is None or reference == self.config.target:
            return True
        ref = self._other(data, reference, state)
        if ref is None:
            return False
        if ref.verdict != "fail":
            return True
        with self._lock:
            self.report.unsatisfiable.setdefault(key, (data, result, ref))
        return False

    def _replay_agrees(
        self, data: dict[str, Any], key: GroupKey, result: CaseResult, state: _Round
    ) -> bool:
        """Does a new group's failure happen again? Replayed once before the group is
        claimed: a failure that does not repeat (a loaded machine's late wake-up) would
        spend a whole shrink and then fail its confirmation. Not during a shrink, nor
        for a claimed group, nor with ``confirm = 0``."""
        if self.config.confirm == 0 or state.key is not None:
            return True
        with self._lock:
            if key in self._claims:
                return True
        if self._budget.cut_short():
            return False
        if self._key_again(data, self._run(data)) == key:
            return True
        with self._lock:
            self.report.timing_sensitive.setdefault(key, (data, result))
        return False

    def _run(self, data: dict[str, Any], target: str | None = None) -> CaseResult:
        scenario = scenario_from_dict(data, file=f"<fuzz {data['name']}>")
        case = (scenario, target or self.config.target)
        result = run_cases([case], settings=self._run_settings)[0]
        with self._lock:
            self.report.cases += 1
            if self._on_case is not None:
                self._on_case(result)
        return result

    # ------------------------------------------------------------------ findings

    def _finish(self, found: _Found, state: _Round) -> None:
        data, result = found.data, found.result
        confirmed = self._confirm(data, found.key)
        first = state.first
        unshrunk = False
        if confirmed and not any(confirmed) and first is not None and first["name"] != data["name"]:
            # the shrunk script never failed again (a smaller form that failed once, on
            # timing): the unshrunk one, replayed before it was claimed, is handed over
            again = self._confirm(first, found.key)
            if again and all(again):
                with self._lock:
                    cached = self._cache.get(first["name"])
                if cached is not None:
                    data, result, confirmed, unshrunk = first, cached, again, True
        # the target the finding is told against: the one it differs from, else the
        # reference that met the contract
        other = self.config.same_as if is_difference(found.key) else self.config.reference
        reference = None
        if other and other != self.config.target:
            reference = self._cached(data, other)
        finding = Finding(
            key=found.key,
            data=data,
            result=result,
            target=self.config.target,
            first=first or data,
            confirm_runs=tuple(confirmed),
            unshrunk=unshrunk,
            reference=reference,
            first_seen_s=state.first_seen_s or 0.0,
            found_s=self._budget.elapsed(),
            shrink_runs=state.shrink_runs,
        )
        with self._lock:
            self.report.findings.append(finding)
            if self._on_finding is not None:
                self._on_finding(finding)

    def _confirm(self, data: dict[str, Any], key: GroupKey) -> list[bool]:
        """``confirm`` replays of ``data``: did each fail in ``key``? (none when cut short)"""
        if self._budget.cut_short():
            return []
        return [self._key_again(data, self._run(data)) == key for _ in range(self.config.confirm)]


def run_search(config: FuzzSettings, **kwargs: Any) -> SearchReport:
    """:class:`Search` ``(config, **kwargs).run()``."""
    return Search(config, **kwargs).run()
