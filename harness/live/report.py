"""Reports of a live-tier run: a rich console table, JSON, JUnit XML and Markdown.

Minimal writers of the live tier's own (the scenario runner's ``harness/report/``
renders scenario x target outcomes, a different shape). Every string is passed through
the run's :class:`~harness.live.redact.Redactor` once more on the way out, so a report
cannot carry a secret even if a result somehow did.

Not here: running the tier (``session``, ``dry_run``).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from rich.console import Console
from rich.table import Table

from harness.live.redact import Redactor
from harness.live.session import CaseResult, LiveRun

#: The console shows the start of each case's details; the files carry all of it.
CONSOLE_DETAIL_CHARS = 160

__all__ = [
    "render_console",
    "to_junit",
    "to_markdown",
    "write_json",
    "write_junit",
    "write_markdown",
]


def render_console(run: LiveRun, console: Console, *, redactor: Redactor) -> None:
    """A table of cases: verdict, expectation, elapsed time and what was found."""
    r = redactor.redact
    table = Table(
        title=r(
            f"live tier ({run.mode}): {run.model} at {run.base_url}, "
            f"through {', '.join(run.targets)}"
        )
    )
    table.add_column("case", no_wrap=True)
    table.add_column("result")
    table.add_column("expected")
    table.add_column("elapsed", justify="right", no_wrap=True)
    table.add_column("details", overflow="fold")
    for case in run.cases:
        verdict = _result(case, markup=True)
        expected = _expected(case)
        mark = "" if case.as_expected else " [bold red]UNEXPECTED[/]"
        table.add_row(
            r(case.name),
            verdict + mark,
            expected,
            _elapsed(case),
            _escape(_shorten(r(case.summary()), CONSOLE_DETAIL_CHARS)),
        )
    console.print(table)
    total = len(run.cases)
    good = sum(c.as_expected and not c.skipped for c in run.cases)
    skipped = sum(c.skipped for c in run.cases)
    colour = "green" if run.ok else "red"
    console.print(
        f"[{colour}]{good}/{total - skipped} cases as expected[/] in {run.elapsed_s:.2f} s"
        + (f" [dim]({skipped} skipped: target not available here)[/]" if skipped else "")
    )


def write_json(run: LiveRun, path: str | Path, *, redactor: Redactor) -> None:
    text = json.dumps(run.to_dict(), indent=2, ensure_ascii=False)
    Path(path).write_text(redactor.redact(text) + "\n", encoding="utf-8")


def to_junit(run: LiveRun, *, redactor: Redactor) -> str:
    """JUnit XML: one testcase per case; a case not as expected is a ``failure``."""
    r = redactor.redact
    suite = ET.Element(
        "testsuite",
        name=f"live-{run.mode}",
        tests=str(len(run.cases)),
        failures=str(sum(not c.as_expected for c in run.cases)),
        time=f"{run.elapsed_s:.3f}",
    )
    for case in run.cases:
        tc = ET.SubElement(
            suite,
            "testcase",
            classname=f"live.{run.mode}",
            name=r(case.name),
            time=f"{case.elapsed_s or 0:.3f}",
        )
        if case.skipped:
            ET.SubElement(tc, "skipped", message=r(case.summary())[:500])
        elif not case.as_expected:
            failure = ET.SubElement(tc, "failure", message=r(case.summary())[:500])
            failure.text = r(json.dumps(case.to_dict(), indent=2, ensure_ascii=False))
        else:
            out = ET.SubElement(tc, "system-out")
            out.text = r(case.summary())
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


def write_junit(run: LiveRun, path: str | Path, *, redactor: Redactor) -> None:
    Path(path).write_text(to_junit(run, redactor=redactor) + "\n", encoding="utf-8")


def to_markdown(run: LiveRun, *, redactor: Redactor) -> str:
    r = redactor.redact
    status = "PASS" if run.ok else "FAIL"
    lines = [
        f"## Live tier ({run.mode}): {status}",
        "",
        r(
            f"Model `{run.model}` at `{run.base_url}` through {', '.join(run.targets)}, "
            f"{len(run.cases)} cases in {run.elapsed_s:.2f} s."
        ),
        "",
        "| case | result | expected | elapsed | details |",
        "|---|---|---|---|---|",
    ]
    for case in run.cases:
        result = _result(case, markup=False) + ("" if case.as_expected else " **UNEXPECTED**")
        lines.append(
            f"| {_cell(r(case.name))} | {result} | {_cell(_expected(case))} "
            f"| {_elapsed(case)} | {_cell(r(case.summary()))} |"
        )
    return "\n".join(lines) + "\n"


def write_markdown(run: LiveRun, path: str | Path, *, redactor: Redactor) -> None:
    Path(path).write_text(to_markdown(run, redactor=redactor), encoding="utf-8")


def _result(case: CaseResult, *, markup: bool) -> str:
    label = "skipped" if case.skipped else ("ok" if case.ok else "failed")
    if not markup:
        return label
    style = "dim" if case.skipped else ("green" if case.ok else "red")
    return f"[{style}]{label}[/]"


def _elapsed(case: CaseResult) -> str:
    return "-" if case.elapsed_s is None else f"{case.elapsed_s:.2f} s"


def _expected(case: CaseResult) -> str:
    if case.expect.ok:
        return "ok"
    names = ", ".join(case.expect.findings)
    return f"failed ({names})" if names else "failed"


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _escape(text: str) -> str:
    return text.replace("[", r"\[")


def _cell(text: str) -> str:
    return " ".join(text.replace("|", r"\|").split())
