"""Fixtures shared by the target tests."""

from __future__ import annotations

import pytest

from harness.environment import read_environment
from harness.targets.hermes import unavailable_reason


@pytest.fixture(scope="module")
def hermes_ready() -> None:
    """Skip where hermes-agent is not installed; fail instead on CI, where its tier must run."""
    reason = unavailable_reason()
    if reason is not None:
        if read_environment().ci:
            pytest.fail(f"hermes tier must run in CI: {reason}")
        pytest.skip(reason)
