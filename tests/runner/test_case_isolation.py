"""Neighbouring cases run in parallel on reused children and shared servers: each case's
timeline holds only its own connections (issue 24: ``large_prompt_hard_ceiling`` was seen
carrying ``fail_twice_then_succeed``'s connection 3)."""

from __future__ import annotations

import pytest

from harness.runner import RunSettings, run_cases
from harness.scenario import load_catalog

#: Cases that leave pooled or closing connections behind, next to the reported pair.
NEIGHBOURS = (
    "fail_twice_then_succeed",
    "large_prompt_hard_ceiling",
    "stale_pooled_connection",
    "pooled_connection_race_fin",
    "keepalive_comments_then_content",
)


@pytest.mark.timeout(180)
def test_every_timeline_holds_only_its_own_case_connections():
    scenarios = {s.name: s for s in load_catalog() if s.name in NEIGHBOURS}
    assert sorted(scenarios) == sorted(NEIGHBOURS)
    # Twice over, so every worker's server and reused child carries one case into the next.
    cases = [
        (scenarios[n], t) for _ in range(2) for n in NEIGHBOURS for t in ("reference", "openai-sdk")
    ]
    results = run_cases(cases, settings=RunSettings(jobs=2, wait_lanes=0, idle_lanes=0))
    assert len(results) == len(cases)
    for r in results:
        accepted = {e["conn"] for e in r.timeline if e["kind"] == "accepted"}
        with_request = {e["conn"] for e in r.timeline if e.get("request") is not None}
        server_events = [e for e in r.timeline if "conn" in e]
        stray = {e["conn"] for e in server_events} - accepted - with_request
        assert not stray, (
            f"{r.scenario} [{r.target}]: connections {sorted(stray)} in its timeline were "
            f"neither accepted nor used in this case: "
            f"{[e for e in server_events if e['conn'] in stray][:4]}"
        )
