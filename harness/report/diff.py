"""``harness report diff``: what changed between two JSON reports (a base and a head run).

Per case (target x scenario) it compares the contract verdict, the failed checks, the
outcome, the server's request count, the latency and the client's transport settings,
and sorts every difference into one of four groups:

    regression   the verdict got worse (pass > safe > fail), or a check failed that the
                 base did not fail
    fix          the verdict got better, with no check newly failed
    change       anything else that differs: the outcome, the requests or the latency
                 beyond noise, the transport settings, checks no longer failed under the
                 same verdict, a case run on one side only or not run on one side
    variation    the outcome moved between two the target's expectation accepts (both
                 sides matched the same ``expected``, e.g. ``ok|false_kill``): the
                 target's own recorded variance, never a regression (the checks that
                 came with it are named, ``harness.report.diff_rules``); or only checks
                 the target's overlay records as varying on that case flipped (``[varies]``
                 in ``harness/catalog/expectations/``, read by :func:`diff_files`)

Each changed case carries what changed underneath (``harness.report.diff_causes``): the
exception chain's root cause, the transport facts and the evidence of each newly failed
check; ``ReportDiff.causes`` folds them into one line per cause.

What is noise (``harness.report.diff_rules``): latency that moved by at most
``latency_noise_s`` or ``latency_noise_ratio`` of the smaller (not compared across time
scales), a request count that moved by at most ``requests_noise`` under the same outcome,
and the outcome and latency of a case either report marks ``flaky`` (``--repeat``; its
verdict and checks still count unless both sides saw the same spread of verdicts).

When each report holds exactly one target and the names differ (``hermes`` against
``hermes+guard``), cases are paired by scenario alone.

Reports are read as plain JSON, field by field: a field this module does not know is
ignored, a missing one is unknown (never a difference), so reports written by older or
newer runs compare. A file that is not a harness JSON report is a :class:`ReportError`.

Not here: rendering (``harness.report.diff_markdown``), the command (``harness.cli.report_diff``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.expectations import recorded_variations
from harness.report.common import fmt_seconds
from harness.report.diff_causes import Cause, Underneath, summarise, underneath
from harness.report.diff_rules import (
    OUTCOME_CHECKS,
    accepted_variation,
    flaky_alike,
    flaky_note,
    latency_moved,
    recorded_variation,
    requests_moved,
    variation_note,
)
from harness.report.diff_side import VERDICT_RANK, CaseSide
from harness.report.json_report import ReportError, read_report

__all__ = [
    "DEFAULT_LATENCY_NOISE_RATIO",
    "DEFAULT_LATENCY_NOISE_S",
    "DEFAULT_REQUESTS_NOISE",
    "DIFF_FORMAT",
    "FAIL_ON",
    "GROUPS",
    "OUTCOME_CHECKS",
    "CaseDelta",
    "CaseSide",
    "ReportDiff",
    "diff_files",
    "diff_reports",
    "load_report",
]

DIFF_FORMAT = 1
GROUPS = ("regression", "fix", "change", "variation")
#: ``--fail-on`` choices: the groups that make ``harness report diff`` exit 1.
FAIL_ON: dict[str, tuple[str, ...]] = {
    "regression": ("regression",),
    "change": ("regression", "change"),
    "any": GROUPS,
    "never": (),
}
#: A latency difference under this many seconds is noise, whatever the ratio.
DEFAULT_LATENCY_NOISE_S = 1.0
#: ...and so is one under this share of the smaller latency.
DEFAULT_LATENCY_NOISE_RATIO = 0.5
#: A request count that moved by at most this many, the outcome unchanged, is noise.
DEFAULT_REQUESTS_NOISE = 1


@dataclass(frozen=True)
class CaseDelta:
    """One case that differs: its group and what differs, one short line per fact."""

    scenario: str
    target: str
    group: str
    what: tuple[str, ...]
    base: CaseSide | None
    head: CaseSide | None
    newly_failed: tuple[str, ...] = ()
    #: What changed underneath (root cause, transport, evidence).
    underneath: Underneath = field(default_factory=Underneath)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "target": self.target,
            "group": self.group,
            "what": list(self.what),
            "newly_failed_checks": list(self.newly_failed),
            "underneath": self.underneath.to_dict(),
            "base": None if self.base is None else self.base.to_dict(),
            "head": None if self.head is None else self.head.to_dict(),
        }


@dataclass(frozen=True)
class ReportDiff:
    """Every case that differs, in (target, scenario) order, and how many did not."""

    base_name: str
    head_name: str
    deltas: tuple[CaseDelta, ...]
    unchanged: int
    cases: int
    notes: tuple[str, ...] = ()
    targets: tuple[str, ...] = field(default=())

    def group(self, name: str) -> list[CaseDelta]:
        return [d for d in self.deltas if d.group == name]

    def counts(self) -> dict[str, int]:
        return {g: len(self.group(g)) for g in GROUPS}

    def fails(self, fail_on: str = "regression") -> bool:
        groups = FAIL_ON[fail_on]
        return any(d.group in groups for d in self.deltas)

    @property
    def causes(self) -> list[Cause]:
        """One line per cause under the cases that changed (not the accepted variations)."""
        return summarise((d.scenario, d.underneath) for d in self.deltas if d.group != "variation")

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": DIFF_FORMAT,
            "kind": "diff",
            "base": self.base_name,
            "head": self.head_name,
            "targets": list(self.targets),
            "summary": {**self.counts(), "unchanged": self.unchanged, "cases": self.cases},
            "notes": list(self.notes),
            "causes": [c.to_dict() for c in self.causes],
            "regressions": [d.to_dict() for d in self.group("regression")],
            "fixes": [d.to_dict() for d in self.group("fix")],
            "changes": [d.to_dict() for d in self.group("change")],
            "variations": [d.to_dict() for d in self.group("variation")],
        }


def load_report(path: str | Path) -> dict[str, Any]:
    """The raw JSON of one harness report; :class:`ReportError` naming the file if not."""
    data = read_report(path)
    for i, entry in enumerate(data["results"]):
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("scenario"), str)
            and isinstance(entry.get("target"), str)
        ):
            raise ReportError(f"{path}: results[{i}] has no scenario and target names")
    return data


def diff_files(
    base: str | Path,
    head: str | Path,
    *,
    latency_noise_s: float = DEFAULT_LATENCY_NOISE_S,
    latency_noise_ratio: float = DEFAULT_LATENCY_NOISE_RATIO,
    requests_noise: int = DEFAULT_REQUESTS_NOISE,
) -> ReportDiff:
    base_report, head_report = load_report(base), load_report(head)
    targets = {e["target"] for r in (base_report, head_report) for e in r["results"]}
    return diff_reports(
        base_report,
        head_report,
        base_name=str(base),
        head_name=str(head),
        latency_noise_s=latency_noise_s,
        latency_noise_ratio=latency_noise_ratio,
        requests_noise=requests_noise,
        variations=recorded_variations(sorted(targets)),
    )


def diff_reports(
    base: Mapping[str, Any],
    head: Mapping[str, Any],
    *,
    base_name: str = "base",
    head_name: str = "head",
    latency_noise_s: float = DEFAULT_LATENCY_NOISE_S,
    latency_noise_ratio: float = DEFAULT_LATENCY_NOISE_RATIO,
    requests_noise: int = DEFAULT_REQUESTS_NOISE,
    variations: Mapping[tuple[str, str], Mapping[str, str]] | None = None,
) -> ReportDiff:
    """Compare two loaded reports (:func:`load_report`'s dicts); ``variations``: per
    (target, scenario), the checks recorded as varying there (check -> why)."""
    base_cases, head_cases = _cases(base), _cases(head)
    base_targets = sorted({t for t, _ in base_cases})
    head_targets = sorted({t for t, _ in head_cases})
    notes: list[str] = []
    targets = tuple(dict.fromkeys(base_targets + head_targets))
    if len(base_targets) == 1 and len(head_targets) == 1 and base_targets != head_targets:
        # One target against another: pair by scenario, name the case by both.
        pair = f"{base_targets[0]} → {head_targets[0]}"
        base_cases = {(pair, s): c for (_, s), c in base_cases.items()}
        head_cases = {(pair, s): c for (_, s), c in head_cases.items()}
        targets = (pair,)
    unreached = [
        sum(c.get("verdict") == "not_exercised" for c in side.values())
        for side in (base_cases, head_cases)
    ]
    if any(unreached):
        notes.append(f"not exercised (counted apart): base {unreached[0]}, head {unreached[1]}")
    compare_latency = _scale(base) == _scale(head)
    if not compare_latency:
        notes.append(f"time scales differ ({_scale(base)} vs {_scale(head)}): latency not compared")
    deltas = []
    unchanged = 0
    for key in sorted(set(base_cases) | set(head_cases)):
        delta = _case_delta(
            key,
            base_cases.get(key),
            head_cases.get(key),
            latency=(latency_noise_s, latency_noise_ratio) if compare_latency else None,
            requests_noise=requests_noise,
            varies=(variations or {}).get(key),
        )
        if delta is None:
            unchanged += 1
        else:
            deltas.append(delta)
    return ReportDiff(
        base_name=base_name,
        head_name=head_name,
        deltas=tuple(deltas),
        unchanged=unchanged,
        cases=unchanged + len(deltas),
        notes=tuple(notes),
        targets=targets,
    )


def _case_delta(
    key: tuple[str, str],
    base_entry: Mapping[str, Any] | None,
    head_entry: Mapping[str, Any] | None,
    *,
    latency: tuple[float, float] | None,
    requests_noise: int = DEFAULT_REQUESTS_NOISE,
    varies: Mapping[str, str] | None = None,
) -> CaseDelta | None:
    target, scenario = key
    base = None if base_entry is None else CaseSide.from_entry(base_entry)
    head = None if head_entry is None else CaseSide.from_entry(head_entry)
    if base is None or head is None or base_entry is None or head_entry is None:
        side = "head" if base is None else "base"
        return CaseDelta(scenario, target, "change", (f"only in {side}",), base, head)
    if not (base.ran and head.ran):
        if base.outcome == head.outcome:
            return None
        return CaseDelta(
            scenario,
            target,
            "change",
            (f"not run: `{base.outcome}` → `{head.outcome}`",),
            base,
            head,
        )
    what: list[str] = []
    newly = tuple(c for c in head.failed_checks if c not in base.failed_checks)
    gone = tuple(c for c in base.failed_checks if c not in head.failed_checks)
    b_rank, h_rank = VERDICT_RANK.get(base.verdict or ""), VERDICT_RANK.get(head.verdict or "")
    unreached = "not_exercised" in (base.verdict, head.verdict)  # neither better nor worse
    if base.verdict != head.verdict and None not in (
        (b_rank, h_rank) if not unreached else (base.verdict, head.verdict)
    ):
        what.append(f"verdict {base.verdict} → {head.verdict}")
    if newly:
        what.append("newly failed: " + ", ".join(f"`{c}`" for c in newly))
    if gone:
        what.append("no longer failed: " + ", ".join(f"`{c}`" for c in gone))
    checks_only = len(what)  # the lines so far say only which checks flipped
    noisy = base.flaky or head.flaky
    if base.outcome != head.outcome and not noisy:
        what.append(f"outcome `{base.outcome}` → `{head.outcome}`")
    if requests_moved(base, head, requests_noise):
        what.append(f"requests {base.requests} → {head.requests}")
    if latency is not None and not noisy and latency_moved(base, head, *latency):
        what.append(f"latency {fmt_seconds(base.latency_s)} → {fmt_seconds(head.latency_s)}")
    under = underneath(base_entry, head_entry, newly)
    if under.transport_changed and not what:
        what.append("transport settings")
    if not what:
        return None
    recorded = recorded_variation(newly + gone, varies or {})
    if recorded is not None and len(what) == checks_only:
        what.append(recorded)
        return CaseDelta(scenario, target, "variation", tuple(what), base, head, newly, under)
    if flaky_alike(base, head):
        what.append(flaky_note(base, head))
        return CaseDelta(scenario, target, "variation", tuple(what), base, head, newly, under)
    if accepted_variation(base, head):
        what.append(variation_note(head, newly))
        return CaseDelta(scenario, target, "variation", tuple(what), base, head, newly, under)
    if newly or (b_rank is not None and h_rank is not None and h_rank < b_rank):
        group = "regression"
    elif b_rank is not None and h_rank is not None and h_rank > b_rank:
        group = "fix"
    else:
        group = "change"
    if noisy:
        what.append("flaky")
    return CaseDelta(scenario, target, group, tuple(what), base, head, newly, under)


def _cases(report: Mapping[str, Any]) -> dict[tuple[str, str], Mapping[str, Any]]:
    return {(e["target"], e["scenario"]): e for e in report["results"]}


def _scale(report: Mapping[str, Any]) -> Any:
    scale = report.get("time_scale")
    return tuple(scale) if isinstance(scale, list) else scale
