"""Fixtures for the reference client's tests: a fault server per test and fast settings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.client import ClientSettings
from harness.server import FaultServer

from .support import FAST


@pytest.fixture
def fault_server() -> Iterator[FaultServer]:
    with FaultServer() as srv:
        yield srv


@pytest.fixture
def fast() -> ClientSettings:
    return FAST
