"""The import contract (pyproject.toml ``[tool.importlinter]``) holds and can fail.

``ci/test`` runs ``lint-imports``; these tests keep that wiring and prove the contract is
live: the same config over a copy of the package with one upward import must break.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(ROOT / "pyproject.toml")],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_ci_test_runs_the_import_contract_and_fails_on_it() -> None:
    script = (ROOT / "ci" / "test").read_text()
    assert ".venv/bin/lint-imports" in script
    assert "status=1" in script.split("lint-imports", 1)[1].split("run_pytest", 1)[0]


@pytest.mark.timeout(150)
def test_the_package_keeps_the_import_contract() -> None:
    proc = lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "0 broken" in proc.stdout


@pytest.mark.timeout(150)
@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("faults/base.py", "import harness.runner", "docs/architecture.md layers BROKEN"),
        ("server/timeline.py", "import harness.client.errors", "meet only on the wire BROKEN"),
        ("outcome.py", "import harness.relay", "does not run network faults BROKEN"),
    ],
)
def test_an_import_against_the_layers_breaks_the_contract(
    tmp_path: Path, module: str, line: str, contract: str
) -> None:
    shutil.copytree(ROOT / "harness", tmp_path / "harness", ignore=shutil.ignore_patterns("*.pyc"))
    path = tmp_path / "harness" / module
    path.write_text(path.read_text() + f"\n{line}  # noqa\n")
    proc = lint_imports(tmp_path)
    assert proc.returncode == 1
    assert contract in proc.stdout
