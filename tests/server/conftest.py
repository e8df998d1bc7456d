"""Fixtures for the fault server tests: one server per test, stopped afterwards."""

from __future__ import annotations

import pytest

from harness.server import FaultServer


@pytest.fixture
def server(fault_server: FaultServer) -> FaultServer:
    """Each server test gets a fresh server (tests/conftest.py's ``fault_server``): they
    count requests and read timelines from the start."""
    return fault_server
