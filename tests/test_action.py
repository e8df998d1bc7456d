"""The reusable GitHub Action (``action.yml``): its YAML parsed and each ``run:`` step
executed as GitHub runs it (``bash --noprofile --norc -eo pipefail``, the step's ``env:``
with the inputs substituted, its own ``GITHUB_OUTPUT``), on a tiny run of two scenarios
against the reference target, in a temp dir. ``uses:`` steps are checked, not run: the
artifact upload must find the JSON and JUnit reports where it looks."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
SCENARIOS = "chat_fin_mid_stream chat_mid_stream_stall"
EXPRESSION = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")
FAKE_GH = '#!/bin/sh\nprintf "%s\\n" "$@" > "$GH_CALLS"\n'


def run_action(
    tmp: Path,
    inputs: Mapping[str, str],
    github: Mapping[str, str] | None = None,
    *,
    action: Mapping[str, Any] = ACTION,
) -> dict[str, Any]:
    """Every step in order, as GitHub would (a failed step skips the rest unless
    ``if: always()``); returns the steps' outputs, exit statuses and the job summary."""
    given = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
    unknown = set(inputs) - set(given)
    assert not unknown, f"not inputs of action.yml: {unknown}"
    context = {
        "github.action_path": str(ROOT),
        "github.workspace": str(tmp),
        "github.token": "token-for-the-test",
        "github.event_name": "push",
        "github.event.pull_request.number": "",
        "github.repository": "owner/client",
        **(github or {}),
    }
    steps: dict[str, dict[str, str]] = {}

    def value(text: str) -> str:
        def one(match: re.Match[str]) -> str:
            expr = match.group(1)
            if expr.startswith("inputs."):
                return value(str({**given, **inputs}[expr[len("inputs.") :]]))
            if expr.startswith("steps."):
                step, _, key = expr[len("steps.") :].partition(".outputs.")
                return steps.get(step, {}).get(key, "")
            assert expr in context, f"an expression the test does not know: {expr}"
            return context[expr]

        return EXPRESSION.sub(one, text)

    bin_dir = tmp / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "gh").write_text(FAKE_GH)
    (bin_dir / "gh").chmod(0o755)
    summary = tmp / "step-summary.md"
    statuses: list[tuple[str, int]] = []
    failed = False
    for i, step in enumerate(action["runs"]["steps"]):
        condition = step.get("if")
        assert condition in (None, "always()"), f"decide {condition!r} in the script"
        if failed and condition is None:
            statuses.append((step["name"], -1))  # skipped
            continue
        if "uses" in step:
            assert step["uses"] == "actions/upload-artifact@v4"
            where = tmp / value(step["with"]["path"])
            assert (where / "harness.json").is_file() and (where / "harness.xml").is_file()
            continue
        assert step["shell"] == "bash"
        output = tmp / f"output-{i}"
        output.touch()
        env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
        env.pop("PYTHONPATH", None)  # the action sets its own: the checkout it runs from
        env.update({k: value(str(v)) for k, v in (step.get("env") or {}).items()})
        env.update(
            GITHUB_OUTPUT=str(output),
            GITHUB_STEP_SUMMARY=str(summary),
            GITHUB_WORKSPACE=str(tmp),
            GH_CALLS=str(tmp / "gh-calls"),
            PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        )
        script = tmp / f"step-{i}.sh"
        script.write_text(step["run"])
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        statuses.append((step["name"], done.returncode))
        lines = output.read_text().splitlines()
        steps[step.get("id", f"step{i}")] = dict(line.split("=", 1) for line in lines)
        failed = failed or done.returncode != 0
    return {
        "steps": steps,
        "statuses": statuses,
        "summary": summary.read_text() if summary.exists() else "",
        "gh": (tmp / "gh-calls").read_text().split("\n") if (tmp / "gh-calls").exists() else None,
    }


def test_every_step_is_a_bash_run_or_the_artifact_upload_and_inputs_go_through_env():
    assert ACTION["runs"]["using"] == "composite"
    for step in ACTION["runs"]["steps"]:
        if "run" in step:
            assert "${{" not in step["run"], f"{step['name']}: an expression in the script"
    uploads = [s for s in ACTION["runs"]["steps"] if "uses" in s]
    assert [s["uses"] for s in uploads] == ["actions/upload-artifact@v4"]
    assert uploads[0]["if"] == "always()"  # a failed gate still uploads its reports


def test_the_setup_knobs_follow_the_targets(tmp_path):
    setup = next(s for s in ACTION["runs"]["steps"] if s["name"] == "Build the targets")
    action = {**ACTION, "runs": {**ACTION["runs"], "steps": [setup]}}
    knobs = tmp_path / "knobs"
    record = f"env | grep '^HARNESS_' | sort > {knobs}"
    for targets, expected in (
        ("reference", {"HARNESS_SKIP_HERMES=1", "HARNESS_EXTRA_TARGETS=0"}),
        ("hermes+guard litellm-proxy", {"HARNESS_SKIP_HERMES=0", "HARNESS_EXTRA_TARGETS=1"}),
    ):
        result = run_action(tmp_path, {"targets": targets, "setup": record}, action=action)
        assert result["statuses"] == [("Build the targets", 0)]
        assert expected | {"HARNESS_SKIP_OPENAI3=1"} <= set(knobs.read_text().split())


@pytest.mark.timeout(300)
def test_a_run_uploads_json_and_junit_summarizes_and_a_diff_against_a_base_gates(tmp_path):
    inputs = {"targets": "reference", "scenarios": SCENARIOS, "args": "--jobs 2", "setup": ""}
    first = run_action(tmp_path / "base", {**inputs, "reports-dir": "out"})
    assert [s for s in first["statuses"] if s[1] != 0] == []
    assert first["steps"]["gate"]["status"] == "0"
    report = json.loads((tmp_path / "base" / "out" / "harness.json").read_text())
    assert sorted(r["scenario"] for r in report["results"]) == sorted(SCENARIOS.split())
    assert "chat_fin_mid_stream" in first["summary"]  # the run's own Markdown
    assert first["gh"] is None  # no base run: nothing to comment on

    # The base said every case passed its contract; this run's verdicts are worse: a
    # regression, posted as the summary and a comment, and the gate fails.
    base = tmp_path / "base.json"
    for result in report["results"]:
        result["verdict"] = "pass"
    base.write_text(json.dumps(report))
    pr = {"github.event_name": "pull_request", "github.event.pull_request.number": "7"}
    head = run_action(tmp_path / "head", {**inputs, "base-json": str(base)}, pr)
    assert head["statuses"][-1] == ("Gate", 1)
    assert head["steps"]["run"]["status"] == "0"  # its expectations held: the diff gates
    assert "transport harness: base vs this run" in head["summary"]
    assert "regress" in head["summary"].lower()
    body = tmp_path / "head" / "harness-reports" / "summary.md"
    assert head["gh"][:5] == ["pr", "comment", "7", "--repo", "owner/client"]
    assert head["gh"][5:7] == ["--body-file", str(body)]


@pytest.mark.parametrize("template", ["transport-gate.yml", "hermes-gate.yml"])
def test_the_workflow_templates_are_examples_of_the_action(template):
    workflow = yaml.safe_load((ROOT / "ci" / "github" / template).read_text())
    uses = [
        step
        for job in workflow["jobs"].values()
        for step in job["steps"]
        if step.get("uses") in ("./", "./harness")
    ]
    assert uses, f"{template} does not use action.yml"
    for step in uses:
        assert set(step["with"]) <= set(ACTION["inputs"]), step["with"]
