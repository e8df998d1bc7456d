"""A non-editable install works: build the wheel, install it into a fresh virtualenv and
run ``harness list`` and one scenario from another directory.

The wheel is built from a copy of the sources (no ``build/`` or ``*.egg-info`` left in
the tree) with pip's build isolation (setuptools from PyPI, pip's cache reused). The
fresh venv gets the wheel with ``--no-deps``; its dependencies come from the test's own
venv through a ``.pth`` path entry, which puts that site-packages on ``sys.path``
without running its ``.pth`` files -- so the shared editable install of this project is
*not* active there and ``harness`` can only come from the wheel (checked).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def _run(*argv: str | Path, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "harness", src / "harness", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    proc = _run(
        sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp / "dist", src, cwd=tmp
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (built,) = (tmp / "dist").glob("*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("venv") / "v"
    proc = _run(sys.executable, "-m", "venv", "--without-pip", root, cwd=root.parent)
    assert proc.returncode == 0, proc.stderr
    python = root / "bin" / "python"
    purelib = _run(
        python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=root
    ).stdout.strip()
    Path(purelib, "_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    proc = _run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "--no-deps",
        "-q",
        wheel,
        cwd=root,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root


def test_the_wheel_carries_every_data_file_of_the_package(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    source = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "harness").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".md")
    }
    assert source - names == set()
    assert any(n.startswith("harness/catalog/") and n.endswith(".toml") for n in names)


def test_the_installed_harness_lists_the_catalog_and_runs_a_scenario_anywhere(venv, tmp_path):
    harness = venv / "bin" / "harness"
    where = _run(
        venv / "bin" / "python", "-c", "import harness; print(harness.__file__)", cwd=tmp_path
    )
    assert where.stdout.strip().startswith(str(venv)), where  # the wheel, not the editable tree
    listed = _run(harness, "list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    catalog = len(list((ROOT / "harness" / "catalog").glob("*.toml")))
    assert listed.stdout.strip().endswith(f"{catalog} scenarios")
    ran = _run(
        harness,
        "run",
        "chat_healthy_stream",
        "-t",
        "reference",
        "--quiet",
        "--json",
        tmp_path / "r.json",
        cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "1/1 cases as expected" in ran.stdout
    assert (tmp_path / "r.json").stat().st_size > 0
