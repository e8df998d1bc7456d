"""``harness repro``: a standalone directory whose one pytest file fails on the bare SDK
and passes on the reference stack, using only the installed plugin."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import EXIT_OK, main
from harness.paths import CATALOG_DIR

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = "chat_truncated_no_terminal"


def _pytest_in(directory: Path) -> subprocess.CompletedProcess[str]:
    # the directory is its own rootdir (its pytest.ini): nothing of this repository's
    # tests or conftest is loaded, only the installed package's plugin
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
    )


def test_the_repro_fails_on_the_bare_sdk_and_says_why(tmp_path, capsys):
    out = tmp_path / "repro"
    assert main(["repro", SCENARIO, "-t", "openai-sdk", "--out", str(out)]) == EXIT_OK
    files = sorted(p.name for p in out.iterdir())
    assert files == ["README.md", "pytest.ini", "scenarios", f"test_{SCENARIO}.py"]
    readme = (out / "README.md").read_text()
    assert "python -m pytest -q" in readme and "truncated_as_complete" in readme
    run = _pytest_in(out)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "truncated_as_complete" in run.stdout and "honest_reply" in run.stdout


def test_the_same_repro_passes_on_the_reference_stack_from_a_toml_file(tmp_path):
    source = tmp_path / f"{SCENARIO}.toml"
    shutil.copy(CATALOG_DIR / f"{SCENARIO}.toml", source)
    out = tmp_path / "repro"
    assert main(["repro", str(source), "-t", "reference", "--out", str(out)]) == EXIT_OK
    run = _pytest_in(out)
    assert run.returncode == 0, run.stdout + run.stderr
