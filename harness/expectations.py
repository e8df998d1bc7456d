"""Expectations overlays: what one target did across the catalog, kept outside the scenario files.

A scenario's inline ``[expected]`` table holds the built-in targets' expectations; any
other target (an out-of-tree client, a gateway a team runs) keeps its own in one TOML
file, so judging and gating it needs no edit to the catalog::

    target = "mypkg.target:MyTarget"   # the -t name it applies to
    [expected]                         # scenario -> outcome, the syntax of a scenario's [expected]
    chat_healthy_stream = "ok"
    chat_mid_stream_stall = "hung"
    chat_rst_mid_stream = "error:APIConnectionError"
    messages_healthy_stream = "not_applicable"
    [max_requests]                     # optional: per-scenario request budget for this target
    chat_mid_stream_stall = 6
    [varies.chat_steady_slow_token_drip]   # optional: a check this target passes or fails
    no_leaks = "2 of 10 runs: ..."         # by its own timing, measured; why, with the rate

``varies`` is read by ``harness report diff`` (:func:`recorded_variations`): a case whose
only difference between two runs is such a check flipping is an accepted variation of
the target, not a regression; the run itself still judges the check every time.

``harness run -t X --write-expectations FILE`` writes one from a run
(:func:`render_overlay`); ``--expectations FILE`` gates on it (:func:`apply_overlays`:
adds to, or overrides, the inline expectations). Files under ``SHIPPED_DIR`` apply to
their target without the flag. A scenario left out of an overlay still runs and is
judged by its contract verdict alone.

Bad input raises :class:`~harness.scenario.ScenarioError` naming the file and the field
(``expected.<scenario>``) with the allowed values.

Not here: running (``harness.runner``) or the inline expectations (``harness.scenario``).
"""

from __future__ import annotations

import json
import tomllib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.contract.check import checks
from harness.outcome import Outcome
from harness.paths import CATALOG_DIR
from harness.scenario import Scenario, ScenarioError
from harness.scenario_errors import check_expected, read_toml

__all__ = [
    "SHIPPED_DIR",
    "Overlay",
    "apply_overlays",
    "expectation_text",
    "load_overlay",
    "overlays_for",
    "recorded_variations",
    "render_overlay",
    "shipped_overlays",
    "with_overlays",
    "write_overlay",
]

#: Overlays shipped with the package; each applies to the target its ``target`` names.
SHIPPED_DIR = CATALOG_DIR / "expectations"
_KEYS = ("target", "expected", "max_requests", "varies")


@dataclass(frozen=True)
class Overlay:
    """One target's expectations (scenario -> outcome text) and request budgets."""

    target: str
    expected: Mapping[str, str] = field(default_factory=dict)
    max_requests: Mapping[str, int] = field(default_factory=dict)
    #: scenario -> {check: why}: checks this target passes or fails by its own timing
    varies: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    path: str = ""


def load_overlay(path: str | Path, *, scenarios: Iterable[str]) -> Overlay:
    """Read and validate one overlay file; ``scenarios`` are the names it may mention."""
    return overlay_from_dict(read_toml(path), file=str(path), scenarios=scenarios)


def overlay_from_dict(
    raw: Mapping[str, Any], *, file: str = "<overlay>", scenarios: Iterable[str]
) -> Overlay:
    """Validate already-parsed overlay data (``load_overlay`` without the file read)."""
    names = sorted(scenarios)
    for key in raw:
        if key not in _KEYS:
            raise ScenarioError(file, key, "unknown key", ", ".join(_KEYS))
    target = raw.get("target")
    if not isinstance(target, str) or not target.strip():
        raise ScenarioError(file, "target", f"{target!r} is not valid", "the -t name, a string")
    expected = _table(raw, "expected", file)
    budgets = _table(raw, "max_requests", file)
    varies = _varies(_table(raw, "varies", file), file)
    for table, entries in (("expected", expected), ("max_requests", budgets), ("varies", varies)):
        for scenario in entries:
            if scenario not in names:
                raise ScenarioError(
                    file, f"{table}.{scenario}", "unknown scenario", ", ".join(names)
                )
    for scenario, text in expected.items():
        check_expected(file, f"expected.{scenario}", text)
    for scenario, n in budgets.items():
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ScenarioError(
                file, f"max_requests.{scenario}", f"{n!r} is not valid", "a whole number >= 1"
            )
    return Overlay(
        target=target,
        expected=dict(expected),
        max_requests=dict(budgets),
        varies=varies,
        path=file,
    )


def shipped_overlays(
    *,
    scenarios: Iterable[str],
    directory: Path = SHIPPED_DIR,
    targets: Sequence[str] | None = None,
) -> list[Overlay]:
    """Every overlay shipped under ``directory`` (none when it does not exist); with
    ``targets``, only theirs: another target's file is not validated against this run."""
    if not directory.is_dir():
        return []
    names = list(scenarios)
    paths = sorted(directory.glob("*.toml"))
    if targets is not None:
        paths = [p for p in paths if _target_of(p) in targets]
    return [load_overlay(p, scenarios=names) for p in paths]


def _target_of(path: Path) -> object:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh).get("target")
    except (OSError, tomllib.TOMLDecodeError):
        return None  # load_overlay reports it properly if the file is ever chosen


def overlays_for(
    targets: Sequence[str],
    files: Sequence[str | Path],
    *,
    scenarios: Iterable[str],
    shipped_dir: Path = SHIPPED_DIR,
) -> list[Overlay]:
    """The overlays that apply to a run of ``targets``: the shipped ones for those targets,
    then ``files`` (given on the command line: applied last, so they win). A file given
    for a target that is not in the run is an error: it would silently gate nothing."""
    names = list(scenarios)
    chosen = shipped_overlays(scenarios=names, directory=shipped_dir, targets=targets)
    for path in files:
        overlay = load_overlay(path, scenarios=names)
        if overlay.target not in targets:
            raise ScenarioError(
                str(path),
                "target",
                f"{overlay.target!r} is not a target of this run",
                ", ".join(targets),
            )
        chosen.append(overlay)
    return chosen


def apply_overlays(scenarios: Sequence[Scenario], overlays: Sequence[Overlay]) -> list[Scenario]:
    """``scenarios`` with each overlay's expectations and budgets merged in (later wins)."""
    out = []
    for scenario in scenarios:
        expected = dict(scenario.expected)
        budgets = dict(scenario.budget.max_requests_for)
        for overlay in overlays:
            if scenario.name in overlay.expected:
                expected[overlay.target] = overlay.expected[scenario.name]
            if scenario.name in overlay.max_requests:
                budgets[overlay.target] = overlay.max_requests[scenario.name]
        if expected == scenario.expected and budgets == scenario.budget.max_requests_for:
            out.append(scenario)
            continue
        budget = scenario.budget.model_copy(update={"max_requests_for": budgets})
        out.append(scenario.model_copy(update={"expected": expected, "budget": budget}))
    return out


def with_overlays(
    scenarios: Sequence[Scenario],
    targets: Sequence[str],
    files: Sequence[str | Path],
    *,
    catalog_dir: str | Path = CATALOG_DIR,
) -> list[Scenario]:
    """``scenarios`` with the overlays for a run of ``targets`` merged in (``harness run``).

    An overlay covers the whole catalog, not only the run's selection, so the names it may
    use are the catalog's (file stems are scenario names: the loader checks that)."""
    names = {s.name for s in scenarios} | _catalog_names(catalog_dir)
    return apply_overlays(scenarios, overlays_for(targets, files, scenarios=names))


def expectation_text(outcome: Outcome) -> str | None:
    """The expectation that matches ``outcome`` exactly as it came out (None: a skipped
    case, which says nothing about the target). An error is written as its class; for a
    ``RetriesExhausted:Inner`` report, the inner class (both are in the reported MRO)."""
    if outcome.kind == "skipped":
        return None
    if outcome.kind == "error" and outcome.error:
        return f"error:{outcome.error.rsplit(':', 1)[-1]}"
    return outcome.kind


def render_overlay(target: str, results: Iterable[Any]) -> str:
    """The overlay TOML for ``target`` from a run's ``CaseResult`` list (its other
    targets' results are left out). A case run several times (``--repeat``) whose runs
    came out differently gets the outcomes actually seen as alternatives, the most
    frequent first, with the counts in a comment: ``"ok|false_kill"  # 3/4 ok, 1/4
    false_kill``."""
    seen: dict[str, list[str]] = {}
    for result in results:
        text = expectation_text(result.outcome) if result.target == target else None
        if text is not None:
            seen.setdefault(result.scenario, []).append(text)
    lines = [
        "# Expectations overlay written by `harness run --write-expectations`: what this",
        "# target did; gate on it with `harness run -t TARGET --expectations FILE`.",
        f"target = {json.dumps(target)}",
        "",
        "[expected]",
    ]
    for scenario in sorted(seen):
        texts = seen[scenario]
        counts = Counter(texts).most_common()
        line = f"{scenario} = {json.dumps(_alternatives([t for t, _ in counts]))}"
        if len(texts) > 1:
            runs = len(texts)
            line += "  # " + ", ".join(f"{n}/{runs} {t}" for t, n in counts)
        lines.append(line)
    return "\n".join(lines) + "\n"


def _alternatives(texts: Sequence[str]) -> str:
    """One expectation matching each of ``texts``: ``error:A|B`` when all are errors
    (the error-class syntax), else the outcomes joined (``ok|error:A``; an error text
    first would read as error classes, so the others lead)."""
    if len(texts) == 1:
        return texts[0]
    errors = [t for t in texts if t.startswith("error:")]
    if len(errors) == len(texts):
        return "error:" + "|".join(t.split(":", 1)[1] for t in errors)
    return "|".join([t for t in texts if not t.startswith("error:")] + errors)


def write_overlay(path: str | Path, target: str, results: Iterable[Any]) -> None:
    Path(path).write_text(render_overlay(target, results), encoding="utf-8")


# --------------------------------------------------------------------------- helpers


def recorded_variations(
    targets: Iterable[str], *, directory: Path = SHIPPED_DIR
) -> dict[tuple[str, str], Mapping[str, str]]:
    """(target, scenario) -> {check: why} from the shipped overlays of ``targets``."""
    names = _catalog_names(CATALOG_DIR)
    return {
        (overlay.target, scenario): flips
        for overlay in shipped_overlays(scenarios=names, directory=directory, targets=list(targets))
        for scenario, flips in overlay.varies.items()
    }


def _catalog_names(directory: str | Path) -> set[str]:
    """The catalog's scenario names (file stems are scenario names: the loader checks)."""
    return {p.stem for p in Path(directory).glob("*.toml")}


def _varies(table: Mapping[str, Any], file: str) -> dict[str, dict[str, str]]:
    known = sorted(c.name for c in checks())
    out: dict[str, dict[str, str]] = {}
    for scenario, entries in table.items():
        if not isinstance(entries, Mapping) or not entries:
            raise ScenarioError(
                file, f"varies.{scenario}", f"{entries!r} is not valid", "a table of check = why"
            )
        for check, why in entries.items():
            if check not in known:
                raise ScenarioError(
                    file, f"varies.{scenario}.{check}", "unknown check", ", ".join(known)
                )
            if not isinstance(why, str) or not why.strip():
                raise ScenarioError(
                    file,
                    f"varies.{scenario}.{check}",
                    f"{why!r} is not valid",
                    "why it varies, with the measured rate (a string)",
                )
        out[scenario] = dict(entries)
    return out


def _table(raw: Mapping[str, Any], key: str, file: str) -> dict[str, Any]:
    value = raw.get(key, {})
    if not isinstance(value, Mapping):
        raise ScenarioError(file, key, f"{value!r} is not valid", "a table of scenario = value")
    return dict(value)
