"""The hermes driver's scratch directories: a child killed at its case's ceiling never
removes its HERMES_HOME, so the next child removes the directories of children that are
gone (they piled up by the thousand in /tmp before)."""

from __future__ import annotations

import os
import subprocess
import sys

from harness.targets.hermes.in_venv.hermes_driver import main as driver


def test_a_new_child_removes_the_scratch_of_gone_children_and_keeps_live_ones(tmp_path):
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    dead = tmp_path / f"{driver.SCRATCH_PREFIX}{int(gone.stdout)}"
    (dead / "hermes-home-x").mkdir(parents=True)
    live = tmp_path / f"{driver.SCRATCH_PREFIX}{os.getppid()}"  # pytest's parent: alive
    live.mkdir()
    other = tmp_path / "someone-elses-dir"
    other.mkdir()

    mine = driver._own_scratch(str(tmp_path))

    assert mine == str(tmp_path / f"{driver.SCRATCH_PREFIX}{os.getpid()}")
    assert os.path.isdir(mine)
    assert not dead.exists()
    assert live.exists() and other.exists()
