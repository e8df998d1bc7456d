"""``-t hermes``: hermes-agent as a target. The harness's side is :mod:`.target` (the
target class, the one-off driver run for tests); what runs inside hermes's own venv is
``in_venv/`` (the stdlib-only ``hermes_driver`` package, no harness import).
"""

from harness.targets.hermes.target import (
    DEFAULT_HERMES_PYTHON,
    DRIVER_PATH,
    HERMES_MIN_CEILING_S,
    HERMES_MIN_TIME_SCALE,
    SETTING_ENV,
    UNMAPPED_SETTINGS,
    HermesCall,
    HermesRun,
    HermesTarget,
    hermes_config,
    hermes_env,
    hermes_python,
    run_hermes,
    unavailable_reason,
)

__all__ = [
    "DEFAULT_HERMES_PYTHON",
    "DRIVER_PATH",
    "HERMES_MIN_CEILING_S",
    "HERMES_MIN_TIME_SCALE",
    "SETTING_ENV",
    "UNMAPPED_SETTINGS",
    "HermesCall",
    "HermesRun",
    "HermesTarget",
    "hermes_config",
    "hermes_env",
    "hermes_python",
    "run_hermes",
    "unavailable_reason",
]
