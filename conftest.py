"""Root pytest configuration: the test tiers and their switches.

Tiers (see DESIGN.md): unit + property and integration run by default; toxiproxy,
kernel netem and hermes run by default where their prerequisite exists and, when
``CI`` is set, FAIL instead of skipping if it is missing; ``live`` runs only with
``HERMES_LIVE_TESTS=1`` and ``OPENROUTER_API_KEY``.

Tests that exercise an SDK transport are marked ``sdk_matrix`` here by location, so
``ci/test`` can run exactly them again under openai 3.x (httpx2).

Tests that share one expensive fixture run (or a machine-wide resource) are grouped onto
one pytest-xdist worker here, by location (``XDIST_GROUPS``), with a scheduler of our own
for ``--dist loadgroup``:
pytest 9.2's structured node ids make xdist 3.8's loadgroup ignore ``xdist_group`` marks
silently (pytest-xdist#1386), and every worker then ran the whole catalog fixture itself.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from xdist.remote import Producer
    from xdist.scheduler.protocol import Scheduling

MARKERS = (
    "live: real provider round trips; needs HERMES_LIVE_TESTS=1 and OPENROUTER_API_KEY",
    "toxiproxy: needs the Toxiproxy server binary (ci/setup installs it)",
    "netem: needs root and `ip netns` (kernel dead-peer tests)",
    "hermes: needs hermes-agent in .cache/hermes-venv (ci/setup installs it)",
    "sdk_matrix: transport tests run again under every supported openai SDK line",
    "own_venv: the code under test runs in its own virtualenv, not pytest's: never sdk_matrix",
    "machinery: the runner's own bookkeeping, driven through an SDK client only as a "
    "convenience: the same code under either SDK line, never sdk_matrix",
    "slow: takes more than a few seconds",
)

#: Test paths (relative to tests/) whose tests go through an SDK transport: the client,
#: guard and catalog directories whole; of runner/, the modules that drive the reference
#: stack, the bare openai SDK or httpx (by a built-in target's name, a mutant, an import,
#: or a double that imports them). The runner's own machinery run on test doubles
#: (forking, cgroups, leaks, lineage, hostile children) is the same code under either SDK
#: line and runs once. tests/test_tiers.py checks runner/'s selection against that rule.
#: Within those modules, a test marked ``machinery`` asserts the runner's own bookkeeping
#: (child reuse, start-up throttles, result order, voids, loading a target by path) and
#: uses its SDK client as any client would serve: it runs once; the catalog's cases
#: repeat the clients themselves under openai 3.x.
SDK_MATRIX_PATHS = (
    "client/",
    "runner/test_answer_tool.py",
    "runner/test_any_target.py",
    "runner/test_call_ceiling.py",
    "runner/test_carried_cut.py",
    "runner/test_case_isolation.py",
    "runner/test_causes.py",
    "runner/test_lateness.py",
    "runner/test_leak_reading.py",
    "runner/test_not_exercised.py",
    "runner/test_retry_after_contract.py",
    "runner/test_runner.py",
    "runner/test_scheduling.py",
    "runner/test_sentinel_scenario.py",
    "runner/test_targets.py",
    "targets/test_protocol_contract.py",
    "test_catalog.py",
    "server/test_sdk.py",
    "record/test_proxy.py",
    "guard/",
)


#: Node-id prefixes (relative to the rootdir) -> the xdist group that keeps them on one
#: worker: their shared module/session fixture runs once per test session, or they
#: share a machine-wide resource and must not run at the same time.
XDIST_GROUPS = (
    # the module fixture runs every selected catalog case once, in parallel
    ("tests/test_catalog.py::", "catalog"),
    # one `harness live --dry-run` through every built-in target (tests/conftest.py)
    ("tests/live/test_targets.py::test_harness_live_dry_run_", "live-dry-run"),
    ("tests/record/test_secrets.py::test_live_dry_run_", "live-dry-run"),
    # one gateway pool (a LiteLLM proxy's cold start) for the module; its last test ends it
    ("tests/targets/test_litellm_proxy.py::", "litellm-proxy-gateway"),
    # both gateway targets' children lease from one pool, the worker's: the second takes
    # the first's warm proxy instead of a cold start of its own (~15 s of CPU)
    (
        "tests/targets/test_protocol_contract.py::test_every_child_answers_a_healthy_job_"
        "with_well_formed_messages[litellm-proxy",
        "litellm-proxy-children",
    ),
    # cleanup_stale() removes every dead run's namespaces: run concurrently, one test's
    # call takes the namespaces the other killed a child for and then looks for
    ("tests/netem/test_kernel.py::test_cleanup_stale_", "netns-cleanup"),
    ("tests/netem/test_kernel.py::test_namespaces_of_a_killed_run_", "netns-cleanup"),
)


def xdist_group_of(nodeid: str) -> str | None:
    """The group of ``nodeid`` (an ``@group`` suffix xdist may add is ignored), or None."""
    for prefix, group in XDIST_GROUPS:
        if nodeid.startswith(prefix):
            return group
    return None


@pytest.hookimpl(optionalhook=True)  # a run without xdist (-p no:xdist) must still work
def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> Scheduling | None:
    """``--dist loadgroup`` that groups by ``XDIST_GROUPS`` whatever the node ids carry."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class LocationGroupScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            group = xdist_group_of(nodeid)
            return f"group:{group}" if group is not None else super()._split_scope(nodeid)

    return LocationGroupScheduling(config, log)


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
        if rel.startswith(SDK_MATRIX_PATHS) and not any(
            item.get_closest_marker(m) for m in ("own_venv", "machinery")
        ):
            item.add_marker("sdk_matrix")
        if item.get_closest_marker("live") is not None and not env.live_enabled:
            item.add_marker(skip_live)


def pytest_collection_finish(session: pytest.Session) -> None:
    # Tests run in-process clients and fault servers with sub-second deadlines. After
    # collection a worker holds every imported module's objects; a full collection over
    # them paused the process for ~0.5 s on a loaded machine, which a 0.5 s first-byte
    # deadline then reported as the server's silence. Frozen, later collections scan only
    # what the tests allocate (the target children do the same: targets/protocol.py).
    gc.collect()
    gc.freeze()
