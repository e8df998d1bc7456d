"""The Markdown of a :class:`~harness.report.diff.ReportDiff`, for a pull-request comment:
one summary line, the causes (one line each: how many changed cases it is under), then a
table per group (regressions, fixes, changes, accepted variations), each row the case,
its base and head verdict and outcome, and what changed; under each table, per case,
what changed underneath (root cause, transport, the evidence of newly failed checks).

Not here: computing the diff (``harness.report.diff``).
"""

from __future__ import annotations

from pathlib import Path

from harness.report.diff import CaseDelta, ReportDiff
from harness.report.diff_side import CaseSide

__all__ = ["render_diff_markdown", "write_diff_markdown"]

_MARKS = {"pass": "✅", "safe": "🟡", "fail": "❌"}
_HEADINGS = {
    "regression": "Regressions",
    "fix": "Fixes",
    "change": "Other changes",
    "variation": "Accepted variations (the target's own, in its expectation)",
}


def render_diff_markdown(diff: ReportDiff, *, title: str = "Transport gate: base vs head") -> str:
    counts = diff.counts()
    mark = "❌" if counts["regression"] else "✅"
    lines = [
        f"## {title}",
        "",
        f"{mark} {_n(counts['regression'], 'regression')}, {_n(counts['fix'], 'fix', 'fixes')}, "
        f"{_n(counts['change'], 'other change')}, "
        f"{_n(counts['variation'], 'accepted variation')}; {diff.unchanged} of {diff.cases} "
        f"cases unchanged (targets: {', '.join(diff.targets) or '-'}).",
    ]
    lines += [f"_{note}_" for note in diff.notes]
    causes = diff.causes
    if causes:
        lines += ["", "### Causes", ""]
        lines += [f"- {_escape(c.line())}" for c in causes]
    for group in ("regression", "fix", "change", "variation"):
        deltas = diff.group(group)
        if not deltas:
            continue
        lines += [
            "",
            f"### {_HEADINGS[group]}",
            "",
            "| scenario | target | base | head | what changed |",
            "|---|---|---|---|---|",
        ]
        lines += [_row(d) for d in deltas]
        under = [(d, d.underneath.lines()) for d in deltas if d.underneath.lines()]
        if under:
            lines += ["", "What changed underneath:", ""]
            for delta, facts in under:
                lines.append(f"- `{delta.scenario}`: " + "; ".join(_escape(f) for f in facts))
    lines += ["", f"<sub>base: `{diff.base_name}` · head: `{diff.head_name}`</sub>"]
    return "\n".join(lines) + "\n"


def write_diff_markdown(path: str | Path, diff: ReportDiff, **kwargs: str) -> None:
    Path(path).write_text(render_diff_markdown(diff, **kwargs), encoding="utf-8")


def _row(delta: CaseDelta) -> str:
    cells = [
        f"`{delta.scenario}`",
        delta.target,
        _side(delta.base),
        _side(delta.head),
        "; ".join(delta.what),
    ]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _escape(text: str) -> str:
    """One Markdown line: no line breaks, no raw HTML from a message."""
    return " ".join(text.split()).replace("<", "&lt;")


def _side(side: CaseSide | None) -> str:
    if side is None:
        return "—"
    verdict = side.verdict or "-"
    checks = f" ({', '.join(side.failed_checks)})" if side.failed_checks else ""
    return f"{_MARKS.get(verdict, '')} {verdict}{checks} `{side.outcome}`".strip()


def _n(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"
