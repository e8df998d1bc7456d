"""Root pytest configuration: the test tiers and their switches.

Tiers (see DESIGN.md): unit + property and integration run by default; toxiproxy,
kernel netem and hermes run by default where their prerequisite exists and, when
``CI`` is set, FAIL instead of skipping if it is missing; ``live`` runs only with
``HERMES_LIVE_TESTS=1`` and ``OPENROUTER_API_KEY``.

Tests that exercise an SDK transport are marked ``sdk_matrix`` here by location, so
``ci/test`` can run exactly them again under openai 3.x (httpx2).
"""

from __future__ import annotations

import pytest

MARKERS = (
    "live: real provider round trips; needs HERMES_LIVE_TESTS=1 and OPENROUTER_API_KEY",
    "toxiproxy: needs the Toxiproxy server binary (ci/setup installs it)",
    "netem: needs root and `ip netns` (kernel dead-peer tests)",
    "hermes: needs hermes-agent in .cache/hermes-venv (ci/setup installs it)",
    "sdk_matrix: transport tests run again under every supported openai SDK line",
    "slow: takes more than a few seconds",
)

#: Test paths (relative to tests/) whose tests go through an SDK transport.
SDK_MATRIX_PATHS = (
    "client/",
    "runner/",
    "targets/test_protocol_contract.py",
    "test_catalog.py",
    "server/test_sdk.py",
    "record/test_proxy.py",
    "guard/",
)


def pytest_configure(config: pytest.Config) -> None:
    for line in MARKERS:
        config.addinivalue_line("markers", line)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from harness.environment import read_environment

    env = read_environment()
    skip_live = pytest.mark.skip(
        reason="live tier: set HERMES_LIVE_TESTS=1 and OPENROUTER_API_KEY to run real OpenRouter round trips"
    )
    for item in items:
        rel = item.nodeid.split("tests/", 1)[-1]
        if rel.startswith(SDK_MATRIX_PATHS):
            item.add_marker("sdk_matrix")
        if item.get_closest_marker("live") is not None and not env.live_enabled:
            item.add_marker(skip_live)
