"""The prefixes of target names that name no registered target: each a kind of its own.

The registry (``harness.targets``) dispatches on them, and the kinds parse their names
with them; here, below both, so neither imports the other to read them.
"""

from __future__ import annotations

__all__ = ["COMMAND_PREFIX", "MUTANT_PREFIX"]

#: Names with this prefix are mutants of the reference stack (``harness.mutants``); they have
#: no expectations of their own and are judged by the ``reference`` expectation.
MUTANT_PREFIX = "mutant:"
#: ``command:PATH`` runs any program as a target (``harness.targets.clients.command``).
COMMAND_PREFIX = "command:"
