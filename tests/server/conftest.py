"""Fixtures for the fault server tests: one server per test, stopped afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.server import FaultServer


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer() as srv:
        yield srv
