"""No module outside ``harness/apis/`` switches on an API's name.

Behaviour that differs per API is a call into the API's module (``api_for(name)``), so
a fourth API cannot fall into another API's branch. This scans the source for the
shapes such a branch takes: a comparison with an API name, a membership test against
a tuple of them, a dict keyed by them.
"""

from __future__ import annotations

import re
from pathlib import Path

from harness.apis import APIS

ROOT = Path(__file__).resolve().parents[2] / "harness"
_NAME = "|".join(APIS)
BRANCH = re.compile(
    rf'(==|!=) *"({_NAME})"'
    rf'|"({_NAME})" *(==|!=|in )'
    rf'|in \("({_NAME})"'
    rf'|\{{ *"({_NAME})":'
    rf'|^\s*"({_NAME})": '
)
#: A request body's ``messages`` field is a field, not the API's name.
FIELD = re.compile(r'"messages": *\[')
#: hermes's driver runs in hermes's own interpreter and imports nothing of harness: its
#: table translates a job's API name into hermes's ``api_mode`` (an unknown one raises).
EXEMPT = {"targets/hermes/in_venv/hermes_driver/spec.py"}


def test_no_string_branch_on_an_api_name_outside_harness_apis() -> None:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("apis/") or rel in EXEMPT:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if BRANCH.search(line) and not FIELD.search(line):
                found.append(f"harness/{rel}:{n}: {line.strip()}")
    assert found == [], "call the API's module (harness.apis.api_for) instead:\n" + "\n".join(found)
