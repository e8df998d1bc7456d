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


def test_every_built_in_target_is_gated_by_a_phase_of_ci() -> None:
    # A target CI does not run can have its expectations rot unseen: each registered one
    # is either the main job's (its default targets) or one `-t NAME` phase of .ci/run.
    import re

    from harness.planning import DEFAULT_TARGETS
    from harness.targets import registered_targets

    text = (ROOT / ".ci" / "run").read_text()
    phased = set(re.findall(r"^phase .*? -t (\S+)", text, flags=re.MULTILINE))
    # the main job is the README's quickstart command, its JSON kept beside the others
    assert 'phase "main job: harness run" bash ci/harness run --json reports/ci/main.json\n' in text
    assert set(registered_targets()) - set(DEFAULT_TARGETS) - phased == set()
    # every run phase keeps its JSON report, each its own file (a later report diff's base)
    runs = re.findall(r"^phase .*? bash ci/harness run\b.*$", text, flags=re.MULTILINE)
    kept = [re.search(r"--json (reports/ci/\S+\.json)$", line) for line in runs]
    assert all(kept), runs
    assert len({m.group(1) for m in kept if m}) == len(runs)
