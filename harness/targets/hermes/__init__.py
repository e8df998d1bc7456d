"""``-t hermes``: hermes-agent as a target. The harness's side is :mod:`.target` (the
target class, the one-off driver run for tests); what runs inside hermes's own venv is
``in_venv/`` (the stdlib-only ``hermes_driver`` package, no harness import).
"""

# the package's names are the module's: one list, its ``__all__``
from harness.targets.hermes.target import *  # noqa: F403
from harness.targets.hermes.target import __all__  # noqa: F401
