"""``harness bench fuzz``: how many cases a minute ``harness fuzz`` runs, next to the
catalog's own rate, for the reference stack and the bare SDK.

For each target, interleaved (fuzz, catalog, fuzz, catalog ...) so a noisy machine
moves both columns together:

- **fuzz**: a seeded search on the chosen API (:class:`harness.fuzz.search.Search`,
  ``-j`` workers, no example database, no reference cross-check, no confirmation
  replays: the search's own case rate), for ``--seconds``;
- **catalog**: the catalog's scenarios of that API that the fault server plays alone (no
  network backend), run once each through :func:`harness.runner.run_cases` with the
  same ``-j``, as ``harness run`` does.

Both count cases the runner ran (a case voided for lateness and rerun counts once), per
minute of wall time; the ratio is fuzz over catalog. A fuzz case is one drawn script run
once (a hang costs the runner's outer ceiling, as a catalog hang does).

Not here: the search itself (``harness.fuzz``), the runner (``harness.runner``).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from harness.bench.common import finish, whole_numbers

__all__ = ["FuzzBench", "Rate", "main", "measure", "render"]

DEFAULT_TARGETS = ("reference", "openai-sdk")
DEFAULT_SECONDS = 20
DEFAULT_JOBS = 2
DEFAULT_API = "chat"


@dataclass(frozen=True)
class Rate:
    """One measurement: cases run in a wall-clock span."""

    cases: int
    seconds: float

    @property
    def per_minute(self) -> float:
        return 60.0 * self.cases / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class FuzzBench:
    api: str
    jobs: int
    seconds: int
    loadavg_before: tuple[float, float, float]
    #: target -> {"fuzz": Rate, "catalog": Rate}
    rates: dict[str, dict[str, Rate]]

    def ratio(self, target: str) -> float:
        catalog = self.rates[target]["catalog"].per_minute
        return self.rates[target]["fuzz"].per_minute / catalog if catalog else float("nan")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["per_minute"] = {
            t: {k: round(r.per_minute, 1) for k, r in rates.items()}
            for t, rates in self.rates.items()
        }
        data["ratio"] = {t: round(self.ratio(t), 2) for t in self.rates}
        return data


def catalog_cases(api: str) -> list[Any]:
    """The catalog's scenarios of ``api`` that need no network backend."""
    from harness.scenario import load_catalog

    return [s for s in load_catalog() if s.api == api and s.backend == "server"]


def fuzz_rate(target: str, api: str, seconds: float, jobs: int, seed: int) -> Rate:
    from harness.fuzz.search import Search
    from harness.fuzz.settings import FuzzSettings

    config = FuzzSettings(
        target=target,
        apis=(api,),
        examples=None,
        minutes=seconds / 60.0,
        seed=seed,
        jobs=jobs,
        database=None,
        confirm=0,
        reference=None,
    )
    report = Search(config).run()
    return Rate(report.cases, report.elapsed_s)


def catalog_rate(target: str, scenarios: Sequence[Any], jobs: int) -> Rate:
    from harness.runner import RunSettings, run_cases

    settings = RunSettings(jobs=jobs, keep_timeline=False)
    started = time.monotonic()
    results = run_cases([(s, target) for s in scenarios], settings=settings)
    return Rate(len(results), time.monotonic() - started)


def measure(
    targets: Sequence[str] = DEFAULT_TARGETS,
    *,
    api: str = DEFAULT_API,
    seconds: int = DEFAULT_SECONDS,
    jobs: int = DEFAULT_JOBS,
    seed: int = 1,
    scenarios: Sequence[Any] | None = None,
) -> FuzzBench:
    """``scenarios``: the catalog cases to time (default :func:`catalog_cases` of ``api``)."""
    load = os.getloadavg()
    scenarios = catalog_cases(api) if scenarios is None else scenarios
    rates: dict[str, dict[str, Rate]] = {}
    for target in targets:
        rates[target] = {
            "fuzz": fuzz_rate(target, api, seconds, jobs, seed),
            "catalog": catalog_rate(target, scenarios, jobs),
        }
    return FuzzBench(api, jobs, seconds, load, rates)


def render(result: FuzzBench) -> None:
    load = " ".join(f"{x:.2f}" for x in result.loadavg_before)
    print(
        f"harness bench fuzz: api={result.api}, -j {result.jobs}, fuzz {result.seconds} s "
        f"per target (load before: {load})"
    )
    print(f"{'target':<14} {'fuzz cases/min':>15} {'catalog cases/min':>18} {'ratio':>6}")
    for target, rates in result.rates.items():
        fuzz, cat = rates["fuzz"], rates["catalog"]
        print(
            f"{target:<14} {fuzz.per_minute:>9.0f} ({fuzz.cases:>3}) "
            f"{cat.per_minute:>11.0f} ({cat.cases:>3}) {result.ratio(target):>6.2f}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="harness bench fuzz",
        description="Cases per minute of harness fuzz next to the catalog's, per target.",
    )
    parser.add_argument(
        "-t",
        "--target",
        action="append",
        dest="targets",
        metavar="TARGET",
        help=f"repeatable; default {', '.join(DEFAULT_TARGETS)}",
    )
    parser.add_argument("--api", default=DEFAULT_API, choices=("chat", "responses", "messages"))
    parser.add_argument(
        "--seconds", type=int, help=f"fuzz time per target (default {DEFAULT_SECONDS})"
    )
    parser.add_argument("-j", "--jobs", type=int, help=f"workers (default {DEFAULT_JOBS})")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", metavar="PATH", help="write the figures as JSON too")
    args = parser.parse_args(argv)
    given = whole_numbers(parser, args, ("seconds", "jobs"))
    targets = tuple(args.targets or DEFAULT_TARGETS)
    from harness.targets import load_target

    for target in targets:
        try:
            load_target(target)
        except Exception as exc:  # noqa: BLE001 - one line, exit 2, as every command
            parser.error(f"--target {target!r}: {exc}")
    result = measure(
        targets,
        api=args.api,
        seconds=given.get("seconds", DEFAULT_SECONDS),
        jobs=given.get("jobs", DEFAULT_JOBS),
        seed=args.seed,
    )
    return finish(result, render, args.json)
