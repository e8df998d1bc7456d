"""Fixtures shared by the target tests."""

from __future__ import annotations

import pytest

from harness.targets.hermes import unavailable_reason
from tests.targets.ci_required import skip_or_fail


@pytest.fixture(scope="module")
def hermes_ready() -> None:
    """Skip where hermes-agent is not installed; fail instead on CI, where its tier must run."""
    skip_or_fail("hermes", unavailable_reason())
