"""The CI files the README names stay in step with each other."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_installed_workflow_is_the_copy_ci_github_keeps() -> None:
    # GitHub only runs .github/workflows/; ci/github/ is the documented source. Two
    # copies can drift, so any edit must land in both.
    source = ROOT / "ci" / "github" / "transport-gate.yml"
    installed = ROOT / ".github" / "workflows" / "transport-gate.yml"
    assert installed.read_bytes() == source.read_bytes()
