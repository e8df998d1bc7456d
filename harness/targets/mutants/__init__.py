"""The mutant stacks (``-t mutant:NAME``): the reference client with one known bug put
back. The table of mutants and the invariant checks are :mod:`.table`; the wrong seams
themselves are :mod:`.seams` (imported only when a mutant stack is built).

Not here: running the catalog against them (``harness.mutants_cli``).
"""

# the package's names are the module's: one list, its ``__all__``
from harness.targets.mutants.table import *  # noqa: F403
from harness.targets.mutants.table import __all__  # noqa: F401
