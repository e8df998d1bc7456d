"""HARNESS_HERMES_SPEC: ci/setup's hermes step builds the venv from a pip spec or a source
checkout, stamped so that a new commit or an uncommitted edit reinstalls it; and the
hermes-agent workflow runs the catalog against the pull request's own checkout.

The step runs for real in bash, with ``tool_venv`` replaced by a recorder (a real
install would take minutes and rebuild the shared venv).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETUP = ROOT / "ci" / "setup"
WORKFLOW = ROOT / "ci" / "github" / "hermes-gate.yml"

pytestmark = pytest.mark.skipif(not shutil.which("git"), reason="needs git")


def _hermes_step() -> str:
    text = SETUP.read_text()
    match = re.search(r"^# hermes-agent, only for the hermes target.*?^fi$", text, re.S | re.M)
    assert match, "ci/setup has no hermes step"
    return match.group(0)


def _run_step(spec: str | None) -> tuple[str, str, str]:
    """(dir, pip spec, stamp) the step hands to its hermes_venv job."""
    env_line = "" if spec is None else f"HARNESS_HERMES_SPEC={spec!r}\n"
    script = (
        "set -euo pipefail\nHERMES_VERSION=0.19.0\n"
        "is_current() { return 1; }\nensure_uv() { :; }\n"
        'start_job() { printf "%s\\n%s\\n%s\\n" "$3" "$5" "$4"; }\n'
        f"{env_line}{_hermes_step()}\n"
    )
    out = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=30, check=True, cwd=ROOT
    ).stdout.splitlines()
    return out[0], out[1], out[2]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", *args],
        check=True,
        capture_output=True,
        timeout=30,
    )


@pytest.mark.timeout(60)
def test_default_is_the_released_hermes_stamped_with_its_version_and_deps():
    venv, pip, stamp = _run_step(None)
    assert (venv, pip) == (".cache/hermes-venv", "hermes-agent==0.19.0")
    assert re.fullmatch(r"0\.19\.0 deps:[0-9a-f]{12}", stamp)


@pytest.mark.timeout(60)
def test_a_pip_spec_is_installed_and_stamped_as_given():
    _, pip, stamp = _run_step("hermes-agent==0.20.0")
    assert pip == "hermes-agent==0.20.0" and stamp.startswith("hermes-agent==0.20.0 deps:")


@pytest.mark.timeout(60)
def test_a_checkout_is_stamped_by_commit_and_uncommitted_changes(tmp_path):
    repo = tmp_path / "hermes-agent"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "run_agent.py").write_text("x = 1\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    _, pip, first = _run_step(str(repo))
    assert pip == str(repo)
    assert _run_step(str(repo))[2] == first  # nothing changed: no reinstall
    (repo / "run_agent.py").write_text("x = 2\n")
    edited = _run_step(str(repo))[2]
    assert edited != first  # an uncommitted edit reinstalls
    _git(repo, "commit", "-q", "-am", "two")
    assert _run_step(str(repo))[2] not in (first, edited)  # so does a new commit


def test_the_workflow_runs_base_and_head_hermes_and_posts_their_diff():
    # The workflow is two steps of the harness's own action (action.yml, whose steps
    # tests/test_action.py runs): the base checkout built into its own venv, then the
    # pull request's, diffed against the base's JSON (summary, comment, gate).
    text = WORKFLOW.read_text()
    assert text.count("uses: ./harness") == 2
    assert "hermes-spec: ${{ github.workspace }}/hermes-agent" in text
    assert "hermes-spec: ${{ github.workspace }}/hermes-base" in text
    assert "ref: ${{ github.event.pull_request.base.sha }}" in text
    assert "HARNESS_HERMES_VENV: .cache/hermes-base-venv" in text
    assert "hermes-base-venv/bin/python" in text  # the base run uses the base's build
    assert "fail-on: never" in text  # the base's own mismatches do not gate
    assert "base-json: base-reports/harness.json" in text
    action = (ROOT / "action.yml").read_text()
    assert "HARNESS_HERMES_SPEC" in action and "report diff" in action
    assert "GITHUB_STEP_SUMMARY" in action and "gh pr comment" in action
