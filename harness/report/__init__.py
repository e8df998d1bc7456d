"""Reports of a run: console table (rich), JSON (and shard merge), JUnit XML, Markdown,
and the one-axis timeline that ``harness explain`` prints.

Every renderer takes a list of :class:`harness.runner.CaseResult`; none runs anything.
"""

from harness.report.console import render_console, results_table
from harness.report.json_report import load_json, merge_json, write_json
from harness.report.junit import render_junit, write_junit
from harness.report.markdown import render_markdown, write_markdown
from harness.report.timeline import render_timeline, timeline_rows

__all__ = [
    "load_json",
    "merge_json",
    "render_console",
    "render_junit",
    "render_markdown",
    "render_timeline",
    "results_table",
    "timeline_rows",
    "write_json",
    "write_junit",
    "write_markdown",
]
