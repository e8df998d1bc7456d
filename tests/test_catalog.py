"""The catalog as tests: one test per scenario x target, at a fast time scale.

All selected cases run once, in parallel (``run_cases``), in a module fixture; each test
then asserts its own case (and, for the reference stack, that its contract verdict is
pass or safe: the witness that every contract can be met). So ``-k chat_mid_stream_stall`` runs just that case, and the
whole catalog costs one parallel run instead of 70 sequential child processes.

Under pytest-xdist every worker collects every item, so the fixture would run the whole
catalog once per worker: the root conftest's ``XDIST_GROUPS`` (with ``--dist loadgroup``,
as ``ci/test`` runs it) sends all catalog cases to one worker, which runs them once.
"""

from __future__ import annotations

import pytest

from harness.runner import (
    DEFAULT_JOBS,
    DEFAULT_TARGETS,
    DEFAULT_TIME_SCALE,
    RunSettings,
    plan,
    run_cases,
)
from harness.scenario import load_catalog

# The main job's time scale: at 0.02 (100 ms first-byte deadlines) a pytest run at twice
# the cores in workers starved cases past their deadlines (rst_before_response seen as
# FirstByteTimeout after 0.23 s); `harness run` passes the whole catalog at this one.
TIME_SCALE = DEFAULT_TIME_SCALE
JOBS = DEFAULT_JOBS  # cases mostly wait; see harness.runner.DEFAULT_JOBS

CASES = plan(load_catalog(), DEFAULT_TARGETS)
IDS = [f"{s.name}[{t}]" for s, t in CASES]


@pytest.fixture(scope="module")
def catalog_results(request):
    wanted = {
        item.callspec.id
        for item in request.session.items
        if getattr(item, "originalname", "") == "test_catalog_case" and hasattr(item, "callspec")
    }
    cases = [case for case, case_id in zip(CASES, IDS, strict=True) if case_id in wanted]
    results = run_cases(
        cases, settings=RunSettings(time_scale=TIME_SCALE, jobs=JOBS, keep_timeline=False)
    )
    return {f"{r.scenario}[{r.target}]": r for r in results}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("case_id", IDS, ids=IDS)
def test_catalog_case(case_id, catalog_results):
    result = catalog_results[case_id]
    assert result.matched, (
        f"expected {result.expected}, got {result.outcome.label} "
        f"(requests {result.requests}/{result.max_requests}): {result.message}"
    )
    if result.target == "reference":
        assert result.leaks is not None and result.leaks.total == 0, f"leaks: {result.leaks}"
        # The reference stack is every contract's witness: no contract asks what no
        # client can do (a case that did not run here witnesses nothing).
        if result.outcome.kind != "skipped":
            assert result.verdict in ("pass", "safe"), (
                f"the reference stack fails its own contract: {result.verdict} "
                f"{', '.join(result.failed_checks)}: {result.message}"
            )
