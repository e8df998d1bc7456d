"""The mutant stacks (``-t mutant:NAME``): the reference client with one known bug put
back. The table of mutants and the invariant checks are :mod:`.table`; the wrong seams
themselves are :mod:`.seams` (imported only when a mutant stack is built).

Not here: running the catalog against them (``harness.mutants_cli``).
"""

from harness.targets.mutants.table import (
    BASELINE_TARGET,
    MUTANT_TARGETS,
    MUTANTS,
    POLL_INTERVAL_S,
    DisabledDeadlineShown,
    InvariantViolation,
    KeepaliveNotSet,
    Mutant,
    StackTarget,
    load_mutant_target,
    mutant_components,
)

__all__ = [
    "BASELINE_TARGET",
    "MUTANTS",
    "MUTANT_TARGETS",
    "POLL_INTERVAL_S",
    "DisabledDeadlineShown",
    "InvariantViolation",
    "KeepaliveNotSet",
    "Mutant",
    "StackTarget",
    "load_mutant_target",
    "mutant_components",
]
