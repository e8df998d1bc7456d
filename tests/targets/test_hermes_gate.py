"""The hermes gate end to end, on real hermes builds: ``harness report diff`` between a
base hermes and a head hermes with a known regression names the regressed scenario and
its newly failed check and exits 1; the same build against itself (a second run: other
timings, other latencies) gives no difference at all and exits 0. And a hermes venv
that lacks what hermes would install during a run refuses to start, in one line.

The head build is the installed hermes-agent with hermes-agent#10933 put back (the
stored client kwargs mutated, so a rebuilt client gets the closed httpx client of the
one it replaces), made from the installed package's source (``hermes_builds``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.environment import scrubbed
from harness.targets.hermes import DRIVER_PATH

from .hermes_builds import hermes_variant

ROOT = Path(__file__).resolve().parents[2]
HARNESS = Path(sys.executable).with_name("harness")
#: A case the regression breaks, and one it leaves alone.
SCENARIOS = ("sequential_calls_across_rebuild", "chat_healthy_stream")

pytestmark = pytest.mark.usefixtures("hermes_ready")


def _put_back_10933(text: str) -> str:
    return text.replace("    client_kwargs = dict(client_kwargs)\n", "", 1)


def _run(out: Path, python: Path | None) -> Path:
    env = scrubbed(os.environ)
    env.pop("HARNESS_HERMES_PYTHON", None)
    if python is not None:
        env["HARNESS_HERMES_PYTHON"] = str(python)
    proc = subprocess.run(
        [str(HARNESS), "run", "-t", "hermes", *SCENARIOS, "-q", "--json", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert out.exists(), proc.stderr[-2000:]
    return out


def _diff(base: Path, head: Path, out: Path) -> tuple[int, dict, str]:
    proc = subprocess.run(
        [str(HARNESS), "report", "diff", str(base), str(head), "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    return proc.returncode, json.loads(out.read_text()), proc.stdout


@pytest.mark.timeout(1200)
def test_a_regressed_hermes_build_fails_the_diff_and_the_same_build_does_not(tmp_path):
    regressed = hermes_variant(
        tmp_path / "head-venv", edit={"agent/agent_runtime_helpers.py": _put_back_10933}
    )
    base = _run(tmp_path / "base.json", None)
    head = _run(tmp_path / "head.json", regressed)
    again = _run(tmp_path / "again.json", None)

    code, doc, text = _diff(base, head, tmp_path / "diff.json")
    assert code == 1, text
    # the Markdown in the message: what else differed, when something does
    assert [r["scenario"] for r in doc["regressions"]] == [SCENARIOS[0]], text
    (regression,) = doc["regressions"]
    assert regression["newly_failed_checks"], regression
    for check in regression["newly_failed_checks"]:
        assert f"`{check}`" in text
    assert "sequential_calls_across_rebuild" in text and "### Regressions" in text
    assert "chat_healthy_stream" not in json.dumps(doc["regressions"] + doc["fixes"])
    # the cause under it, in one summary line (hermes caught it and logged it)
    assert any("client has been closed" in c["cause"] for c in doc["causes"]), doc["causes"]

    code, doc, text = _diff(base, again, tmp_path / "self.json")
    assert code == 0, text
    assert doc["summary"] == {
        "regression": 0,
        "fix": 0,
        "change": 0,
        "variation": 0,
        "unchanged": 2,
        "cases": 2,
    }


@pytest.mark.timeout(120)
def test_a_hermes_venv_missing_what_hermes_installs_lazily_refuses_in_one_line(tmp_path):
    python = hermes_variant(tmp_path / "no-anthropic", drop=("anthropic",))
    proc = subprocess.run(
        [str(python), "-I", str(DRIVER_PATH), "--child"],
        input='{"command": "exit"}\n',
        capture_output=True,
        text=True,
        timeout=90,
    )
    (line,) = proc.stdout.splitlines()
    event = json.loads(line)
    assert event["event"] == "fatal" and event["error"] == "HermesWouldInstall"
    assert "anthropic==" in event["message"] and "run ci/setup" in event["message"]
    assert proc.returncode == 1
