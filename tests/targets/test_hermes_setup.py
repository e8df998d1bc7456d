"""ci/setup's hermes venv for real: a source checkout is built from a copy outside its
tree (nothing written into it), so a second ci/setup with the same checkout does not
reinstall it; the packages hermes would install during a run are installed first.

The checkout is a tiny package with hermes's top-level ``run_agent`` module (a real
hermes-agent install from source takes minutes and would rebuild the shared venv);
``HARNESS_SETUP_ONLY_HERMES=1`` and ``HARNESS_HERMES_VENV`` keep the run to a scratch
venv. It needs the installer ci/setup uses (uv, or pip) and its package cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.environment import scrubbed

ROOT = Path(__file__).resolve().parents[2]
SETUP = ROOT / "ci" / "setup"

pytestmark = pytest.mark.skipif(not shutil.which("git"), reason="needs git")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", *args],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout


def _checkout(path: Path) -> Path:
    path.mkdir()
    (path / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "hermes-agent"\nversion = "0.0.1"\n'
        '[tool.setuptools]\npy-modules = ["run_agent"]\n'
    )
    (path / "run_agent.py").write_text("VERSION = 'checkout'\n")
    _git(path, "init", "-q")
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "one")
    return path


def _setup(checkout: Path, venv: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **scrubbed(os.environ),
        "PYTHON": sys.executable,
        "HARNESS_SETUP_ONLY_HERMES": "1",
        "HARNESS_HERMES_SPEC": str(checkout),
        "HARNESS_HERMES_VENV": str(venv),
    }
    return subprocess.run(
        ["bash", str(SETUP)], env=env, capture_output=True, text=True, timeout=400, cwd=ROOT
    )


@pytest.mark.timeout(900)
def test_a_checkout_is_built_outside_its_tree_and_not_reinstalled(tmp_path):
    checkout = _checkout(tmp_path / "hermes-agent")
    venv = tmp_path / "hermes-venv"
    first = _setup(checkout, venv)
    assert first.returncode == 0, first.stderr
    assert f"creating {venv} ({checkout})" in first.stderr
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-I", "-c", "import run_agent; print(run_agent.VERSION)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.strip() == "checkout"
    # nothing was written into the checkout: no build/, no egg-info, a clean status
    assert sorted(p.name for p in checkout.iterdir()) == [".git", "pyproject.toml", "run_agent.py"]
    assert _git(checkout, "status", "--porcelain") == ""
    # the patch for hermes+guard does not apply to this package: said, not fatal
    assert "does not apply to this hermes" in first.stderr
    marker = venv / "marker"
    marker.write_text("kept")
    second = _setup(checkout, venv)
    assert second.returncode == 0, second.stderr
    assert f"creating {venv}" not in second.stderr
    assert marker.exists()  # the same venv: not rebuilt
