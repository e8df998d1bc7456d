"""JUnit XML: one ``testsuite`` per target, one ``testcase`` per scenario.

A mismatch is a ``<failure>`` whose message says expected vs actual; the case's
latency, requests and leaks go to ``<system-out>`` so CI UIs show them.

The contract verdict is a ``<property name="verdict">`` (and ``failed_checks``) of each
testcase and the first line of its ``<system-out>``; a failing verdict also writes its
failed checks to ``<system-err>``. It never adds a ``<failure>``: the expectation is the
regression gate, so a target known to fail a check stays green until it changes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.report import common

__all__ = ["render_junit", "write_junit"]


def render_junit(results: Sequence[Any]) -> str:
    root = ET.Element("testsuites", name="transport-harness")
    targets = list(dict.fromkeys(r.target for r in results))
    for target in targets:
        cases = [r for r in results if r.target == target]
        suite = ET.SubElement(
            root,
            "testsuite",
            name=f"transport.{target}",
            tests=str(len(cases)),
            failures=str(sum(1 for r in cases if not r.matched)),
            skipped=str(sum(1 for r in cases if r.matched and not common.ran(r))),
            errors="0",
            time=f"{sum(r.elapsed_s or 0 for r in cases):.3f}",
        )
        for r in cases:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"transport.{target}",
                name=r.scenario,
                time=f"{r.elapsed_s or 0:.3f}",
            )
            v = common.verdict(r)
            if v is not None:
                props = ET.SubElement(case, "properties")
                ET.SubElement(props, "property", name="verdict", value=v)
                ET.SubElement(
                    props, "property", name="failed_checks", value=",".join(common.failed_checks(r))
                )
                if getattr(r, "flaky", False):
                    ET.SubElement(props, "property", name="flaky", value=common.fmt_repeats(r))
            if r.matched and not common.ran(r):
                ET.SubElement(
                    case, "skipped", message=f"{r.outcome.kind.replace('_', ' ')}: {r.message}"
                )
            if not r.matched:
                fail = ET.SubElement(
                    case,
                    "failure",
                    message=f"expected {r.expected}, got {r.outcome.label}"
                    + (f" (verdict {common.fmt_verdict(r)})" if v is not None else ""),
                    type="OutcomeMismatch",
                )
                fail.text = r.message
            out = ET.SubElement(case, "system-out")
            out.text = (
                (f"verdict: {common.fmt_verdict(r)}\n" if v is not None else "")
                + f"{r.summary}\nactual: {r.outcome.label}\nlatency: {common.fmt_seconds(r.latency_s)}\n"
                f"requests: {r.requests} (client: {r.attempts}, after the call: "
                f"{getattr(r, 'late_requests', None)})\nleaks: {common.fmt_leaks(r)}\n{r.message}"
                + "".join(f"\nevidence: {line}" for line in common.evidence_lines(r))
                + (f"\ncause: {common.fmt_cause(r)}" if common.fmt_cause(r) else "")
            )
            if v == "fail":
                err = ET.SubElement(case, "system-err")
                err.text = (
                    f"verdict fail: failed checks {', '.join(common.failed_checks(r)) or '-'}"
                )
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(path: str | Path, results: Sequence[Any]) -> None:
    Path(path).write_text(render_junit(results), encoding="utf-8")
