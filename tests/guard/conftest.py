"""Fixtures for the guard's tests: a fault server per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.server import FaultServer


@pytest.fixture
def fault_server() -> Iterator[FaultServer]:
    with FaultServer() as srv:
        yield srv
