"""Fixtures for the reference client's tests: a fault server per test and fast settings."""

from __future__ import annotations

import pytest

from harness.client import ClientSettings
from harness.server import FaultServer

from .support import DRIVERS, FAST, USER, Driver


@pytest.fixture(scope="session", autouse=True)
def _warm_sdk() -> None:
    """One healthy call per driver and API first: the SDK's first request in a process
    imports its resource modules lazily, which on a loaded machine can take longer than
    the tests' 0.5 s first-byte deadline (and would then differ between the drivers)."""
    with FaultServer() as srv:
        for kind in DRIVERS:
            client = Driver(kind, srv.base_url, FAST.replace(first_byte_s=None))
            for api in ("chat", "responses", "messages"):
                for stream in (True, False):
                    client.complete(USER, api=api, stream=stream)
            client.close()


@pytest.fixture
def fast() -> ClientSettings:
    return FAST
