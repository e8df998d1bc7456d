"""The JSON report, and ``harness report merge`` of JSON shards into one.

Format (``"format": 1``)::

    {"format": 1, "time_scale": 0.05, "shard": "1/2" | null,
     "summary": {"cases": N, "matched": N, "mismatched": N, "leaky": N},
     "results": [CaseResult.to_dict(), ...]}

``harness scorecard`` adds ``"wall_s": {target: seconds}``, the measured run time of each
target (:func:`load_wall_times` reads it back; other readers ignore it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.report.common import summary_counts

__all__ = [
    "FORMAT",
    "ReportError",
    "load_json",
    "load_wall_times",
    "merge_json",
    "read_report",
    "render_json",
    "write_json",
]

FORMAT = 1


class ReportError(ValueError):
    """A report file cannot be read or merged; names the file and the problem."""


def render_json(
    results: Sequence[Any],
    *,
    shard: str | None = None,
    wall_s: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    scales = sorted({r.time_scale for r in results})
    doc: dict[str, Any] = {
        "format": FORMAT,
        "time_scale": scales[0] if len(scales) == 1 else scales,
        "shard": shard,
        "summary": summary_counts(results),
    }
    if wall_s:
        doc["wall_s"] = {t: round(float(s), 3) for t, s in wall_s.items()}
    doc["results"] = [r.to_dict() for r in results]
    return doc


def write_json(
    path: str | Path,
    results: Sequence[Any],
    *,
    shard: str | None = None,
    wall_s: Mapping[str, float] | None = None,
) -> None:
    Path(path).write_text(
        json.dumps(render_json(results, shard=shard, wall_s=wall_s), indent=2, default=str) + "\n"
    )


def load_wall_times(path: str | Path) -> dict[str, float]:
    """The ``wall_s`` table of a report written by ``harness scorecard`` (else empty)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path}: not a JSON report: {exc}") from None
    wall = data.get("wall_s") if isinstance(data, dict) else None
    if not isinstance(wall, dict):
        return {}
    return {str(t): float(s) for t, s in wall.items() if isinstance(s, int | float)}


def read_report(path: str | Path) -> dict[str, Any]:
    """The raw JSON of one report, of this format with a results list; else
    :class:`ReportError` naming the file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path}: not a JSON report: {exc}") from None
    if (
        not isinstance(data, dict)
        or data.get("format") != FORMAT
        or not isinstance(data.get("results"), list)
    ):
        raise ReportError(
            f"{path}: not a harness JSON report (format {FORMAT} with a results list)"
        )
    return data


def load_json(path: str | Path) -> list[Any]:
    """The :class:`~harness.runner.CaseResult` list of one JSON report."""
    from harness.runner import CaseResult

    data = read_report(path)
    try:
        return [CaseResult.from_dict(item) for item in data["results"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise ReportError(f"{path}: a result entry is malformed: {exc}") from None


def merge_json(paths: Sequence[str | Path]) -> list[Any]:
    """Results of every shard, in (scenario, target) order; a case in two shards is an error."""
    merged: dict[tuple[str, str], Any] = {}
    for path in paths:
        for result in load_json(path):
            key = (result.scenario, result.target)
            if key in merged:
                raise ReportError(f"{path}: case {key[0]} [{key[1]}] is also in another shard")
            merged[key] = result
    return [merged[k] for k in sorted(merged)]
