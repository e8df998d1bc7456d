"""The mutant registry the target loader uses: ``mutant:<name>`` -> a target class.

``harness.targets.load_target`` resolves every ``mutant:`` name here. The mutants
themselves (one known bug each, and the invariant checks) live in
:mod:`harness.targets.mutants`; ``harness mutants`` is :mod:`harness.mutants_cli`.
"""

from __future__ import annotations

from harness.targets.mutants import BASELINE_TARGET, MUTANTS, load_mutant_target

__all__ = ["BASELINE_TARGET", "MUTANTS", "load_mutant_target"]
