"""The one rule for a target that cannot run here: skip locally, fail where CI must run it.

Which targets CI must run is ``harness.targets.required_in_ci`` (every target in CI, the
opt-in ones only with ``HARNESS_EXTRA_TARGETS=1``); the tests ask it through these two
helpers and never decide it themselves.
"""

from __future__ import annotations

import pytest

from harness.environment import read_environment
from harness.targets import required_in_ci

__all__ = ["fail_if_required", "skip_or_fail"]


def fail_if_required(target: str, reason: str | None) -> None:
    """Fail the running test when ``target`` cannot run (``reason``) but CI requires it;
    return otherwise (the caller leaves the target out)."""
    if reason is None:
        return
    env = read_environment()
    if required_in_ci(target, ci=env.ci, extra_targets=env.extra_targets):
        pytest.fail(f"{target} must run in CI: {reason}", pytrace=False)


def skip_or_fail(target: str, reason: str | None) -> None:
    """Skip the running test when ``target`` cannot run (``reason``), or fail it where CI
    requires the target; no-op when ``reason`` is None (it can run)."""
    fail_if_required(target, reason)
    if reason is not None:
        pytest.skip(reason)
