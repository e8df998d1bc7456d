"""Findings: one per group (failed checks, and the outcome kind where it decides one),
written as catalog scenarios.

A finding's file is a scenario TOML in the catalog's own format (``docs/scenarios.md``):
it loads with :func:`harness.scenario.load_scenario`, drops into ``harness/catalog/`` or
any ``--scenarios-dir``, and carries the observed outcome as the target's ``expected``
(the regression gate documents today's behaviour, as the catalog does for the bare
SDK), the reference target's outcome where its verdict passed, and, as comments, the
verdict, the failed checks with their evidence, the contract as judged, the
confirmation rate and the unshrunk script it came from. ``findings.json`` in the same
directory lists every finding; both are rewritten as each finding is made, so an
interrupted run loses none.

Not here: searching (``harness.fuzz.search``), the repro directory (``harness.fuzz.repro``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.case_result import CaseResult
from harness.contract.check import checks

_BY_OUTCOME = frozenset(c.name for c in checks() if c.by_outcome)

__all__ = [
    "Finding",
    "GroupKey",
    "differs_key",
    "expected_text",
    "group_key",
    "is_difference",
    "scenario_toml",
    "timing_sensitive_entries",
    "to_toml",
    "unsatisfiable_entries",
    "write_findings",
]

#: (outcome kind or ``any``, failed checks sorted): one bug is one finding.
GroupKey = tuple[str, tuple[str, ...]]
_SCALARS = (str, int, float, bool)


#: The outcome part of a difference's group (``--same-as``): ``differs:ok/error``.
_DIFFERS = "differs:"


#: The outcome part of a group whose failed checks the outcome does not decide.
ANY_OUTCOME = "any"


def group_key(result: CaseResult) -> GroupKey:
    """The failed checks, with the outcome kind only where one of them is decided by the
    outcome (``Check.by_outcome``): a posture or budget check (``dead_peer_bound``,
    ``bounded``) fails alike whether the call raised, hung or returned, and is one bug."""
    failed = tuple(sorted(result.failed_checks))
    decided = any(c in _BY_OUTCOME for c in failed) or not failed
    return (result.outcome.kind if decided else ANY_OUTCOME), failed


def differs_key(result: CaseResult, other: CaseResult) -> GroupKey | None:
    """The group of a passing result whose outcome kind is not the other target's, or
    None when the kinds are equal: one group per pair of kinds (this side first)."""
    mine, theirs = result.outcome.kind, other.outcome.kind
    return None if mine == theirs else (f"{_DIFFERS}{mine}/{theirs}", ())


def is_difference(key: GroupKey) -> bool:
    return key[0].startswith(_DIFFERS)


def expected_text(result: CaseResult) -> str:
    """The outcome as an ``[expected]`` value (``error:Name``, ``hung``...); an error
    chain's label (``RetriesExhausted:TruncatedStream``) by its last error, as the
    catalog writes it."""
    outcome = result.outcome
    if outcome.kind == "error" and outcome.error:
        return f"error:{outcome.error.split(':')[-1]}"
    return outcome.kind


@dataclass(frozen=True)
class Finding:
    """A shrunk failing scenario with what it showed."""

    key: GroupKey
    data: Mapping[str, Any]
    result: CaseResult
    target: str
    first: Mapping[str, Any]
    #: one entry per confirmation replay: True when it failed in the same group
    confirm_runs: tuple[bool, ...] = ()
    reference: CaseResult | None = None
    first_seen_s: float = 0.0
    found_s: float = 0.0
    shrink_runs: int = 0
    #: the shrunk script did not fail again on any replay; this is the unshrunk one
    unshrunk: bool = False

    @property
    def name(self) -> str:
        return str(self.data["name"])

    @property
    def status(self) -> str:
        """``confirmed`` (failed on every replay), ``timing_sensitive`` or ``unconfirmed``."""
        if not self.confirm_runs:
            return "unconfirmed"
        return "confirmed" if all(self.confirm_runs) else "timing_sensitive"

    @property
    def rate(self) -> str:
        return f"{sum(self.confirm_runs)}/{len(self.confirm_runs)}"

    @property
    def satisfiable(self) -> bool | None:
        """Did the reference meet this contract (None: not checked)?"""
        return None if self.reference is None else self.reference.verdict != "fail"

    @property
    def rules(self) -> int:
        return len(self.data["script"]["rules"])

    def scenario_data(self) -> dict[str, Any]:
        """The scenario as it is written: the run's data plus the expectations."""
        data = dict(self.data)
        expected = {self.target: expected_text(self.result)}
        # the reference's outcome where it met the contract; a difference's other side
        # always (the file documents both behaviours)
        ref = self.reference
        if ref is not None and (ref.verdict != "fail" or is_difference(self.key)):
            expected[ref.target] = expected_text(ref)
        data["expected"] = expected
        return data

    def to_dict(self) -> dict[str, Any]:
        ref = self.reference
        return {
            "name": self.name,
            "target": self.target,
            "outcome": self.key[0],
            "failed_checks": list(self.key[1]),
            "observed": self.result.outcome.label,
            "evidence": dict(self.result.evidence),
            "status": self.status,
            "confirmed": self.rate,
            "reference": None
            if ref is None
            else {"outcome": ref.outcome.label, "verdict": ref.verdict},
            "rules": self.rules,
            "summary": self.data["summary"],
            "script": self.data["script"],
            "unshrunk": self.first["script"],
            "first_seen_s": round(self.first_seen_s, 2),
            "found_s": round(self.found_s, 2),
            "shrink_runs": self.shrink_runs,
            "shrunk_did_not_repeat": self.unshrunk,
            "file": f"{self.name}.toml",
        }


def to_toml(finding: Finding) -> str:
    """The finding as a scenario file (comments: verdict, evidence, contract, origin)."""
    r = finding.result
    head = [
        f"# harness fuzz finding: {finding.target} -> {r.outcome.label}, verdict {r.verdict}",
        f"# failed checks: {', '.join(r.failed_checks) or '-'}",
        *(f"#   {check}: {text}" for check, text in r.evidence.items()),
        f"# confirmation: {finding.status} ({finding.rate} replays failed the same way)",
    ]
    if finding.unshrunk:
        head.append("# unshrunk: the shrunk script never failed again; this is the one first found")
    if finding.reference is not None:
        ref = finding.reference
        head.append(f"# reference: {ref.outcome.label}, verdict {ref.verdict}")
    head.append("# contract as judged: " + json.dumps(dict(r.contract), sort_keys=True))
    head.append("# shrunk from: " + json.dumps(finding.first["script"], sort_keys=True))
    return "\n".join([*(_one_line(h) for h in head), "", scenario_toml(finding.scenario_data())])


def unsatisfiable_entries(
    unsatisfiable: Mapping[GroupKey, tuple[Mapping[str, Any], CaseResult, CaseResult]],
) -> list[dict[str, Any]]:
    """Contracts the reference failed too, one per group, for ``findings.json``."""
    return [
        {
            **_group_entry(key, data, result),
            "reference": {
                "target": ref.target,
                "outcome": ref.outcome.label,
                "failed_checks": list(ref.failed_checks),
                "evidence": dict(ref.evidence),
            },
        }
        for key, (data, result, ref) in unsatisfiable.items()
    ]


def timing_sensitive_entries(
    flaky: Mapping[GroupKey, tuple[Mapping[str, Any], CaseResult]],
) -> list[dict[str, Any]]:
    """First failures that passed when replayed, one per group, for ``findings.json``."""
    return [
        {**_group_entry(key, data, result), "evidence": dict(result.evidence)}
        for key, (data, result) in flaky.items()
    ]


def _group_entry(key: GroupKey, data: Mapping[str, Any], result: CaseResult) -> dict[str, Any]:
    """What every ``findings.json`` entry of a group says: its key, script and outcome."""
    return {
        "outcome": key[0],
        "failed_checks": list(key[1]),
        "summary": data["summary"],
        "script": data["script"],
        "observed": result.outcome.label,
    }


def write_findings(directory: Path, findings: Sequence[Finding], **meta: Any) -> None:
    """Every finding's TOML and ``findings.json`` (written whole, then renamed)."""
    directory.mkdir(parents=True, exist_ok=True)
    for finding in findings:
        _replace(directory / f"{finding.name}.toml", to_toml(finding))
    summary = {**meta, "findings": [f.to_dict() for f in findings]}
    _replace(directory / "findings.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")


# --------------------------------------------------------------------------- TOML


def scenario_toml(data: Mapping[str, Any]) -> str:
    """The scenario dict as TOML: top-level values, then one table per mapping (its own
    mappings inline), the rules as ``[[script.rules]]`` and the toxics as
    ``[[network.toxics]]``, with inline ``match`` and ``fault`` tables."""
    lines = [f"{k} = {_value(v)}" for k, v in data.items() if _plain(v)]
    for key, table in data.items():
        if not isinstance(table, Mapping):
            continue
        lines += ["", f"[{key}]"]
        # a table inside a table is written inline (``relay = { mode = "hold" }``)
        lines += [
            f"{k} = {_value(v)}" for k, v in table.items() if _plain(v) or isinstance(v, Mapping)
        ]
        for name, items in table.items():
            if isinstance(items, list) and items and isinstance(items[0], Mapping):
                for item in items:
                    lines += ["", f"[[{key}.{name}]]"]
                    lines += [f"{k} = {_value(v)}" for k, v in item.items() if v is not None]
    return "\n".join(lines) + "\n"


def _plain(value: Any) -> bool:
    if isinstance(value, list):
        return not value or not isinstance(value[0], Mapping)
    return value is not None and not isinstance(value, Mapping)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(value, Mapping):
        inner = ", ".join(f"{k} = {_value(v)}" for k, v in value.items() if v is not None)
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def _one_line(text: str) -> str:
    return " ".join(text.split())[:2000]


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
